//! Suna's XML tool calls, parsed incrementally as the model's text streams in:
//!
//! ```text
//! <function_calls>
//! <invoke name="create_file">
//! <parameter name="file_path">index.html</parameter>
//! <parameter name="file_contents"><!doctype html> ... a < b ...</parameter>
//! </invoke>
//! </function_calls>
//! ```
//!
//! Parameter values are raw text up to `</parameter>`: they may hold `<`, tags, whole HTML
//! files. Chunk boundaries may fall anywhere; the events are the same however the text is
//! split. Each `<invoke>` is reported as soon as its `</invoke>` arrives, so its tool can start
//! while the model is still writing.

use memchr::memmem;

/// How every result of an XML tool call starts (a user message of its own).
const RESULTS_BLOCK: &str = "<function_results>";

/// The user message that gives the model the result of its call of `tool`.
pub fn result_text(tool: &str, ok: bool, text: &str) -> String {
    let status = if ok { "success" } else { "error" };
    format!(
        "{RESULTS_BLOCK}\n<result tool=\"{tool}\" status=\"{status}\">\n{text}\n</result>\n</function_results>"
    )
}

/// Whether a user message is a tool result.
pub fn is_result(text: &str) -> bool {
    text.starts_with(RESULTS_BLOCK)
}

const OPEN_BLOCK: &str = "<function_calls>";
const CLOSE_BLOCK: &str = "</function_calls>";
const CLOSE_INVOKE: &str = "</invoke>";
const CLOSE_PARAMETER: &str = "</parameter>";

/// A complete tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XmlInvoke {
    pub name: String,
    /// Parameters in order, values raw (a single leading newline dropped).
    pub parameters: Vec<(String, String)>,
}

/// What the parser found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum XmlEvent {
    /// Text for the user, outside any tool-call block.
    Text(String),
    Invoke(XmlInvoke),
    /// A call that cannot be read; it goes back to the model as an error.
    Malformed {
        reason: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Text,
    /// Inside `<function_calls>`, between invokes.
    Block,
    /// Inside an `<invoke>`, between parameters.
    Invoke,
    /// Inside a `<parameter>` value.
    Value,
    /// Skipping a malformed call up to its `</invoke>`.
    SkipInvoke,
}

/// The incremental parser for one model answer.
#[derive(Debug)]
pub struct XmlParser {
    buf: String,
    /// Bytes of `buf` already consumed.
    pos: usize,
    /// Where the next search for a closing tag may start (everything before has been ruled out).
    scan: usize,
    state: State,
    invoke: Option<XmlInvoke>,
    parameter: Option<String>,
    /// Bytes dropped from the front of `buf` so far.
    drained: usize,
    /// Offset (in the whole answer) just past the last complete `</invoke>`.
    last_invoke_end: Option<usize>,
}

impl Default for XmlParser {
    fn default() -> Self {
        Self::new()
    }
}

impl XmlParser {
    /// A parser at the start of an answer.
    pub fn new() -> Self {
        XmlParser {
            buf: String::new(),
            pos: 0,
            scan: 0,
            state: State::Text,
            invoke: None,
            parameter: None,
            drained: 0,
            last_invoke_end: None,
        }
    }

    /// Offset in the whole answer just past the last complete `</invoke>`, if any.
    pub fn last_invoke_end(&self) -> Option<usize> {
        self.last_invoke_end
    }

    /// Whether the parser is inside a tool-call block.
    pub fn in_block(&self) -> bool {
        self.state != State::Text
    }

    /// Feeds a piece of the answer.
    pub fn push(&mut self, chunk: &str, out: &mut Vec<XmlEvent>) {
        self.buf.push_str(chunk);
        while self.step(out) {}
        self.compact();
    }

    /// Ends the answer: flushes text, reports a call cut off before its end.
    pub fn finish(&mut self, out: &mut Vec<XmlEvent>) {
        match self.state {
            State::Text => {
                let rest = &self.buf[self.pos..];
                if !rest.is_empty() {
                    out.push(XmlEvent::Text(rest.to_string()));
                }
            }
            State::Block | State::SkipInvoke => {}
            State::Invoke | State::Value => {
                let name = self.invoke.as_ref().map_or("?", |i| i.name.as_str());
                out.push(XmlEvent::Malformed {
                    reason: format!(
                        "the call to {name:?} was cut off before </invoke>; it was not run"
                    ),
                });
            }
        }
        *self = XmlParser::new();
    }

    fn compact(&mut self) {
        if self.pos > 4096 && self.pos * 2 > self.buf.len() {
            self.buf.drain(..self.pos);
            self.drained += self.pos;
            self.scan -= self.pos.min(self.scan);
            self.pos = 0;
        }
    }

    /// One step of progress; false when more input is needed.
    fn step(&mut self, out: &mut Vec<XmlEvent>) -> bool {
        match self.state {
            State::Text => self.step_text(out),
            State::Block => self.step_block(out),
            State::Invoke => self.step_invoke(out),
            State::Value => self.step_value(),
            State::SkipInvoke => self.step_skip(),
        }
    }

    fn emit_text(&mut self, end: usize, out: &mut Vec<XmlEvent>) {
        if end > self.pos {
            out.push(XmlEvent::Text(self.buf[self.pos..end].to_string()));
        }
        self.pos = end;
    }

    fn step_text(&mut self, out: &mut Vec<XmlEvent>) -> bool {
        let bytes = self.buf.as_bytes();
        let mut from = self.scan.max(self.pos);
        while let Some(offset) = memchr::memchr(b'<', &bytes[from..]) {
            let at = from + offset;
            let rest = &self.buf[at..];
            if rest.starts_with(OPEN_BLOCK) {
                self.emit_text(at, out);
                self.pos = at + OPEN_BLOCK.len();
                self.scan = self.pos;
                self.state = State::Block;
                return true;
            }
            if OPEN_BLOCK.starts_with(rest) {
                // Perhaps the start of a block: say what comes before, keep the rest.
                self.emit_text(at, out);
                self.scan = at;
                return false;
            }
            from = at + 1;
        }
        let end = self.buf.len();
        self.emit_text(end, out);
        self.scan = end;
        false
    }

    /// Skips whitespace; the position of the next non-space byte, if there is one.
    fn skip_space(&mut self) -> Option<usize> {
        let bytes = self.buf.as_bytes();
        let at = bytes[self.pos..]
            .iter()
            .position(|b| !b.is_ascii_whitespace())
            .map(|o| self.pos + o);
        self.pos = at.unwrap_or(self.buf.len());
        at
    }

    /// The complete tag at the position (`<...>`), or None if it has not fully arrived.
    fn tag_at(&self, at: usize) -> Option<(usize, &str)> {
        let end = memchr::memchr(b'>', &self.buf.as_bytes()[at..])? + at;
        Some((end + 1, &self.buf[at + 1..end]))
    }

    fn step_block(&mut self, out: &mut Vec<XmlEvent>) -> bool {
        let Some(at) = self.skip_space() else {
            return false;
        };
        if self.buf.as_bytes()[at] != b'<' {
            // Stray text inside the block: skip to the next tag.
            match memchr::memchr(b'<', &self.buf.as_bytes()[at..]) {
                Some(o) => {
                    self.pos = at + o;
                    return true;
                }
                None => {
                    self.pos = self.buf.len();
                    return false;
                }
            }
        }
        let Some((end, tag)) = self.tag_at(at) else {
            return false;
        };
        let tag = tag.trim().to_string();
        if tag == "/function_calls" {
            self.pos = end;
            self.scan = end;
            self.state = State::Text;
        } else if let Some(rest) = tag.strip_prefix("invoke") {
            self.pos = end;
            match attribute(rest, "name") {
                Some(name) if !name.is_empty() => {
                    self.invoke = Some(XmlInvoke {
                        name,
                        parameters: Vec::new(),
                    });
                    self.state = State::Invoke;
                }
                _ => {
                    out.push(XmlEvent::Malformed {
                        reason: format!("<{tag}> has no name=\"...\" attribute"),
                    });
                    self.skip_invoke();
                }
            }
        } else {
            self.pos = end;
            out.push(XmlEvent::Malformed {
                reason: format!(
                    "unexpected <{tag}> inside <function_calls>; expected <invoke name=\"...\">"
                ),
            });
        }
        true
    }

    /// Drops the rest of a malformed call, up to and including its `</invoke>` (which may
    /// not have arrived yet).
    fn skip_invoke(&mut self) {
        self.scan = self.pos;
        self.state = State::SkipInvoke;
    }

    fn step_skip(&mut self) -> bool {
        let from = self.scan.max(self.pos);
        let hay = &self.buf.as_bytes()[from..];
        let invoke = memmem::find(hay, CLOSE_INVOKE.as_bytes());
        let block = memmem::find(hay, CLOSE_BLOCK.as_bytes());
        match (invoke, block) {
            // The block ends first: the malformed call had no </invoke>.
            (_, Some(b)) if invoke.is_none_or(|i| b < i) => {
                self.pos = from + b + CLOSE_BLOCK.len();
                self.scan = self.pos;
                self.state = State::Text;
                true
            }
            (Some(i), _) => {
                self.pos = from + i + CLOSE_INVOKE.len();
                self.scan = self.pos;
                self.state = State::Block;
                true
            }
            _ => {
                self.scan = self
                    .buf
                    .len()
                    .saturating_sub(CLOSE_BLOCK.len() - 1)
                    .max(self.pos);
                false
            }
        }
    }

    fn step_invoke(&mut self, out: &mut Vec<XmlEvent>) -> bool {
        let Some(at) = self.skip_space() else {
            return false;
        };
        if self.buf.as_bytes()[at] != b'<' {
            match memchr::memchr(b'<', &self.buf.as_bytes()[at..]) {
                Some(o) => {
                    self.pos = at + o;
                    return true;
                }
                None => {
                    self.pos = self.buf.len();
                    return false;
                }
            }
        }
        let Some((end, tag)) = self.tag_at(at) else {
            return false;
        };
        let tag = tag.trim().to_string();
        if tag == "/invoke" {
            self.pos = end;
            self.last_invoke_end = Some(self.drained + end);
            self.state = State::Block;
            if let Some(invoke) = self.invoke.take() {
                out.push(XmlEvent::Invoke(invoke));
            }
        } else if let Some(rest) = tag.strip_prefix("parameter") {
            self.pos = end;
            self.scan = end;
            match attribute(rest, "name") {
                Some(name) if !name.is_empty() => {
                    self.parameter = Some(name);
                    self.state = State::Value;
                }
                _ => {
                    let name = self.invoke.take().map(|i| i.name).unwrap_or_default();
                    out.push(XmlEvent::Malformed {
                        reason: format!("a <{tag}> of {name:?} has no name=\"...\" attribute; the call was not run"),
                    });
                    self.skip_invoke();
                }
            }
        } else if tag == "/function_calls" {
            let name = self.invoke.take().map(|i| i.name).unwrap_or_default();
            out.push(XmlEvent::Malformed {
                reason: format!("the call to {name:?} has no </invoke>; it was not run"),
            });
            self.pos = end;
            self.scan = end;
            self.state = State::Text;
        } else {
            let name = self.invoke.take().map(|i| i.name).unwrap_or_default();
            out.push(XmlEvent::Malformed {
                reason: format!(
                    "unexpected <{tag}> in the call to {name:?}; expected <parameter name=\"...\">"
                ),
            });
            self.pos = end;
            self.skip_invoke();
        }
        true
    }

    fn step_value(&mut self) -> bool {
        let from = self.scan.max(self.pos);
        let haystack = &self.buf.as_bytes()[from..];
        match memmem::find(haystack, CLOSE_PARAMETER.as_bytes()) {
            Some(o) => {
                let end = from + o;
                let raw = &self.buf[self.pos..end];
                let value = raw
                    .strip_prefix("\r\n")
                    .or_else(|| raw.strip_prefix('\n'))
                    .unwrap_or(raw)
                    .to_string();
                if let (Some(invoke), Some(name)) = (self.invoke.as_mut(), self.parameter.take()) {
                    invoke.parameters.push((name, value));
                }
                self.pos = end + CLOSE_PARAMETER.len();
                self.scan = self.pos;
                self.state = State::Invoke;
                true
            }
            None => {
                // The closing tag may straddle this chunk and the next.
                self.scan = self
                    .buf
                    .len()
                    .saturating_sub(CLOSE_PARAMETER.len() - 1)
                    .max(self.pos);
                false
            }
        }
    }
}

/// The value of `key="..."` (or `key='...'`) in a tag's attribute text.
fn attribute(attrs: &str, key: &str) -> Option<String> {
    let mut rest = attrs;
    while let Some(i) = rest.find(key) {
        let after = rest[i + key.len()..].trim_start();
        if let Some(after) = after.strip_prefix('=') {
            let after = after.trim_start();
            let quote = after.chars().next()?;
            if quote == '"' || quote == '\'' {
                let inner = &after[1..];
                let end = inner.find(quote)?;
                return Some(inner[..end].to_string());
            }
        }
        rest = &rest[i + key.len()..];
    }
    None
}

/// Parses a whole answer at once.
pub fn parse_all(text: &str) -> Vec<XmlEvent> {
    let mut parser = XmlParser::new();
    let mut out = Vec::new();
    parser.push(text, &mut out);
    parser.finish(&mut out);
    merge_text(out)
}

/// Joins consecutive text events (their split depends on chunking; their content does not).
pub fn merge_text(events: Vec<XmlEvent>) -> Vec<XmlEvent> {
    let mut merged: Vec<XmlEvent> = Vec::new();
    for event in events {
        match (merged.last_mut(), event) {
            (Some(XmlEvent::Text(last)), XmlEvent::Text(more)) => last.push_str(&more),
            (_, event) => merged.push(event),
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANSWER: &str = "I'll create the page and check it.\n<function_calls>\n<invoke name=\"create_file\">\n<parameter name=\"file_path\">site/index.html</parameter>\n<parameter name=\"file_contents\">\n<!doctype html>\n<p>1 < 2 && 3 > 2</p>\n<parameter-like> text </paramete>\n</parameter>\n</invoke>\n<invoke name='execute_command'>\n<parameter name=\"command\">ls -la | grep '<x>'</parameter>\n<parameter name=\"blocking\">true</parameter>\n</invoke>\n</function_calls>\nDone: ünïcødé 😀 <b>bold</b> and a lone <function_ mention.";

    fn expected() -> Vec<XmlEvent> {
        vec![
            XmlEvent::Text("I'll create the page and check it.\n".into()),
            XmlEvent::Invoke(XmlInvoke {
                name: "create_file".into(),
                parameters: vec![
                    ("file_path".into(), "site/index.html".into()),
                    (
                        "file_contents".into(),
                        "<!doctype html>\n<p>1 < 2 && 3 > 2</p>\n<parameter-like> text </paramete>\n".into(),
                    ),
                ],
            }),
            XmlEvent::Invoke(XmlInvoke {
                name: "execute_command".into(),
                parameters: vec![
                    ("command".into(), "ls -la | grep '<x>'".into()),
                    ("blocking".into(), "true".into()),
                ],
            }),
            XmlEvent::Text("\nDone: ünïcødé 😀 <b>bold</b> and a lone <function_ mention.".into()),
        ]
    }

    #[test]
    fn a_whole_answer_parses() {
        assert_eq!(parse_all(ANSWER), expected());
    }

    #[test]
    fn every_split_point_gives_the_same_calls() {
        let boundaries: Vec<usize> = (0..=ANSWER.len())
            .filter(|i| ANSWER.is_char_boundary(*i))
            .collect();
        for &cut in &boundaries {
            let mut parser = XmlParser::new();
            let mut out = Vec::new();
            parser.push(&ANSWER[..cut], &mut out);
            parser.push(&ANSWER[cut..], &mut out);
            parser.finish(&mut out);
            assert_eq!(merge_text(out), expected(), "split at byte {cut}");
        }
        // And one character at a time.
        let mut parser = XmlParser::new();
        let mut out = Vec::new();
        for (i, c) in ANSWER.char_indices() {
            parser.push(&ANSWER[i..i + c.len_utf8()], &mut out);
        }
        parser.finish(&mut out);
        assert_eq!(merge_text(out), expected());
    }

    #[test]
    fn an_invoke_is_reported_before_the_answer_ends() {
        let mut parser = XmlParser::new();
        let mut out = Vec::new();
        let first_invoke_end = ANSWER.find("</invoke>").unwrap() + "</invoke>".len();
        parser.push(&ANSWER[..first_invoke_end], &mut out);
        assert!(
            out.iter()
                .any(|e| matches!(e, XmlEvent::Invoke(i) if i.name == "create_file"))
        );
        assert!(parser.in_block());
        assert_eq!(parser.last_invoke_end(), Some(first_invoke_end));
    }

    #[test]
    fn malformed_calls_are_reported_not_run() {
        let cases = [
            (
                "<function_calls><invoke><parameter name=\"a\">1</parameter></invoke></function_calls>",
                "no name",
            ),
            (
                "<function_calls><invoke name=\"ls\"><parameter>1</parameter></invoke></function_calls>",
                "no name",
            ),
            (
                "<function_calls><invoke name=\"ls\"><param name=\"a\">1</param></invoke></function_calls>",
                "unexpected <param",
            ),
            (
                "<function_calls><invoke name=\"ls\"><parameter name=\"a\">1</parameter></function_calls>",
                "no </invoke>",
            ),
            (
                "<function_calls><invoke name=\"ls\"><parameter name=\"a\">never closed",
                "cut off",
            ),
            (
                "<function_calls><thinking>hm</thinking></function_calls>",
                "unexpected <thinking>",
            ),
            (
                "<function_calls><invoke><parameter name=\"a\">1</parameter></function_calls>tail",
                "no name",
            ),
        ];
        for (text, why) in cases {
            let events = parse_all(text);
            for cut in (0..=text.len()).filter(|i| text.is_char_boundary(*i)) {
                let mut parser = XmlParser::new();
                let mut out = Vec::new();
                parser.push(&text[..cut], &mut out);
                parser.push(&text[cut..], &mut out);
                parser.finish(&mut out);
                assert_eq!(merge_text(out), events, "{text} split at {cut}");
            }
            let reasons: Vec<_> = events
                .iter()
                .filter_map(|e| match e {
                    XmlEvent::Malformed { reason } => Some(reason.clone()),
                    _ => None,
                })
                .collect();
            assert!(
                reasons.iter().any(|r| r.contains(why)),
                "{text}: {events:?}"
            );
            assert!(
                !events.iter().any(|e| matches!(e, XmlEvent::Invoke(_))),
                "{text} ran a call"
            );
        }
        // Text after a block whose malformed call never closed is still shown.
        let events = parse_all(
            "<function_calls><invoke><parameter name=\"a\">1</parameter></function_calls>tail",
        );
        assert_eq!(events.last(), Some(&XmlEvent::Text("tail".into())));
        // A good call after a bad one in the same block still runs.
        let events = parse_all(
            "<function_calls><invoke><parameter name=\"a\">1</parameter></invoke><invoke name=\"ok\"></invoke></function_calls>",
        );
        assert!(
            events
                .iter()
                .any(|e| matches!(e, XmlEvent::Invoke(i) if i.name == "ok"))
        );
    }

    #[test]
    fn text_without_calls_passes_through_whatever_it_contains() {
        for text in [
            "plain",
            "a < b and <b>tags</b>",
            "<function",
            "ends with <",
            "<function_calls",
        ] {
            let mut parser = XmlParser::new();
            let mut out = Vec::new();
            for c in text.chars() {
                parser.push(&c.to_string(), &mut out);
            }
            parser.finish(&mut out);
            assert_eq!(merge_text(out), vec![XmlEvent::Text(text.into())], "{text}");
        }
    }

    #[test]
    fn large_values_stream_through_without_rescanning() {
        let body = "x<y ".repeat(250_000);
        let answer = format!(
            "<function_calls><invoke name=\"w\"><parameter name=\"c\">{body}</parameter></invoke></function_calls>"
        );
        let mut parser = XmlParser::new();
        let mut out = Vec::new();
        for chunk in answer.as_bytes().chunks(1000) {
            parser.push(std::str::from_utf8(chunk).unwrap(), &mut out);
        }
        parser.finish(&mut out);
        match out.as_slice() {
            [XmlEvent::Invoke(invoke)] => assert_eq!(invoke.parameters[0].1.len(), body.len()),
            other => panic!("{other:?}"),
        }
    }
}
