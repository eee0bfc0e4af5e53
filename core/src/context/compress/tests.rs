//! The compression's cases: what is cut, in which order, and what stays the same call to call.

use super::*;
use crate::llm::ToolCall;
use serde_json::json;

fn counter() -> TokenCounter {
    TokenCounter::for_model("gpt-4o")
}

fn words(n: usize, seed: &str) -> String {
    (0..n).map(|i| format!("{seed}{i} ")).collect()
}

/// A native history: task, then `turns` of (assistant call, tool result of `size` words).
fn history(turns: usize, size: usize) -> Vec<Entry> {
    let c = counter();
    let mut out = vec![Entry::new(1, ChatMessage::user("Build the site"), &c)];
    for t in 0..turns {
        let id = 2 + 2 * t as i64;
        let mut a = ChatMessage::assistant(format!("Step {t}"));
        a.tool_calls.push(ToolCall {
            id: format!("c{t}"),
            name: "create_file".into(),
            arguments: json!({"file_path": format!("f{t}.html"), "file_contents": words(100, "html")}),
        });
        out.push(Entry::new(id, a, &c));
        let r =
            ChatMessage::tool_result(&format!("c{t}"), "create_file", words(size, "out"), false);
        out.push(Entry::new(id + 1, r, &c));
    }
    out
}

fn total(messages: &[ChatMessage]) -> usize {
    messages.iter().map(|m| counter().message(m)).sum()
}

#[test]
fn a_history_that_fits_is_sent_as_it_is() {
    let entries = history(5, 100);
    let fitted = fit(
        &entries,
        Budget {
            window: 100_000,
            max_tokens: 4_000,
            fixed: 1_000,
        },
        &Calibration::default(),
    )
    .unwrap();
    assert!(!fitted.stats.compressed());
    assert_eq!(fitted.max_tokens, 4_000);
    let sent: Vec<_> = entries.iter().map(|e| e.message().clone()).collect();
    assert_eq!(fitted.messages, sent);
}

#[test]
fn arguments_go_first_then_old_tool_results_are_truncated_with_a_pointer() {
    let entries = history(30, 1_000);
    let whole: usize = entries.iter().map(Entry::tokens).sum();
    let budget = Budget {
        window: whole / 2,
        max_tokens: 2_000,
        fixed: 500,
    };
    let fitted = fit(&entries, budget, &Calibration::default()).unwrap();
    let sent = total(&fitted.messages);
    assert!(
        sent + budget.fixed + fitted.max_tokens <= budget.window,
        "{sent} + fixed + {} > {}",
        fitted.max_tokens,
        budget.window
    );
    assert!(fitted.stats.arguments_dropped > 0 && fitted.stats.truncated > 0);
    assert_eq!(fitted.stats.omitted, 0, "truncation was enough");
    assert_eq!(fitted.messages.len(), entries.len());
    // The oldest result is cut and says where the whole is; the newest three are whole.
    let oldest = fitted.messages[2].text();
    assert!(
        oldest.contains("expand_message with message_id 3"),
        "{oldest}"
    );
    for back in [1, 3, 5] {
        let i = entries.len() - back;
        assert_eq!(&fitted.messages[i], entries[i].message(), "message {i}");
    }
    // Old calls keep their ids and keys; the long value is gone.
    let old_call = &fitted.messages[1].tool_calls[0];
    assert_eq!(old_call.id, "c0");
    assert_eq!(old_call.arguments["file_path"], "f0.html");
    assert!(
        old_call.arguments["file_contents"]
            .as_str()
            .unwrap()
            .contains("expand_message 2")
    );
}

#[test]
fn middle_out_keeps_the_task_and_the_newest_turn_and_pairs_stay_whole() {
    let entries = history(200, 300);
    let budget = Budget {
        window: 8_000,
        max_tokens: 1_000,
        fixed: 1_000,
    };
    let fitted = fit(&entries, budget, &Calibration::default()).unwrap();
    assert!(fitted.stats.omitted > 0);
    let m = &fitted.messages;
    assert_eq!(m[0].text(), "Build the site", "the task stays");
    let note = m
        .iter()
        .position(|x| x.text().starts_with("[Context note:"))
        .expect("a note where messages are left out");
    assert!(note > 1 && note < m.len() - 2, "the gap is in the middle");
    assert_eq!(
        m[1].text(),
        "Step 0",
        "the oldest turns after the task stay too"
    );
    assert_eq!(m.last(), entries.last().map(Entry::message));
    // Every tool result follows the assistant message that called it.
    for (i, msg) in m.iter().enumerate() {
        if let Some(id) = &msg.tool_call_id {
            assert!(
                m[..i]
                    .iter()
                    .rev()
                    .find(|p| p.role == Role::Assistant)
                    .is_some_and(|p| p.tool_calls.iter().any(|c| &c.id == id)),
                "result {id} lost its call"
            );
        }
    }
    assert!(total(m) + budget.fixed + fitted.max_tokens <= budget.window);
}

#[test]
fn calibration_makes_room_for_what_the_provider_really_counts() {
    let entries = history(40, 500);
    let budget = Budget {
        window: 20_000,
        max_tokens: 2_000,
        fixed: 500,
    };
    let mut calibration = Calibration::default();
    calibration.observe(1_000, 1_500);
    let fitted = fit(&entries, budget, &calibration).unwrap();
    let sent = calibration.apply(total(&fitted.messages) + budget.fixed);
    assert!(sent + fitted.max_tokens <= budget.window, "{sent}");
}

#[test]
fn the_output_cap_shrinks_before_giving_up_and_the_impossible_fails() {
    let entries = history(1, 50);
    let fitted = fit(
        &entries,
        Budget {
            window: 4_000,
            max_tokens: 4_000,
            fixed: 1_500,
        },
        &Calibration::default(),
    )
    .unwrap();
    assert!(fitted.max_tokens >= 1_024 && fitted.max_tokens < 4_000);
    let err = fit(
        &entries,
        Budget {
            window: 4_000,
            max_tokens: 4_000,
            fixed: 3_900,
        },
        &Calibration::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("4000"), "{err}");
}

#[test]
fn xml_parameters_are_stripped_by_value() {
    let long = "x".repeat(500);
    let text = format!(
        "Writing it.\n<function_calls>\n<invoke name=\"create_file\">\n<parameter name=\"file_path\">a.html</parameter>\n<parameter name=\"file_contents\">{long}</parameter>\n</invoke>\n</function_calls>"
    );
    let stripped = strip_arguments(&ChatMessage::assistant(text), 7).unwrap();
    let t = stripped.text();
    assert!(t.contains("<parameter name=\"file_path\">a.html</parameter>"));
    assert!(t.contains("[500 characters dropped to save context; expand_message 7]"));
    assert!(!t.contains(&long));
    assert!(strip_arguments(&ChatMessage::assistant("short"), 1).is_none());
}

/// Tokens at the start of `now` that repeat the start of `before`, message by message.
fn shared_prefix(before: &[ChatMessage], now: &[ChatMessage]) -> usize {
    before
        .iter()
        .zip(now)
        .take_while(|(a, b)| a == b)
        .map(|(a, _)| counter().message(a))
        .sum()
}

/// Grows a native history by `turns` calls of `size`-word results, fitting each call
/// into `budget` with `plan`; returns the share of all sent tokens that repeated the
/// previous call's start, and the lowest share of one call.
fn replay(
    turns: usize,
    size: usize,
    budget: Budget,
    mut plan: impl FnMut(&[Entry]) -> Fitted,
) -> (f64, f64) {
    let all = history(turns, size);
    let (mut shared, mut sent, mut lowest) = (0, 0, 1.0_f64);
    let mut previous: Vec<ChatMessage> = Vec::new();
    for end in (3..=all.len()).step_by(2) {
        let fitted = plan(&all[..end]);
        let total: usize = fitted.messages.iter().map(|m| counter().message(m)).sum();
        assert!(
            total + budget.fixed + fitted.max_tokens <= budget.window,
            "call {end} overflows"
        );
        let same = shared_prefix(&previous, &fitted.messages);
        if fitted.stats.compressed() {
            lowest = lowest.min(same as f64 / total as f64);
        }
        shared += same;
        sent += total;
        previous = fitted.messages;
    }
    (shared as f64 / sent as f64, lowest)
}

#[test]
fn kept_cuts_keep_each_call_a_prefix_of_the_next() {
    let budget = Budget {
        window: 40_000,
        max_tokens: 4_000,
        fixed: 2_000,
    };
    let calibration = Calibration::default();
    let mut cuts = Cuts::default();
    let (stable, stable_lowest) = replay(300, 1_500, budget, |entries| {
        cuts.fit(entries, budget, &calibration, &counter()).unwrap()
    });
    let (fresh, _) = replay(300, 1_500, budget, |entries| {
        fit(entries, budget, &calibration).unwrap()
    });
    assert!(cuts.recuts() > 0, "the run was long enough to need re-cuts");
    assert!(
        stable >= 0.8,
        "kept cuts: {stable:.3} of the tokens repeated the previous call's start"
    );
    assert!(
        stable > fresh + 0.1,
        "kept cuts {stable:.3} against fresh plans {fresh:.3}"
    );
    assert!(stable_lowest > 0.0, "{stable_lowest}");
}

#[test]
fn a_call_after_a_cut_changes_only_the_end_of_the_prompt() {
    let entries = history(60, 400);
    let budget = Budget {
        window: 30_000,
        max_tokens: 2_000,
        fixed: 1_000,
    };
    let calibration = Calibration::default();
    let mut cuts = Cuts::default();
    let first = cuts
        .fit(&entries[..81], budget, &calibration, &counter())
        .unwrap();
    assert!(first.stats.compressed());
    // Two more turns: only the turn that was the newest may change (cut now); everything
    // before it comes back as it was sent.
    let next = cuts
        .fit(&entries[..85], budget, &calibration, &counter())
        .unwrap();
    let same = first
        .messages
        .iter()
        .zip(&next.messages)
        .take_while(|(a, b)| a == b)
        .count();
    assert!(
        same >= first.messages.len() - 2,
        "{same} of {}",
        first.messages.len()
    );
    assert_eq!(next.messages.last(), Some(entries[84].message()));
    assert_eq!(
        next.messages[0].text(),
        "Build the site",
        "the task stays whole"
    );
}

#[test]
fn a_fresh_plan_keeps_the_task_and_the_newest_user_message() {
    let c = counter();
    let mut entries = history(40, 300);
    let said = Entry::new(500, ChatMessage::user("NEW INSTRUCTION: use tabs"), &c);
    entries.push(said);
    entries.extend(history(40, 300).into_iter().skip(1).map(|e| {
        let id = e.id + 1_000;
        Entry::new(id, e.message().clone(), &c)
    }));
    let budget = Budget {
        window: 12_000,
        max_tokens: 1_000,
        fixed: 1_000,
    };
    let mut cuts = Cuts::default();
    let fitted = cuts
        .fit(&entries, budget, &Calibration::default(), &c)
        .unwrap();
    assert!(fitted.stats.omitted > 0, "{:?}", fitted.stats);
    let texts: Vec<String> = fitted.messages.iter().map(ChatMessage::text).collect();
    assert_eq!(texts[0], "Build the site");
    assert!(
        texts.iter().any(|t| t == "NEW INSTRUCTION: use tabs"),
        "the newest user message was left out"
    );
}
