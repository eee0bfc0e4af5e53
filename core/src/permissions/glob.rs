//! The patterns of permission rules: `*` stands for any run of characters (slashes and
//! spaces included, so `*rm -rf*` finds the words anywhere in a command and `/etc/*` covers
//! everything below `/etc`), `?` for one character; everything else is itself.

/// A compiled pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob {
    source: String,
    chars: Vec<char>,
}

impl Glob {
    /// The pattern `source`.
    pub fn new(source: &str) -> Glob {
        Glob {
            source: source.to_string(),
            chars: source.chars().collect(),
        }
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether all of `text` matches.
    pub fn matches(&self, text: &str) -> bool {
        let text: Vec<char> = text.chars().collect();
        let pattern = &self.chars;
        let (mut p, mut t) = (0, 0);
        // Where the last `*` was, and the text position it has swallowed up to: on a
        // mismatch the star takes one more character and matching goes on from there.
        let mut star: Option<(usize, usize)> = None;
        while t < text.len() {
            match pattern.get(p) {
                Some('*') => {
                    star = Some((p, t));
                    p += 1;
                }
                Some(&c) if c == '?' || c == text[t] => {
                    p += 1;
                    t += 1;
                }
                _ => match star {
                    Some((star_p, star_t)) => {
                        p = star_p + 1;
                        t = star_t + 1;
                        star = Some((star_p, star_t + 1));
                    }
                    None => return false,
                },
            }
        }
        pattern[p..].iter().all(|&c| c == '*')
    }
}

#[cfg(test)]
mod tests {
    use super::Glob;

    fn m(pattern: &str, text: &str) -> bool {
        Glob::new(pattern).matches(text)
    }

    #[test]
    fn stars_and_question_marks() {
        assert!(m("*rm -rf*", "cd /tmp && rm -rf build"));
        assert!(!m("*rm -rf*", "rm -r build"));
        assert!(m("git push*", "git push origin main"));
        assert!(!m("git push*", "echo git push"));
        assert!(m("/etc/*", "/etc/ssh/sshd_config"));
        assert!(!m("/etc/*", "/etcetera"));
        assert!(m("mcp:*", "mcp:github:create_issue"));
        assert!(m("file?.txt", "file1.txt"));
        assert!(!m("file?.txt", "file10.txt"));
        assert!(m("*", ""));
        assert!(m("", ""));
        assert!(!m("", "x"));
        assert!(m("a*b*c", "a-b-b-c"));
        assert!(!m("a*b*c", "a-b-b-"));
        assert!(m("*.rs", "src/main.rs"));
        assert!(m("ünï*", "ünïcode"));
    }
}
