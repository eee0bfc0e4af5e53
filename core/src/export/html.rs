//! A thread as one HTML page that needs nothing else: its style inside, its pictures as
//! `data:` addresses, no script, and a policy that lets it fetch nothing at all.

use std::fmt::Write as _;
use std::time::{Duration, UNIX_EPOCH};

use super::{Step, Transcript};

const STYLE: &str = "
body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1d2330;background:#fafafa}
h1{font-size:1.4rem;margin:0 0 .25rem}
.meta{color:#5b6475;margin-bottom:1.5rem}
.step{background:#fff;border:1px solid #e1e4ea;border-radius:8px;padding:.6rem .9rem;margin:.6rem 0}
.step .when{float:right;color:#8a93a5;font-size:.8rem}
.user{border-left:4px solid #3866d6}
.assistant{border-left:4px solid #2e9b63}
.tool.failed{border-left:4px solid #c33d3d}
.permission,.ask,.plan{border-left:4px solid #d69a1f}
.note,.run{color:#5b6475;background:transparent;border-style:dashed}
.label{font-weight:600;margin-right:.4rem}
pre{white-space:pre-wrap;word-break:break-word;background:#f2f4f7;border-radius:6px;padding:.5rem;margin:.4rem 0;max-height:28rem;overflow:auto;font-size:.85rem}
.text{white-space:pre-wrap}
img{display:block;max-width:min(100%,48rem);border:1px solid #e1e4ea;border-radius:6px;margin-top:.4rem}
details>summary{cursor:pointer}
table{border-collapse:collapse;margin:.5rem 0}td,th{padding:.2rem .6rem;border-bottom:1px solid #e1e4ea;text-align:left}
";

/// `transcript` as a page.
pub(super) fn page(transcript: &Transcript) -> String {
    let thread = &transcript.thread;
    let mut out = String::with_capacity(64 * 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{title} · Cove</title><style>{STYLE}</style></head><body>\n\
         <h1>{title}</h1>\n<div class=\"meta\">thread <code>{id}</code> · {status} · {model} · {sandbox} · {when}<br>{cost}</div>\n",
        title = escape(&thread.title),
        id = escape(&thread.id),
        status = escape(&thread.status),
        model = escape(&thread.model),
        sandbox = escape(&thread.sandbox),
        when = time(u64::try_from(thread.created_at).unwrap_or(0)),
        cost = escape(&super::markdown::cost_line(transcript)),
    );
    for step in &transcript.steps {
        step_html(&mut out, step);
    }
    if !transcript.plans.is_empty() {
        out.push_str("<h2>The plan, version by version</h2>\n");
        for plan in &transcript.plans {
            let _ = writeln!(
                out,
                "<div class=\"step plan\"><span class=\"label\">version {} · {}</span>{}<pre>{}</pre></div>",
                plan.version,
                escape(plan.status.as_str()),
                plan.reason
                    .as_deref()
                    .map(|r| format!(" rejected: {}", escape(r)))
                    .unwrap_or_default(),
                escape(plan.to_markdown().trim_end())
            );
        }
    }
    out.push_str("</body></html>\n");
    out
}

fn step_html(out: &mut String, step: &Step) {
    let (class, at, body) = match step {
        Step::RunStarted { at, model } => (
            "note run",
            *at,
            format!("a run began with {}", escape(model)),
        ),
        Step::User { at, text } => (
            "user",
            *at,
            format!(
                "<span class=\"label\">You</span><div class=\"text\">{}</div>",
                escape(text)
            ),
        ),
        Step::Assistant { at, text } => (
            "assistant",
            *at,
            format!(
                "<span class=\"label\">Agent</span><div class=\"text\">{}</div>",
                escape(text)
            ),
        ),
        Step::Tool { at, ok, .. } => (
            if *ok { "tool" } else { "tool failed" },
            *at,
            tool_html(step),
        ),
        Step::Ask { at, text } => (
            "ask",
            *at,
            format!(
                "<span class=\"label\">The agent asked</span><div class=\"text\">{}</div>",
                escape(text)
            ),
        ),
        Step::Permission {
            at,
            tool,
            summary,
            why,
            decision,
            reason,
            ..
        } => (
            "permission",
            *at,
            format!(
                "<span class=\"label\">Permission asked for {}</span><code>{}</code><div>{}</div><div>answer: <b>{}</b>{}</div>",
                escape(tool),
                escape(summary),
                escape(why),
                escape(decision.as_deref().unwrap_or("none yet")),
                reason
                    .as_deref()
                    .map(|r| format!(" ({})", escape(r)))
                    .unwrap_or_default()
            ),
        ),
        Step::Plan { at, version, text } => (
            "plan",
            *at,
            format!(
                "<span class=\"label\">Plan proposed (version {version})</span><pre>{}</pre>",
                escape(text.trim_end())
            ),
        ),
        Step::Note { at, text } => ("note", *at, escape(text)),
        Step::Complete { at, text } => (
            "assistant",
            *at,
            format!(
                "<span class=\"label\">Done</span><div class=\"text\">{}</div>",
                escape(text.as_deref().unwrap_or(""))
            ),
        ),
        Step::RunEnded {
            at,
            status,
            usage,
            cost,
            duration_ms,
        } => (
            "note run",
            *at,
            escape(&Step::run_end_line(status, usage, *cost, *duration_ms)),
        ),
    };
    let _ = writeln!(
        out,
        "<div class=\"step {class}\"><span class=\"when\">{}</span>{body}</div>",
        time(at)
    );
}

/// A tool call: what it was, its arguments (folded), its result and the browser after it.
fn tool_html(step: &Step) -> String {
    let Step::Tool {
        tool,
        summary,
        arguments,
        output,
        ok,
        duration_ms,
        screenshot,
        ..
    } = step
    else {
        return String::new();
    };
    let mut body = format!(
        "<span class=\"label\">{} {}</span>{}{}",
        Step::call_mark(output, *ok),
        escape(tool),
        summary
            .as_deref()
            .map(|s| format!("<code>{}</code>", escape(s)))
            .unwrap_or_default(),
        duration_ms
            .map(|ms| format!(" · {:.1} s", ms as f64 / 1000.0))
            .unwrap_or_default()
    );
    let arguments = serde_json::to_string_pretty(arguments).unwrap_or_default();
    let _ = write!(
        body,
        "<details><summary>arguments</summary><pre>{}</pre></details>",
        escape(&arguments)
    );
    match output {
        Some(text) => {
            let _ = write!(body, "<pre class=\"output\">{}</pre>", escape(text));
        }
        None => body.push_str("<div>it never ended</div>"),
    }
    if let Some(jpeg) = screenshot {
        let _ = write!(
            body,
            "<img class=\"screenshot\" alt=\"the browser after {}\" src=\"data:image/jpeg;base64,{jpeg}\">",
            escape(tool)
        );
    }
    body
}

/// Milliseconds since the epoch as a UTC date and time.
fn time(ms: u64) -> String {
    let at = UNIX_EPOCH + Duration::from_millis(ms);
    humantime::format_rfc3339_seconds(at)
        .to_string()
        .replace('T', " ")
        .replace('Z', " UTC")
}

/// `text` safe inside an element or a quoted attribute.
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
