//! Figures for the benchmarks: percentiles and a JSON summary of samples.

use std::time::Duration;

use serde_json::{Value, json};

/// The `p` quantile (0 to 1) of `sorted`, nearest rank.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

/// `v` to three decimals, for printing.
pub fn round(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// A duration in milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// `n`, p50, p99, min, max and mean of the samples.
pub fn summary(mut samples: Vec<f64>) -> Value {
    samples.sort_by(|a, b| a.total_cmp(b));
    let mean = samples.iter().sum::<f64>() / samples.len() as f64;
    json!({
        "n": samples.len(),
        "p50": round(percentile(&samples, 0.50)),
        "p99": round(percentile(&samples, 0.99)),
        "min": round(samples[0]),
        "max": round(samples[samples.len() - 1]),
        "mean": round(mean),
    })
}
