//! Metrics in the Prometheus text format (version 0.0.4), as `GET /metrics` of coved and of
//! `cove serve` answer: counters, gauges and histograms, written by hand (the format is a
//! few lines of text; a metrics library would bring far more than it gives here).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::Duration;

/// The media type of the text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Upper bounds, in seconds, of the latency histograms' buckets.
pub const LATENCY_BUCKETS: [f64; 14] = [
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 120.0,
];

/// Label values, in the order of the family's label names.
pub type Labels = Vec<String>;

/// One histogram's counts.
#[derive(Debug, Clone, Default)]
pub struct Histogram {
    /// Per bucket of [`LATENCY_BUCKETS`], not cumulative.
    buckets: [u64; LATENCY_BUCKETS.len()],
    count: u64,
    sum: f64,
}

impl Histogram {
    /// Counts one observation.
    pub fn observe(&mut self, took: Duration) {
        let secs = took.as_secs_f64();
        if let Some(i) = LATENCY_BUCKETS.iter().position(|&le| secs <= le) {
            self.buckets[i] += 1;
        }
        self.count += 1;
        self.sum += secs;
    }
}

/// Counters and histograms keyed by their labels, safe to update from any thread.
#[derive(Debug, Default)]
pub struct Recorded {
    counters: Mutex<BTreeMap<(&'static str, Labels), f64>>,
    histograms: Mutex<BTreeMap<(&'static str, Labels), Histogram>>,
}

impl Recorded {
    /// Adds `by` to counter `name` with `labels`.
    pub fn add(&self, name: &'static str, labels: Labels, by: f64) {
        let mut counters = self.counters.lock().unwrap_or_else(|p| p.into_inner());
        *counters.entry((name, labels)).or_default() += by;
    }

    /// Counts an observation `took` of histogram `name` with `labels`.
    pub fn observe(&self, name: &'static str, labels: Labels, took: Duration) {
        let mut histograms = self.histograms.lock().unwrap_or_else(|p| p.into_inner());
        histograms.entry((name, labels)).or_default().observe(took);
    }

    /// Counter `name`'s samples.
    pub fn counter(&self, name: &str) -> Vec<(Labels, f64)> {
        let counters = self.counters.lock().unwrap_or_else(|p| p.into_inner());
        counters
            .iter()
            .filter(|((n, _), _)| *n == name)
            .map(|((_, labels), v)| (labels.clone(), *v))
            .collect()
    }

    /// Histogram `name`'s samples.
    pub fn histogram(&self, name: &str) -> Vec<(Labels, Histogram)> {
        let histograms = self.histograms.lock().unwrap_or_else(|p| p.into_inner());
        histograms
            .iter()
            .filter(|((n, _), _)| *n == name)
            .map(|((_, labels), h)| (labels.clone(), h.clone()))
            .collect()
    }
}

/// A page of metrics being written.
#[derive(Debug, Default)]
pub struct Exposition {
    text: String,
}

impl Exposition {
    /// A family of counters: `name` should end in `_total`.
    pub fn counter(&mut self, name: &str, help: &str, labels: &[&str], samples: &[(Labels, f64)]) {
        self.head(name, help, "counter");
        for (values, v) in samples {
            self.sample(name, labels, values, None, *v);
        }
    }

    /// A family of gauges.
    pub fn gauge(&mut self, name: &str, help: &str, labels: &[&str], samples: &[(Labels, f64)]) {
        self.head(name, help, "gauge");
        for (values, v) in samples {
            self.sample(name, labels, values, None, *v);
        }
    }

    /// A family of histograms over [`LATENCY_BUCKETS`] (seconds).
    pub fn histogram(
        &mut self,
        name: &str,
        help: &str,
        labels: &[&str],
        samples: &[(Labels, Histogram)],
    ) {
        self.head(name, help, "histogram");
        for (values, h) in samples {
            let mut cumulative = 0;
            for (le, n) in LATENCY_BUCKETS.iter().zip(h.buckets) {
                cumulative += n;
                self.sample(
                    &format!("{name}_bucket"),
                    labels,
                    values,
                    Some(&le.to_string()),
                    cumulative as f64,
                );
            }
            self.sample(
                &format!("{name}_bucket"),
                labels,
                values,
                Some("+Inf"),
                h.count as f64,
            );
            self.sample(&format!("{name}_sum"), labels, values, None, h.sum);
            self.sample(
                &format!("{name}_count"),
                labels,
                values,
                None,
                h.count as f64,
            );
        }
    }

    /// The page.
    pub fn finish(self) -> String {
        self.text
    }

    fn head(&mut self, name: &str, help: &str, kind: &str) {
        let help = help.replace('\\', "\\\\").replace('\n', "\\n");
        let _ = writeln!(self.text, "# HELP {name} {help}\n# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[&str], values: &[String], le: Option<&str>, v: f64) {
        self.text.push_str(name);
        let mut pairs: Vec<(&str, &str)> = labels
            .iter()
            .copied()
            .zip(values.iter().map(String::as_str))
            .collect();
        if let Some(le) = le {
            pairs.push(("le", le));
        }
        if !pairs.is_empty() {
            self.text.push('{');
            for (i, (label, value)) in pairs.iter().enumerate() {
                if i > 0 {
                    self.text.push(',');
                }
                let value = value
                    .replace('\\', "\\\\")
                    .replace('"', "\\\"")
                    .replace('\n', "\\n");
                let _ = write!(self.text, "{label}=\"{value}\"");
            }
            self.text.push('}');
        }
        let _ = writeln!(self.text, " {}", number(v));
    }
}

/// A sample's value as the format writes it.
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// This process's resident memory in bytes, from `/proc/self/statm` (none elsewhere).
pub fn resident_bytes() -> Option<f64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: f64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_written_in_the_text_format_with_labels_escaped() {
        let mut page = Exposition::default();
        page.counter("x_total", "X.", &["tool"], &[(vec!["a\"b".into()], 3.0)]);
        let mut h = Histogram::default();
        h.observe(Duration::from_millis(30));
        h.observe(Duration::from_secs(500));
        page.histogram("lat_seconds", "Lat.", &["op"], &[(vec!["exec".into()], h)]);
        let text = page.finish();
        assert!(
            text.contains("# TYPE x_total counter\nx_total{tool=\"a\\\"b\"} 3\n"),
            "{text}"
        );
        assert!(
            text.contains("lat_seconds_bucket{op=\"exec\",le=\"0.025\"} 0\n"),
            "{text}"
        );
        assert!(
            text.contains("lat_seconds_bucket{op=\"exec\",le=\"0.05\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("lat_seconds_bucket{op=\"exec\",le=\"+Inf\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("lat_seconds_count{op=\"exec\"} 2\n"),
            "{text}"
        );
    }
}
