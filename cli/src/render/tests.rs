//! What the terminal shows for each event, in text and in JSON.

use super::*;
use cove_protocol::events::RunEvent;

fn event(seq: u64, kind: EventKind) -> RunEvent {
    RunEvent {
        seq,
        thread_id: "t1".into(),
        run_id: "r1".into(),
        timestamp_ms: 1_795_000_000_000,
        kind,
    }
}

fn render(json: bool, events: &[RunEvent]) -> String {
    let mut renderer = Renderer::new(Vec::new(), Vec::new(), json, false, false);
    for e in events {
        renderer.event(e);
    }
    renderer.done();
    renderer.workspace(std::path::Path::new("/tmp/ws"));
    let (out, err) = renderer.into_inner();
    assert!(err.is_empty());
    String::from_utf8(out).unwrap()
}

fn a_run() -> Vec<RunEvent> {
    vec![
        event(
            1,
            EventKind::ThreadRunStart {
                model: "openai/gpt".into(),
                sandbox: "local".into(),
            },
        ),
        event(
            2,
            EventKind::AssistantText {
                text: "Let me look".into(),
            },
        ),
        event(
            3,
            EventKind::ToolStarted {
                call_id: "c1".into(),
                tool: "execute_command".into(),
                summary: Some("ls".into()),
                arguments: serde_json::json!({"command": "ls"}),
            },
        ),
        event(
            4,
            EventKind::ToolCompleted {
                call_id: "c1".into(),
                tool: "execute_command".into(),
                output: "exit code 0\na.txt\nb.txt".into(),
            },
        ),
        event(
            5,
            EventKind::Complete {
                text: Some("Two files.".into()),
                attachments: vec!["a.txt".into()],
            },
        ),
        event(
            6,
            EventKind::ThreadRunEnd {
                status: RunStatus::Completed,
                usage: TokenUsage {
                    calls: 2,
                    input_tokens: 12_345,
                    cached_tokens: 10_000,
                    cache_write_tokens: 2_000,
                    output_tokens: 456,
                },
                cost: Some(0.01234),
                duration_ms: 42_100,
            },
        ),
    ]
}

#[test]
fn a_run_renders_as_lines_for_a_person() {
    assert_eq!(
        render(false, &a_run()),
        "thread t1 · openai/gpt · local\nLet me look\n  → execute_command ls\n  ✓ execute_command: exit code 0\n    │ a.txt\n    │ b.txt\n\n✔ Done. Two files.\n  · a.txt\nrun r1 completed · 2 calls · 12,345 tokens in (10,000 cached) · 456 out · $0.0123 · 42.1 s\nworkspace: /tmp/ws\n"
    );
}

#[test]
fn json_renders_one_event_per_line_and_nothing_else() {
    let out = render(true, &a_run());
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 6, "{out}");
    for (line, want) in lines.iter().zip(a_run()) {
        let got: RunEvent = serde_json::from_str(line).unwrap();
        assert_eq!(got, want);
    }
}

#[test]
fn the_end_of_a_run_says_how_to_go_on() {
    let mut renderer = Renderer::new(Vec::new(), Vec::new(), false, false, false);
    renderer.event(&event(
        1,
        EventKind::AssistantText {
            text: "half a line".into(),
        },
    ));
    renderer.interrupted("t9");
    renderer.answer_with("t9");
    renderer.failed(&"the model is unreachable");
    let (out, err) = renderer.into_inner();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "half a line\nAnswer with: cove reply t9 \"...\"\n"
    );
    assert_eq!(
        String::from_utf8(err).unwrap(),
        "cove: interrupted; continue with: cove resume t9\ncove: the model is unreachable\n"
    );
    // In JSON mode only the interruption is said (on stderr); the events say the rest.
    let mut renderer = Renderer::new(Vec::new(), Vec::new(), true, false, false);
    renderer.interrupted("t9");
    renderer.answer_with("t9");
    renderer.failed(&"x");
    renderer.workspace(std::path::Path::new("/w"));
    let (out, err) = renderer.into_inner();
    assert!(out.is_empty());
    assert_eq!(
        String::from_utf8(err).unwrap(),
        "cove: interrupted; continue with: cove resume t9\n"
    );
}

#[test]
fn a_paused_run_prompts_after_its_open_line() {
    let mut renderer = Renderer::new(Vec::new(), Vec::new(), false, false, false);
    renderer.event(&event(
        1,
        EventKind::AssistantText {
            text: "Which colour?".into(),
        },
    ));
    renderer.prompt_for_answer(false);
    renderer.prompt_for_answer(true);
    assert_eq!(
        String::from_utf8(renderer.into_inner().0).unwrap(),
        "Which colour?\nYour answer (empty to stop here): When you are done in the browser, press Enter (or type a note): "
    );
}

#[test]
fn colour_wraps_lines_only_when_asked() {
    let mut renderer = Renderer::new(Vec::new(), Vec::new(), false, true, false);
    renderer.event(&event(
        1,
        EventKind::ToolFailed {
            call_id: "c".into(),
            tool: "read_file".into(),
            error: "no such file".into(),
        },
    ));
    assert_eq!(
        String::from_utf8(renderer.into_inner().0).unwrap(),
        "\x1b[31m  ✗ read_file: no such file\x1b[0m\n"
    );
}

#[tokio::test]
async fn the_spinners_ticker_ends_with_the_renderer() {
    let renderer = Renderer::new(Vec::new(), Vec::new(), false, false, true);
    let ticker = renderer.spinner.ticker.as_ref().map(|t| t.abort_handle());
    drop(renderer);
    tokio::task::yield_now().await;
    let ticker = ticker.expect("a spinner has a ticker");
    for _ in 0..100 {
        if ticker.is_finished() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("the ticker outlived its renderer");
}

#[test]
fn a_permission_request_shows_the_whole_command_and_every_reason() {
    let command = format!(
        "rm -rf /srv/old-cache && true {} && sh -c 'rm -rf /srv/precious'",
        "clean-".repeat(40)
    );
    let out = render(
        false,
        &[event(
            1,
            EventKind::PermissionRequest {
                request_id: "q1".into(),
                call_id: "c1".into(),
                tool: "execute_command".into(),
                summary: format!("run `{command}`"),
                why: "no walls (--sandbox host): every command runs as you\nthe command runs code it is given as text (sh -c)".into(),
                arguments: serde_json::json!({"command": command}),
                decisions: vec![],
            },
        )],
    );
    let shown: String = out.split_whitespace().collect();
    let wanted: String = command.split_whitespace().collect();
    assert!(
        shown.contains(&wanted),
        "the whole command is shown:\n{out}"
    );
    assert!(out.contains("- no walls"), "{out}");
    assert!(
        out.contains("- the command runs code it is given as text"),
        "{out}"
    );
    assert!(
        out.lines().all(|l| l.chars().count() <= WRAP_COLUMNS + 4),
        "{out}"
    );
}

#[test]
fn wrapping_keeps_every_character() {
    let text = format!("a {} b", "x".repeat(250));
    let lines = wrap(&text, 100);
    assert_eq!(lines.concat().replace(' ', ""), text.replace(' ', ""));
    assert!(lines.iter().all(|l| l.chars().count() <= 100));
}
