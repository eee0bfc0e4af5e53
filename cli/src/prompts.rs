//! What the person types at the terminal while a run needs them: an answer, a plan's
//! approval, a permission. Ctrl-C or the end of input (Ctrl-D) at any prompt means the same
//! everywhere: nobody answers now, so the run pauses and says how to continue.

use cove_protocol::events::EventKind;

use super::render::Renderer;
use cove_core::store::Decision;

/// An answer being typed at the terminal. Made before the prompt is shown, so a Ctrl-C
/// pressed as soon as the prompt appears is not lost.
pub(super) struct Typing {
    line: tokio::sync::oneshot::Receiver<Option<String>>,
    /// None when Ctrl-C cannot be listened for: then only the end of input leaves.
    interrupt: Option<tokio::signal::unix::Signal>,
}

impl Typing {
    /// Starts reading a line and listening for Ctrl-C.
    pub(super) fn start() -> Typing {
        Typing {
            line: read_in_thread(),
            interrupt: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
                .ok(),
        }
    }

    /// The line typed, or none when the person pressed Ctrl-C or ended the input.
    pub(super) async fn line(mut self) -> Option<String> {
        let interrupted = async {
            match &mut self.interrupt {
                Some(signal) => signal.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            line = &mut self.line => line.ok().flatten(),
            _ = interrupted => None,
        }
    }
}

/// Reads one line on a thread of its own, not the blocking pool: a line never typed must not
/// hold up the process's exit. None at the end of input.
fn read_in_thread() -> tokio::sync::oneshot::Receiver<Option<String>> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let typed = match std::io::stdin().read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line.trim().to_string()),
        };
        let _ = tx.send(typed);
    });
    rx
}

/// The permission requests of a live run put to the person at the terminal, one at a time.
#[derive(Default)]
pub(super) struct PermissionPrompts {
    /// Requests not answered yet, oldest first.
    waiting: std::collections::VecDeque<String>,
    /// The request asked about, and the line being typed for it.
    asking: Option<(String, tokio::sync::oneshot::Receiver<Option<String>>)>,
    /// The input ended: nothing more is asked here.
    ended: bool,
}

impl PermissionPrompts {
    /// Follows the run's events: new requests queue, answered ones (here or anywhere) leave.
    pub(super) fn heard(&mut self, kind: &EventKind) {
        match kind {
            EventKind::PermissionRequest { request_id, .. } => {
                self.waiting.push_back(request_id.clone());
            }
            EventKind::PermissionDecided { request_id, .. } => {
                self.waiting.retain(|id| id != request_id);
            }
            _ => {}
        }
    }

    /// The request to ask about now, when none is being asked; starts reading its answer.
    pub(super) fn next_to_ask(&mut self) -> Option<String> {
        if self.asking.is_some() || self.ended {
            return None;
        }
        let id = self.waiting.front()?.clone();
        self.asking = Some((id.clone(), read_in_thread()));
        Some(id)
    }

    pub(super) fn reading(&self) -> bool {
        self.asking.is_some()
    }

    /// The line typed for the request asked about; none at the end of input, after which
    /// nothing is asked again.
    pub(super) async fn line(&mut self) -> Option<String> {
        let Some((_, rx)) = &mut self.asking else {
            return std::future::pending().await;
        };
        let typed = rx.await.ok().flatten();
        if typed.is_none() {
            self.asking = None;
            self.ended = true;
        }
        typed
    }

    /// Applies the typed `line` to the request asked about.
    pub(super) fn answer<O: std::io::Write, E: std::io::Write>(
        &mut self,
        run: &cove_core::agent::RunHandle,
        renderer: &mut Renderer<O, E>,
        line: &str,
    ) {
        let Some((id, _)) = self.asking.take() else {
            return;
        };
        if !self.waiting.contains(&id) {
            renderer.note(&format!("request {id} was answered meanwhile"));
            return;
        }
        let Some((decision, reason)) = parse_decision(line) else {
            renderer.note("answer o (allow once), t (allow for this thread) or d (deny), a reason may follow d");
            return;
        };
        match run.permit(&id, decision, reason.as_deref()) {
            Ok(decided) => {
                self.waiting.retain(|w| {
                    w != &decided.request.id && !decided.also.iter().any(|r| &r.id == w)
                });
            }
            Err(e) => renderer.note(&e.to_string()),
        }
    }
}

/// A decision as typed at the prompt: `o`, `t`, `d [reason]` (or the decisions' names).
fn parse_decision(line: &str) -> Option<(Decision, Option<String>)> {
    let line = line.trim();
    let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let decision = match word.to_ascii_lowercase().as_str() {
        "o" | "once" | "y" | "yes" | "allow_once" => Decision::AllowOnce,
        "t" | "thread" | "allow_for_thread" => Decision::AllowForThread,
        "d" | "n" | "no" | "deny" => Decision::Deny,
        _ => return None,
    };
    let reason = Some(rest.trim().to_string()).filter(|r| !r.is_empty());
    Some((decision, reason))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_decisions() {
        assert_eq!(parse_decision("o"), Some((Decision::AllowOnce, None)));
        assert_eq!(
            parse_decision(" T "),
            Some((Decision::AllowForThread, None))
        );
        assert_eq!(
            parse_decision("d  not that folder "),
            Some((Decision::Deny, Some("not that folder".into())))
        );
        assert_eq!(parse_decision("deny"), Some((Decision::Deny, None)));
        assert_eq!(parse_decision(""), None);
        assert_eq!(parse_decision("maybe"), None);
    }
}
