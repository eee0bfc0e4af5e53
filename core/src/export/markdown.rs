//! A thread as Markdown: readable as text, rendered anywhere Markdown is. Screenshots are
//! left out (their steps say one was kept); the HTML and JSON exports hold them.

use std::fmt::Write as _;

use super::{Step, Transcript};

/// `transcript` as a Markdown document.
pub(super) fn document(transcript: &Transcript) -> String {
    let thread = &transcript.thread;
    let mut out = format!(
        "# {}\n\nthread `{}` · {} · {} · {}\n\n{}\n",
        thread.title.trim(),
        thread.id,
        thread.status,
        thread.model,
        thread.sandbox,
        cost_line(transcript)
    );
    for step in &transcript.steps {
        out.push('\n');
        step_markdown(&mut out, step);
    }
    if !transcript.plans.is_empty() {
        out.push_str("\n## The plan, version by version\n");
        for plan in &transcript.plans {
            let _ = write!(
                out,
                "\n### Version {} · {}{}\n\n{}\n",
                plan.version,
                plan.status.as_str(),
                plan.reason
                    .as_deref()
                    .map(|r| format!(" (rejected: {r})"))
                    .unwrap_or_default(),
                plan.to_markdown().trim_end()
            );
        }
    }
    out
}

/// Tokens and cost over the thread's runs, in one line.
pub(super) fn cost_line(transcript: &Transcript) -> String {
    let u = &transcript.usage;
    format!(
        "{} run{} · {} model calls · {} tokens in ({} cached), {} out · {}",
        transcript.runs.len(),
        if transcript.runs.len() == 1 { "" } else { "s" },
        u.calls,
        u.input_tokens,
        u.cached_tokens,
        u.output_tokens,
        transcript
            .cost
            .map_or_else(|| "cost unknown".to_string(), |c| format!("${c:.4}"))
    )
}

fn step_markdown(out: &mut String, step: &Step) {
    match step {
        Step::RunStarted { model, .. } => {
            let _ = writeln!(out, "---\n\n*A run began with {model}.*");
        }
        Step::User { text, .. } => {
            let _ = writeln!(out, "**You:**\n\n{}", quoted(text));
        }
        Step::Assistant { text, .. } => {
            let _ = writeln!(out, "**Agent:**\n\n{}", text.trim());
        }
        Step::Tool {
            tool,
            summary,
            arguments,
            output,
            ok,
            duration_ms,
            screenshot,
            ..
        } => {
            let mark = Step::call_mark(output, *ok);
            let _ = writeln!(
                out,
                "{mark} **{tool}**{}{}\n",
                summary
                    .as_deref()
                    .map(|s| format!(" `{}`", s.replace('`', "'")))
                    .unwrap_or_default(),
                duration_ms
                    .map(|ms| format!(" · {:.1} s", ms as f64 / 1000.0))
                    .unwrap_or_default()
            );
            let arguments = serde_json::to_string_pretty(arguments).unwrap_or_default();
            let _ = writeln!(out, "{}", fenced("json", &arguments));
            match output {
                Some(text) => {
                    let _ = writeln!(out, "{}", fenced("", text));
                }
                None => out.push_str("*It never ended.*\n"),
            }
            if screenshot.is_some() {
                out.push_str("*(The browser's picture after this call is in the HTML export.)*\n");
            }
        }
        Step::Ask { text, .. } => {
            let _ = writeln!(out, "**The agent asked:**\n\n{}", quoted(text));
        }
        Step::Permission {
            tool,
            summary,
            why,
            decision,
            reason,
            ..
        } => {
            let _ = writeln!(
                out,
                "**Permission asked for {tool}:** `{}`: {why}\n\nAnswer: **{}**{}",
                summary.replace('`', "'"),
                decision.as_deref().unwrap_or("none yet"),
                reason
                    .as_deref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default()
            );
        }
        Step::Plan { version, text, .. } => {
            let _ = writeln!(
                out,
                "**Plan proposed (version {version}):**\n\n{}",
                text.trim_end()
            );
        }
        Step::Note { text, .. } => {
            let _ = writeln!(out, "*{}*", text.trim());
        }
        Step::Complete { text, .. } => {
            let _ = writeln!(out, "**Done:** {}", text.as_deref().unwrap_or("").trim());
        }
        Step::RunEnded {
            status,
            usage,
            cost,
            duration_ms,
            ..
        } => {
            let _ = writeln!(
                out,
                "*{}.*",
                Step::run_end_line(status, usage, *cost, *duration_ms)
            );
        }
    }
}

/// `text` as a Markdown quote.
fn quoted(text: &str) -> String {
    text.trim()
        .lines()
        .map(|l| format!("> {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `text` in a fence longer than any run of backticks inside it.
fn fenced(language: &str, text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat((longest + 1).max(3));
    format!("{fence}{language}\n{}\n{fence}", text.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fence_outlasts_the_backticks_inside_it() {
        assert_eq!(fenced("", "a ```` b"), "`````\na ```` b\n`````");
        assert_eq!(fenced("json", "{}"), "```json\n{}\n```");
    }
}
