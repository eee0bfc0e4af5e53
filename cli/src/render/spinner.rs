//! The spinner on stderr while the run waits: what it waits for, and for how long.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// Characters of the label drawn: the line must never wrap, or `\r` no longer erases it.
const LABEL_CHARS: usize = 60;

#[derive(Debug)]
struct SpinnerState {
    /// What the run waits for now; none hides the spinner.
    label: Option<String>,
    /// The last label shown and since when: the same wait, hidden by a line printed
    /// meanwhile, keeps counting from its start.
    waiting: Option<(String, Instant)>,
    drawn: bool,
    frame: usize,
}

/// A spinner on stderr, drawn only when stderr is a terminal. Its ticker ends when the
/// spinner is dropped.
#[derive(Debug)]
pub(super) struct Spinner {
    state: Arc<Mutex<SpinnerState>>,
    enabled: bool,
    pub(super) ticker: Option<tokio::task::JoinHandle<()>>,
}

impl Spinner {
    pub(super) fn new(enabled: bool) -> Spinner {
        let state = Arc::new(Mutex::new(SpinnerState {
            label: None,
            waiting: None,
            drawn: false,
            frame: 0,
        }));
        let ticker = enabled.then(|| {
            let state = state.clone();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_millis(100));
                loop {
                    tick.tick().await;
                    let Ok(mut s) = state.lock() else { return };
                    let Some(label) = s.label.clone() else {
                        continue;
                    };
                    let since = s
                        .waiting
                        .as_ref()
                        .map_or_else(Instant::now, |(_, since)| *since);
                    s.frame = (s.frame + 1) % FRAMES.len();
                    let text = frame_text(FRAMES[s.frame], &label, since.elapsed());
                    let mut err = std::io::stderr().lock();
                    let _ = write!(err, "\r\x1b[2K{text}");
                    let _ = err.flush();
                    s.drawn = true;
                }
            })
        });
        Spinner {
            state,
            enabled,
            ticker,
        }
    }

    /// Shows what the run waits for (none: hides the spinner). A label shown before, and
    /// hidden since, goes on counting from when it was first shown.
    pub(super) fn set(&self, label: Option<&str>) {
        if !self.enabled {
            return;
        }
        if let Ok(mut s) = self.state.lock() {
            if let Some(label) = label
                && s.waiting.as_ref().is_none_or(|(was, _)| was != label)
            {
                s.waiting = Some((label.to_string(), Instant::now()));
            }
            s.label = label.map(str::to_string);
            if s.drawn {
                let mut err = std::io::stderr().lock();
                let _ = write!(err, "\r\x1b[2K");
                let _ = err.flush();
                s.drawn = false;
            }
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.set(None);
        if let Some(ticker) = self.ticker.take() {
            ticker.abort();
        }
    }
}

/// One frame: the wheel, what the run waits for (cut to fit a line) and, after the first
/// seconds, for how long.
fn frame_text(wheel: &str, label: &str, elapsed: Duration) -> String {
    let label = if label.chars().count() > LABEL_CHARS {
        let cut: String = label.chars().take(LABEL_CHARS - 1).collect();
        format!("{cut}…")
    } else {
        label.to_string()
    };
    let secs = elapsed.as_secs();
    match secs {
        0..=1 => format!("{wheel} {label}"),
        2..=59 => format!("{wheel} {label} · {secs} s"),
        _ => format!("{wheel} {label} · {} min {:02} s", secs / 60, secs % 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_says_what_it_waits_for_and_for_how_long() {
        assert_eq!(
            frame_text("⠋", "waiting for openai/gpt-4o", Duration::from_millis(900)),
            "⠋ waiting for openai/gpt-4o"
        );
        assert_eq!(
            frame_text("⠙", "execute_command make", Duration::from_secs(42)),
            "⠙ execute_command make · 42 s"
        );
        assert_eq!(
            frame_text("⠹", "waiting for m", Duration::from_secs(150)),
            "⠹ waiting for m · 2 min 30 s"
        );
        let long = frame_text("⠸", &"x".repeat(200), Duration::ZERO);
        assert_eq!(long.chars().count(), 2 + LABEL_CHARS, "{long}");
        assert!(long.ends_with('…'));
    }
}
