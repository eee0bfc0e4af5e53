//! Watches on a shell command: its end, and lines of its output that match a pattern. Both
//! wake on the session's own changes (and the grace periods that can end a command).

use std::sync::Arc;

use cove_protocol::watches::{Happened, MatchedLine};
use regex::Regex;

use crate::shell::session::Session;

/// Lines of a command's end shown with its exit code.
const TAIL_LINES: usize = 20;
/// Bytes read back from a command's end for its tail.
const TAIL_BYTES: u64 = 4096;
/// Matching lines reported.
const MAX_MATCHES: usize = 20;
/// Characters of a matching line reported.
const MAX_LINE: usize = 500;

fn forgotten(session: &Session, seq: u64) -> Happened {
    Happened::Failed {
        reason: format!(
            "session {:?} no longer remembers command {seq} (newer commands pushed it out)",
            session.name()
        ),
    }
}

/// Resolves when command `seq` of `session` has ended.
pub(super) async fn exited(session: Arc<Session>, seq: u64) -> Happened {
    let mut changes = session.subscribe();
    loop {
        let Some(now) = session.progress(seq, u64::MAX) else {
            return forgotten(&session, seq);
        };
        if let Some(exit_code) = now.exit_code {
            let from = now.next.saturating_sub(TAIL_BYTES);
            let text = session
                .progress(seq, from)
                .map(|p| String::from_utf8_lossy(&p.text).into_owned())
                .unwrap_or_default();
            return Happened::Exited {
                session: session.name().to_string(),
                command: seq,
                command_text: now.command,
                exit_code,
                tail: last_lines(&text, TAIL_LINES),
            };
        }
        session.next_change(&mut changes).await;
    }
}

/// The last `n` lines of `text`, without a trailing newline.
fn last_lines(text: &str, n: usize) -> String {
    let trimmed = text.trim_end_matches('\n');
    let start = trimmed
        .rmatch_indices('\n')
        .nth(n.saturating_sub(1))
        .map_or(0, |(i, _)| i + 1);
    trimmed[start..].to_string()
}

/// Resolves when a line of command `seq`'s output matches `pattern`, or the command ends
/// without one.
pub(super) async fn matched(session: Arc<Session>, seq: u64, pattern: Regex) -> Happened {
    let mut changes = session.subscribe();
    let mut lines = LineScanner::new(pattern);
    let mut from = 0;
    loop {
        let Some(progress) = session.progress(seq, from) else {
            return forgotten(&session, seq);
        };
        from = progress.next;
        let ended = progress.exit_code.is_some();
        let found = lines.feed(&progress.text, ended);
        if !found.is_empty() {
            return Happened::Matched {
                session: session.name().to_string(),
                command: seq,
                lines: found,
            };
        }
        if let Some(exit_code) = progress.exit_code {
            return Happened::EndedWithoutMatch {
                session: session.name().to_string(),
                command: seq,
                exit_code,
            };
        }
        session.next_change(&mut changes).await;
    }
}

/// Splits output into lines as it comes and matches each once it is whole; a line still
/// being written is tried too (a prompt waits without a newline), but counted once.
struct LineScanner {
    pattern: Regex,
    partial: Vec<u8>,
    /// Lines completed so far.
    line: u64,
}

impl LineScanner {
    fn new(pattern: Regex) -> Self {
        LineScanner {
            pattern,
            partial: Vec::new(),
            line: 0,
        }
    }

    /// The lines of `bytes` (after what came before) that match.
    fn feed(&mut self, bytes: &[u8], ended: bool) -> Vec<MatchedLine> {
        let mut found = Vec::new();
        self.partial.extend_from_slice(bytes);
        let mut consumed = 0;
        while let Some(nl) = memchr::memchr(b'\n', &self.partial[consumed..]) {
            let line = &self.partial[consumed..consumed + nl];
            self.line += 1;
            self.try_line(line, self.line, &mut found);
            consumed += nl + 1;
        }
        self.partial.drain(..consumed);
        if !self.partial.is_empty() && (ended || found.is_empty()) {
            let partial = std::mem::take(&mut self.partial);
            self.try_line(&partial, self.line + 1, &mut found);
            self.partial = partial;
        }
        found
    }

    fn try_line(&self, line: &[u8], number: u64, found: &mut Vec<MatchedLine>) {
        if found.len() >= MAX_MATCHES {
            return;
        }
        let text = String::from_utf8_lossy(line);
        if self.pattern.is_match(&text) {
            found.push(MatchedLine {
                line: number,
                text: text.chars().take(MAX_LINE).collect(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_match_whole_and_partial_and_are_numbered() {
        let mut scanner = LineScanner::new(Regex::new("OK|Password:").unwrap());
        assert!(scanner.feed(b"compiling\nstill", false).is_empty());
        let found = scanner.feed(b" going\nBUILD OK\nmore\nOK again\n", false);
        let got: Vec<(u64, &str)> = found.iter().map(|m| (m.line, m.text.as_str())).collect();
        assert_eq!(got, vec![(3, "BUILD OK"), (5, "OK again")]);
        let prompt = scanner.feed(b"Password: ", false);
        assert_eq!(prompt.len(), 1);
        assert_eq!((prompt[0].line, prompt[0].text.as_str()), (6, "Password: "));
    }

    #[test]
    fn last_lines_keeps_the_end() {
        assert_eq!(last_lines("a\nb\nc\n", 2), "b\nc");
        assert_eq!(last_lines("a\nb\n", 5), "a\nb");
        assert_eq!(last_lines("", 3), "");
    }
}
