//! What a finished tool call shows at the terminal: one line, and for a command the tail of
//! its output (the lines a person looks at first: the result, the error, the test summary).

/// Tools whose result is a command's output, shown by its tail.
const COMMAND_TOOLS: [&str; 3] = [
    "execute_command",
    "check_command_output",
    "send_command_input",
];

/// Lines of a command's output shown under its tool line.
const TAIL_LINES: usize = 4;

/// Characters of one shown line of output.
const LINE_CHARS: usize = 120;

/// Characters of the tool line's own text.
const HEADLINE_CHARS: usize = 100;

/// A finished call as the terminal shows it.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Shown {
    /// The result's first line (`exit code 0`, `Wrote 3 lines to a.txt`).
    pub headline: String,
    /// The last lines of a command's output, cut to fit a line.
    pub tail: Vec<String>,
    /// Lines of output before the tail that are not shown.
    pub hidden: usize,
    /// The command ended with a non-zero exit code.
    pub nonzero_exit: bool,
}

/// How the result `output` of a call of `tool` is shown.
pub(super) fn shown(tool: &str, output: &str) -> Shown {
    let mut lines = output.lines();
    let headline = lines
        .by_ref()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let nonzero_exit = exit_code(headline).is_some_and(|code| code != "0");
    let headline = cut(headline, HEADLINE_CHARS);
    if !COMMAND_TOOLS.contains(&tool) {
        return Shown {
            headline,
            tail: Vec::new(),
            hidden: 0,
            nonzero_exit,
        };
    }
    let body: Vec<String> = lines
        .map(printable)
        .filter(|l| !l.trim().is_empty())
        .filter(|l| !matches!(l.trim(), "(no output)" | "(no new output)"))
        .collect();
    let hidden = body.len().saturating_sub(TAIL_LINES);
    Shown {
        headline,
        tail: body[hidden..]
            .iter()
            .map(|l| cut(l.trim_end(), LINE_CHARS))
            .collect(),
        hidden,
        nonzero_exit,
    }
}

/// The code in `exit code N` or `… finished with exit code N.`.
fn exit_code(headline: &str) -> Option<&str> {
    let (_, rest) = headline.rsplit_once("exit code ")?;
    let code = rest.trim_end_matches('.');
    (!code.is_empty()
        && code
            .trim_start_matches('-')
            .chars()
            .all(|c| c.is_ascii_digit()))
    .then_some(code)
}

/// A line as a terminal should print it: what a carriage return left last (a progress
/// bar's final state), tabs as spaces, no other control characters.
fn printable(line: &str) -> String {
    let last = line
        .trim_end_matches('\r')
        .rsplit('\r')
        .next()
        .unwrap_or("");
    last.chars()
        .filter_map(|c| match c {
            '\t' => Some(' '),
            c if c.is_control() => None,
            c => Some(c),
        })
        .collect()
}

fn cut(text: &str, max: usize) -> String {
    if text.chars().count() > max {
        let kept: String = text.chars().take(max - 1).collect();
        format!("{kept}…")
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commands_output_shows_its_tail() {
        let out = shown("execute_command", "exit code 0\n2 3 5 7 11 13\n");
        assert_eq!(
            out,
            Shown {
                headline: "exit code 0".into(),
                tail: vec!["2 3 5 7 11 13".into()],
                hidden: 0,
                nonzero_exit: false,
            }
        );
        let many: String = (1..=50).map(|i| format!("line {i}\n")).collect();
        let out = shown("execute_command", &format!("exit code 2\n{many}"));
        assert_eq!(out.tail, ["line 47", "line 48", "line 49", "line 50"]);
        assert_eq!(out.hidden, 46);
        assert!(out.nonzero_exit);
    }

    #[test]
    fn nothing_to_show_shows_nothing() {
        let out = shown("execute_command", "exit code 0\n(no output)");
        assert!(out.tail.is_empty() && out.hidden == 0, "{out:?}");
        let out = shown(
            "check_command_output",
            "Session \"srv\": finished with exit code 1.\n(no new output)",
        );
        assert!(out.tail.is_empty() && out.nonzero_exit, "{out:?}");
    }

    #[test]
    fn progress_bars_and_control_characters_leave_what_a_terminal_would_show() {
        let out = shown(
            "execute_command",
            "exit code 0\n 10%\r 50%\r100% done\r\n\tok\x07\n",
        );
        assert_eq!(out.tail, ["100% done", " ok"]);
    }

    #[test]
    fn other_tools_show_their_first_line_only() {
        let out = shown("read_file", "line one\nline two");
        assert_eq!(out.headline, "line one");
        assert!(out.tail.is_empty());
        let long = shown(
            "execute_command",
            &format!("exit code 0\n{}", "y".repeat(500)),
        );
        assert_eq!(long.tail[0].chars().count(), LINE_CHARS);
    }
}
