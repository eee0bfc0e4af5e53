//! When to try a model call again, and how long to wait first.

use std::time::Duration;

/// Exponential backoff with full jitter, capped, honouring what the provider asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Tries in all, the first included.
    pub max_attempts: u32,
    pub base: Duration,
    pub cap: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 6,
            base: Duration::from_millis(500),
            cap: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The wait before attempt `attempt + 1` (attempts count from 1), given what the provider
    /// asked for. A provider's own `retry-after` wins, capped.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(asked) = retry_after {
            return asked.min(self.cap);
        }
        let exp = self
            .base
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
        let ceiling = exp.min(self.cap);
        // Full jitter: uniform in [ceiling/2, ceiling], so bursts of clients spread out.
        let half = ceiling / 2;
        half + half.mul_f64(jitter())
    }
}

fn jitter() -> f64 {
    let mut b = [0u8; 8];
    if getrandom::fill(&mut b).is_err() {
        return 0.5;
    }
    (u64::from_le_bytes(b) >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_stay_capped_and_follow_retry_after() {
        let p = RetryPolicy::default();
        for attempt in 1..10 {
            let d = p.delay(attempt, None);
            let ceiling = (p.base * 2u32.pow(attempt - 1)).min(p.cap);
            assert!(d >= ceiling / 2 && d <= ceiling, "attempt {attempt}: {d:?}");
        }
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(7))),
            Duration::from_secs(7)
        );
        assert_eq!(p.delay(1, Some(Duration::from_secs(700))), p.cap);
    }
}
