//! The names MCP tools get in the agent's tool list: `<server>__<tool>`, at most 64
//! characters of `[A-Za-z0-9_-]` (what both OpenAI and Anthropic accept), with a short hash
//! when a name had to be cut or would collide with another; the raw names are kept for the
//! call.

use std::collections::HashMap;

/// Longest tool name the model providers accept.
pub const MAX_NAME: usize = 64;

/// FNV-1a: a hash that stays the same across builds, so a thread's stored calls keep
/// naming the same tools.
fn fnv1a(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5_u32, |hash, byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    })
}

/// `text` with what a tool name may not hold replaced by `_`.
pub(crate) fn clean(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The MCP tools of a run by the names the model sees.
#[derive(Debug, Default, Clone)]
pub struct ToolNames {
    by_name: HashMap<String, (String, String)>,
}

impl ToolNames {
    /// The name for `server`'s tool `tool`, the same one each time it is asked.
    pub fn assign(&mut self, server: &str, tool: &str) -> String {
        let wanted = format!("{}__{}", clean(server), clean(tool));
        let key = (server.to_string(), tool.to_string());
        if let Some((name, _)) = self.by_name.iter().find(|(_, raw)| **raw == key) {
            return name.clone();
        }
        let exact = wanted.len() <= MAX_NAME && wanted == format!("{server}__{tool}");
        let name = if exact && !self.by_name.contains_key(&wanted) {
            wanted
        } else {
            // Cut, or cleaned of characters a provider refuses (two raw names could clean
            // alike): a hash of the raw names keeps it apart.
            let hash = format!("_{:08x}", fnv1a(&format!("{server}\n{tool}")));
            let keep = MAX_NAME - hash.len();
            let mut cut: String = wanted.chars().take(keep).collect();
            cut.push_str(&hash);
            cut
        };
        self.by_name.insert(name.clone(), key);
        name
    }

    /// The server and raw tool name behind `name`.
    pub fn resolve(&self, name: &str) -> Option<(&str, &str)> {
        self.by_name
            .get(name)
            .map(|(server, tool)| (server.as_str(), tool.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(name: &str) -> bool {
        name.len() <= MAX_NAME
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn names_are_plain_short_distinct_and_stable() {
        let mut names = ToolNames::default();
        assert_eq!(
            names.assign("github", "create_issue"),
            "github__create_issue"
        );
        assert_eq!(
            names.assign("github", "create_issue"),
            "github__create_issue",
            "asked again, the same name"
        );
        assert_eq!(
            names.resolve("github__create_issue"),
            Some(("github", "create_issue"))
        );

        let long = "a".repeat(80);
        let cut = names.assign("srv", &long);
        assert!(valid(&cut) && cut.len() == MAX_NAME, "{cut}");
        assert_eq!(names.resolve(&cut), Some(("srv", long.as_str())));

        // Two raw names that clean alike stay apart.
        let dotted = names.assign("my.server", "get");
        let spaced = names.assign("my server", "get");
        assert!(valid(&dotted) && valid(&spaced));
        assert_ne!(dotted, spaced);
        assert_eq!(names.resolve(&spaced), Some(("my server", "get")));

        // The same raw names give the same name in another run.
        let mut again = ToolNames::default();
        assert_eq!(again.assign("srv", &long), cut);
        assert_eq!(fnv1a("a"), 0xe40c_292c);
    }
}
