//! OpenAPI documents checked by a validator no one here wrote: `openapi-spec-validator`
//! from PyPI, installed by `install-test-deps.sh` into the tests' Python environment.

use anyhow::{Result, bail};
use serde_json::Value;

/// Fails with the validator's words unless `doc` is a valid OpenAPI document.
pub fn validate(doc: &Value) -> Result<()> {
    let python = crate::mcp_servers::python()?;
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("openapi.json");
    std::fs::write(&file, doc.to_string())?;
    let checked = std::process::Command::new(python)
        .args([
            "-c",
            "import json, sys\nfrom openapi_spec_validator import validate\nvalidate(json.load(open(sys.argv[1])))",
        ])
        .arg(&file)
        .output()?;
    if !checked.status.success() {
        bail!(
            "the OpenAPI document is not valid (or openapi-spec-validator is missing: run harness/install-test-deps.sh): {}",
            String::from_utf8_lossy(&checked.stderr)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    #[test]
    fn a_document_without_info_and_paths_is_refused() {
        let error = super::validate(&serde_json::json!({"openapi": "3.1.0"})).unwrap_err();
        assert!(error.to_string().contains("info"), "{error}");
    }
}
