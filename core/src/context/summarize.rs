//! Optional summarization (`--context summarize`): when the history outgrows the window, the
//! model writes a summary of the older part, which stands in for it from then on. The
//! originals stay stored, and `expand_message` still reads them.

use futures_util::StreamExt;

use super::compress::Entry;
use super::tokens::TokenCounter;
use crate::llm::retry::RetryPolicy;
use crate::llm::{ChatMessage, ChatProvider, ChatRequest, LlmError, Role, StreamEvent, Usage};
use crate::store::Summary;

/// The instructions of the summarizing call.
pub const SUMMARY_PROMPT: &str = "You condense the earlier part of an autonomous agent's working session so the agent can carry on without it. The agent works in a Linux sandbox with a shell, files and a browser.\n\nWrite a summary that lets the agent continue as if it remembered everything that matters:\n- the task and every requirement or preference the user stated, in their words where it matters;\n- what has been done: files created or changed (with paths), commands run and what they showed, pages visited and what was found;\n- decisions made and why; what failed and what was learnt from it;\n- the state of the plan (todo.md): what is finished and what is next;\n- facts the agent will need later (names, numbers, URLs, credentials the user gave, error messages).\n\nBe specific and complete rather than short, but leave out chatter and repeated output. Refer to messages by their ids where a detail is too long to keep, so the agent can read them again with expand_message. Write plain text; do not call tools.";

/// Turns this new are never summarized: the model is acting on them.
const KEEP_TURNS: usize = 4;

/// The summary as the model is shown it.
pub fn summary_message(summary: &Summary) -> ChatMessage {
    ChatMessage::user(format!(
        "[Summary of messages {} to {}, written to save context. The originals are stored: expand_message with a message_id reads any of them.]\n\n{}",
        summary.first, summary.last, summary.text
    ))
}

/// The history with the messages a summary stands for replaced by it.
pub fn apply(entries: Vec<Entry>, summary: &Summary, counter: &TokenCounter) -> Vec<Entry> {
    let mut out = Vec::with_capacity(entries.len());
    let mut placed = false;
    for entry in entries {
        if (summary.first..=summary.last).contains(&entry.id) {
            if !placed {
                out.push(Entry::new(summary.id, summary_message(summary), counter));
                placed = true;
            }
        } else {
            out.push(entry);
        }
    }
    out
}

/// The part of the history worth summarizing: after the first message, up to the newest
/// turns, on a turn boundary (a tool result never loses its call). None if it is small.
pub fn summarizable(entries: &[Entry], min_tokens: usize) -> Option<std::ops::Range<usize>> {
    let starts: Vec<usize> = entries
        .iter()
        .enumerate()
        .skip(1)
        .filter(|(_, e)| e.message().role != Role::Tool)
        .map(|(i, _)| i)
        .collect();
    if starts.len() <= KEEP_TURNS {
        return None;
    }
    let end = starts[starts.len() - KEEP_TURNS];
    let range = 1..end;
    let tokens: usize = entries[range.clone()].iter().map(Entry::tokens).sum();
    (tokens >= min_tokens).then_some(range)
}

/// The part as a transcript for the summarizer, each message cut so the whole stays within
/// `budget` tokens.
pub fn transcript(entries: &[Entry], budget: usize, counter: &TokenCounter) -> String {
    // Each message's header line takes up to sixteen tokens of the budget.
    let budget = budget.saturating_sub(entries.len() * 16);
    let total: usize = entries.iter().map(Entry::tokens).sum::<usize>().max(1);
    let mut out = String::new();
    for entry in entries {
        let m = entry.message();
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool result",
        };
        let mut text = m.text();
        for call in &m.tool_calls {
            text.push_str(&format!("\n[calls {} with {}]", call.name, call.arguments));
        }
        // Each message gets its share of the budget, in proportion to its size.
        let share = (entry.tokens() * budget / total).max(10);
        let tokens = counter.text(&text).max(1);
        if tokens > share {
            let chars = text.chars().count() * share / tokens;
            text = text.chars().take(chars).collect::<String>() + " […]";
        }
        out.push_str(&format!(
            "--- message {} ({role}) ---\n{text}\n\n",
            entry.id
        ));
    }
    out
}

/// Asks the model for a summary of `entries`, within `window`; the summary and what the call
/// took.
pub async fn summarize(
    provider: &dyn ChatProvider,
    model: &str,
    entries: &[Entry],
    window: usize,
    counter: &TokenCounter,
    retry: RetryPolicy,
) -> Result<(String, Usage), LlmError> {
    let max_tokens = (window / 8).clamp(256, 4_000);
    let room = window
        .saturating_sub(max_tokens + counter.text(SUMMARY_PROMPT) + window / 10 + 200)
        .max(500);
    let request = ChatRequest::new(
        model,
        SUMMARY_PROMPT,
        vec![ChatMessage::user(format!(
            "Summarize this part of the session:\n\n{}",
            transcript(entries, room, counter)
        ))],
        Vec::new(),
        max_tokens as u32,
    );
    let mut attempt = 1;
    loop {
        match collect(provider, &request).await {
            Ok(answer) => return Ok(answer),
            Err(e) if e.is_retryable() && attempt < retry.max_attempts => {
                tokio::time::sleep(retry.delay(attempt, e.retry_after())).await;
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

async fn collect(
    provider: &dyn ChatProvider,
    request: &ChatRequest,
) -> Result<(String, Usage), LlmError> {
    let mut stream = provider.stream(request).await?;
    let mut text = String::new();
    let mut usage = Usage::default();
    while let Some(event) = stream.next().await {
        match event? {
            StreamEvent::TextDelta(t) => text.push_str(&t),
            StreamEvent::Usage(u) => usage = u,
            StreamEvent::Finish(_) => break,
            _ => {}
        }
    }
    Ok((text.trim().to_string(), usage))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(n: usize) -> Vec<Entry> {
        let c = TokenCounter::estimate();
        let mut out = vec![Entry::new(1, ChatMessage::user("task"), &c)];
        for i in 0..n {
            let id = 2 + 2 * i as i64;
            out.push(Entry::new(
                id,
                ChatMessage::assistant(format!("step {i}")),
                &c,
            ));
            out.push(Entry::new(
                id + 1,
                ChatMessage::user("word ".repeat(200)),
                &c,
            ));
        }
        out
    }

    #[test]
    fn the_older_part_is_summarized_and_replaced_in_place() {
        let all = entries(10);
        let range = summarizable(&all, 100).unwrap();
        assert_eq!(range.start, 1);
        assert_eq!(all.len() - range.end, KEEP_TURNS, "the newest turns stay");
        assert!(summarizable(&entries(2), 0).is_none(), "too few turns");
        assert!(
            summarizable(&all, 1_000_000).is_none(),
            "too small to bother"
        );
        let summary = Summary {
            id: 99,
            first: all[range.start].id,
            last: all[range.end - 1].id,
            text: "did things".into(),
        };
        let applied = apply(all.clone(), &summary, &TokenCounter::estimate());
        assert_eq!(applied.len(), all.len() - range.len() + 1);
        assert_eq!(applied[0].id, 1);
        assert_eq!(applied[1].id, 99);
        assert!(applied[1].message().text().contains("did things"));
        assert_eq!(applied[2].id, all[range.end].id);
    }

    #[test]
    fn transcripts_stay_within_budget() {
        let c = TokenCounter::estimate();
        let all = entries(50);
        let t = transcript(&all[1..], 2_000, &c);
        assert!(c.text(&t) < 2_300, "{}", c.text(&t));
        assert!(t.contains("--- message 2 (assistant) ---"));
    }
}
