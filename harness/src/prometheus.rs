//! Metrics pages read by the real Prometheus text parser (PyPI `prometheus-client`, in the
//! tests' Python environment), not by a parser written here.

use std::io::Write as _;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};
use serde_json::Value;

const PARSE: &str = r#"
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out = []
for family in text_string_to_metric_families(sys.stdin.read()):
    for s in family.samples:
        out.append({"family": family.name, "type": family.type, "name": s.name, "labels": s.labels, "value": s.value})
print(json.dumps(out))
"#;

/// One sample of a metrics page.
#[derive(Debug, Clone)]
pub struct Sample {
    pub family: String,
    pub kind: String,
    pub name: String,
    pub labels: serde_json::Map<String, Value>,
    pub value: f64,
}

/// The samples of `page`, as `prometheus_client` reads them; an error if it cannot.
pub fn parse(page: &str) -> Result<Vec<Sample>> {
    let python = crate::mcp_servers::python()?;
    let mut child = Command::new(&python)
        .args(["-c", PARSE])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    child
        .stdin
        .take()
        .context("no stdin")?
        .write_all(page.as_bytes())?;
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!(
            "prometheus_client cannot read the page (is it installed? run harness/install-test-deps.sh): {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let samples: Vec<Value> = serde_json::from_slice(&out.stdout)?;
    Ok(samples
        .into_iter()
        .map(|s| Sample {
            family: s["family"].as_str().unwrap_or_default().to_string(),
            kind: s["type"].as_str().unwrap_or_default().to_string(),
            name: s["name"].as_str().unwrap_or_default().to_string(),
            labels: s["labels"].as_object().cloned().unwrap_or_default(),
            value: s["value"].as_f64().unwrap_or(f64::NAN),
        })
        .collect())
}

/// The value of sample `name` whose labels include every pair of `labels`.
pub fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    samples
        .iter()
        .find(|s| {
            s.name == name
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).and_then(Value::as_str) == Some(*v))
        })
        .map(|s| s.value)
}
