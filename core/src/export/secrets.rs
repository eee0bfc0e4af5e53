//! What an exported thread must never hold: the controller's keys and tokens, wherever a
//! task, an answer or a command's output repeated them.

use crate::store::{Store, StoreError};

/// The shortest value taken for a secret: shorter ones would blot ordinary words.
const SHORTEST: usize = 8;

/// The secret values to blot out of an export.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    values: Vec<String>,
}

impl Secrets {
    /// The values of this process's environment whose names say they are secret (`*_KEY`,
    /// `*_TOKEN`, `*_SECRET`, `*PASSWORD*`), and every sandbox token `store` keeps.
    pub fn of_controller(store: &Store) -> Result<Secrets, StoreError> {
        let mut secrets = Secrets::default();
        for (name, value) in std::env::vars() {
            let name = name.to_ascii_uppercase();
            if name.ends_with("_KEY")
                || name.ends_with("_TOKEN")
                || name.ends_with("_SECRET")
                || name.contains("PASSWORD")
            {
                secrets.add(&value);
            }
        }
        for sandbox in store.sandboxes()? {
            secrets.add(&sandbox.token);
            if let Some(boot) = &sandbox.boot_token {
                secrets.add(boot);
            }
        }
        Ok(secrets)
    }

    /// Adds `value` (ignored when too short to be told from ordinary text).
    pub fn add(&mut self, value: &str) {
        let value = value.trim();
        if value.chars().count() >= SHORTEST && !self.values.iter().any(|v| v == value) {
            self.values.push(value.to_string());
            // Longest first: a secret that holds another is blotted whole.
            self.values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        }
    }

    /// `text` with every secret, as written or as HTML or JSON escape it, blotted out.
    pub fn blot(&self, text: &str) -> String {
        let mut text = text.to_string();
        for value in &self.values {
            for form in [
                value.clone(),
                super::html::escape(value),
                json_escaped(value),
            ] {
                if text.contains(&form) {
                    text = text.replace(&form, "[redacted]");
                }
            }
        }
        text
    }
}

/// `value` as it stands inside a JSON string.
fn json_escaped(value: &str) -> String {
    let quoted = serde_json::to_string(value).unwrap_or_default();
    quoted
        .strip_prefix('"')
        .and_then(|q| q.strip_suffix('"'))
        .unwrap_or(&quoted)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_blotted_in_every_form_and_short_values_are_not_taken() {
        let mut secrets = Secrets::default();
        secrets.add("sk-abc<&>\"12345");
        secrets.add("short");
        let text = "raw sk-abc<&>\"12345 html sk-abc&lt;&amp;&gt;&quot;12345 json sk-abc<&>\\\"12345 short";
        assert_eq!(
            secrets.blot(text),
            "raw [redacted] html [redacted] json [redacted] short"
        );
    }
}
