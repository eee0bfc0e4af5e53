//! Where a command's results go: stdout, as one JSON line per result with `--json`, or as
//! text for a person. Notes for the person (progress, hints) go to stderr and are left out
//! in JSON mode, so a script reads results and nothing else.

use std::io::Write;

use serde::Serialize;

/// Writes `value` as one line of JSON.
pub(super) fn json_line(out: &mut impl Write, value: &impl Serialize) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, value)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Prints the results of a command, as JSON lines or text.
#[derive(Debug, Clone, Copy)]
pub(super) struct Printer {
    json: bool,
}

impl Printer {
    /// A printer of JSON lines when `json`, of text otherwise.
    pub(super) fn new(json: bool) -> Self {
        Printer { json }
    }

    /// Whether results are JSON lines.
    pub(super) fn json(&self) -> bool {
        self.json
    }

    /// One result: its JSON line, or the lines `text` makes of it.
    pub(super) fn result<T: Serialize>(&self, value: &T, text: impl FnOnce(&T) -> String) {
        self.write(value, text, true);
    }

    /// One result whose text is printed as it is, with no newline added (a file's content,
    /// a command's output).
    pub(super) fn verbatim<T: Serialize>(&self, value: &T, text: impl FnOnce(&T) -> String) {
        self.write(value, text, false);
    }

    /// A list: a JSON line per item, or a line per item (`empty` when there is none).
    pub(super) fn list<T: Serialize>(&self, items: &[T], empty: &str, line: impl Fn(&T) -> String) {
        let mut out = std::io::stdout().lock();
        if self.json {
            for item in items {
                let _ = json_line(&mut out, item);
            }
        } else if items.is_empty() {
            let _ = writeln!(out, "{empty}");
        } else {
            for item in items {
                let _ = writeln!(out, "{}", line(item));
            }
        }
    }

    /// A warning about safety, on stderr in every mode (a program reading JSON from stdout
    /// is still told): no walls, settings left out, a secret in the process list.
    pub(super) fn warn(&self, text: &str) {
        eprintln!("cove: {text}");
    }

    /// Says each notice on stderr, as loudly as it asks.
    pub(super) fn say(&self, notices: &[cove_core::session::Notice]) {
        for notice in notices {
            match notice {
                cove_core::session::Notice::Note(text) => self.note(text),
                cove_core::session::Notice::Warning(text) => self.warn(text),
            }
        }
    }

    /// A note for the person at the terminal, on stderr; none in JSON mode.
    pub(super) fn note(&self, text: &str) {
        if !self.json {
            eprintln!("cove: {text}");
        }
    }

    fn write<T: Serialize>(&self, value: &T, text: impl FnOnce(&T) -> String, newline: bool) {
        let mut out = std::io::stdout().lock();
        // A closed pipe (`cove … | head`) is not the command's failure.
        let _ = if self.json {
            json_line(&mut out, value)
        } else if newline {
            writeln!(out, "{}", text(value)).and_then(|()| out.flush())
        } else {
            write!(out, "{}", text(value)).and_then(|()| out.flush())
        };
    }
}

impl cove_sandbox::choice::Narrate for Printer {
    fn note(&self, text: &str) {
        Printer::note(self, text);
    }

    fn warn(&self, text: &str) {
        Printer::warn(self, text);
    }
}
