//! The knowledge base in the system prompt: what the user told Cove to keep in mind, for
//! every thread (agent entries) or one thread, newest first within a token budget.

use super::tokens::TokenCounter;
use crate::store::Knowledge;

/// The default budget of the knowledge section, in tokens.
pub const DEFAULT_BUDGET: usize = 4_000;

/// Most text one entry keeps (the first 100 KB of a file).
pub const MAX_ENTRY_BYTES: usize = 100 * 1024;

/// The system prompt section for `entries` (agent entries first, then the thread's, each
/// newest first), within `budget` tokens; empty when there is nothing to say. An entry that
/// does not fit whole is cut to what is left of the budget, and the rest are left out.
pub fn section(entries: &[Knowledge], budget: usize, counter: &TokenCounter) -> String {
    let mut ordered: Vec<&Knowledge> = entries.iter().collect();
    ordered.sort_by_key(|k| {
        (
            k.thread_id.is_some(),
            std::cmp::Reverse((k.created_at, k.id)),
        )
    });
    let header = "\n\n# Knowledge\nWhat the user asked you to keep in mind (newest first). It outranks your assumptions; the task outranks it.\n";
    // Room for the closing line about left-out entries.
    let mut used = counter.text(header) + 30;
    let mut body = String::new();
    let mut left_out = 0;
    for entry in ordered {
        let scope = if entry.thread_id.is_some() {
            "this thread"
        } else {
            "all threads"
        };
        let block = format!(
            "\n## {} ({scope})\n{}\n",
            entry.name,
            entry.content.trim_end()
        );
        let tokens = counter.text(&block);
        if used + tokens <= budget {
            used += tokens;
            body.push_str(&block);
            continue;
        }
        let room = budget.saturating_sub(used + 40);
        if left_out == 0 && room >= 100 {
            // Cut by characters in proportion, then check: the estimate may overshoot.
            let chars = block.chars().count();
            let mut keep = chars * room / tokens.max(1);
            loop {
                let cut: String = block.chars().take(keep).collect();
                let cut =
                    format!("{cut}\n[… the rest of this entry is left out: knowledge budget]\n");
                let t = counter.text(&cut);
                if used + t <= budget || keep == 0 {
                    if used + t <= budget {
                        used += t;
                        body.push_str(&cut);
                    } else {
                        left_out += 1;
                    }
                    break;
                }
                keep = keep * 9 / 10;
            }
        } else {
            left_out += 1;
        }
    }
    if body.is_empty() {
        return String::new();
    }
    let mut out = format!("{header}{body}");
    if left_out > 0 {
        out.push_str(&format!(
            "\n({left_out} older entries are left out to keep within the knowledge budget.)\n"
        ));
    }
    out
}

/// The first [`MAX_ENTRY_BYTES`] of `text`, cut on a character boundary.
pub fn cap_entry(text: &str) -> &str {
    if text.len() <= MAX_ENTRY_BYTES {
        return text;
    }
    let mut end = MAX_ENTRY_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: i64, thread: Option<&str>, name: &str, content: &str, at: i64) -> Knowledge {
        Knowledge {
            id,
            thread_id: thread.map(String::from),
            name: name.into(),
            content: content.into(),
            created_at: at,
        }
    }

    #[test]
    fn agent_entries_come_first_newest_first_within_budget() {
        let counter = TokenCounter::for_model("gpt-4o");
        let entries = vec![
            entry(1, None, "old-style", "Use tabs.", 1),
            entry(2, Some("t1"), "thread-note", "The client is ACME.", 5),
            entry(3, None, "new-style", "Use British spelling.", 3),
        ];
        let s = section(&entries, 4_000, &counter);
        let pos = |n: &str| s.find(n).unwrap();
        assert!(pos("new-style") < pos("old-style"));
        assert!(pos("old-style") < pos("thread-note"));
        assert!(counter.text(&s) <= 4_000);

        let big = "word ".repeat(3_000);
        let entries = vec![
            entry(1, None, "first", &big, 1),
            entry(2, None, "second", &big, 2),
        ];
        let s = section(&entries, 1_000, &counter);
        assert!(counter.text(&s) <= 1_000, "{}", counter.text(&s));
        assert!(s.contains("## second") && !s.contains("## first"));
        assert!(s.contains("1 older entries are left out"));
        assert_eq!(section(&[], 1_000, &counter), "");
    }

    #[test]
    fn entries_keep_the_first_100_kb() {
        let text = "é".repeat(60_000);
        let capped = cap_entry(&text);
        assert!(capped.len() <= MAX_ENTRY_BYTES && capped.len() > MAX_ENTRY_BYTES - 2);
        assert_eq!(cap_entry("short"), "short");
    }
}
