//! Message tools: talking to the user. Each ends the run.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use cove_protocol::takeover::StartTakeover;

use super::{Control, ToolDef, ToolEnv, ToolResult, tool};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Ask {
    /// The question, with what the user needs to know to answer it.
    text: String,
    /// Workspace files the user should look at.
    attachments: Option<Vec<String>>,
}

async fn ask(_env: &ToolEnv, a: Ask) -> ToolResult {
    let mut result = ToolResult::ok("Asked the user; the run pauses until they answer.");
    result.control = Some(Control::Ask {
        text: a.text,
        attachments: a.attachments.unwrap_or_default(),
    });
    result
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Complete {
    /// What was done, for the user.
    text: Option<String>,
    /// Workspace files that make up the result.
    attachments: Option<Vec<String>>,
}

async fn complete(_env: &ToolEnv, a: Complete) -> ToolResult {
    let mut result = ToolResult::ok("The task is marked complete.");
    result.control = Some(Control::Complete {
        text: a.text,
        attachments: a.attachments.unwrap_or_default(),
    });
    result
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Takeover {
    /// What the person should do in the browser (log in, solve the captcha) and tell you.
    text: String,
}

async fn web_browser_takeover(env: &ToolEnv, a: Takeover) -> ToolResult {
    let request = StartTakeover {
        message: Some(a.text.clone()),
        ttl_secs: None,
    };
    match env.sandbox.takeover_start(&request).await {
        Ok(grant) => {
            // The link carries a secret: it goes to the person, never into the history.
            let mut result = ToolResult::ok(format!(
                "A person has been given the browser (takeover {}, until {}); you continue once they hand it back.",
                grant.id, grant.expires_at
            ));
            result.control = Some(Control::Takeover {
                text: a.text,
                grant,
            });
            result
        }
        Err(e) => ToolResult::from_client(&e),
    }
}

/// The message tools.
pub fn tools() -> Vec<ToolDef> {
    vec![
        tool! {
            name: "ask",
            args: Ask,
            summary: Some("text"),
            raw: &["text"],
            description: "Ask the user a question and wait for the answer. Use only when you cannot go on without their input (a missing requirement, a decision only they can make, credentials).",
            example: json!({"text": "Which of the two layouts in mockups/ should I build?", "attachments": ["mockups/a.png", "mockups/b.png"]}),
            run: ask,
        },
        tool! {
            name: "complete",
            args: Complete,
            summary: Some("text"),
            raw: &["text"],
            description: "Declare the task done, once every step of the plan is finished and checked.",
            example: json!({"text": "The report is in report.md; the chart is chart.png.", "attachments": ["report.md"]}),
            run: complete,
        },
        tool! {
            name: "web_browser_takeover",
            args: Takeover,
            summary: Some("text"),
            raw: &["text"],
            description: "Ask a person to take over the browser for something you must not or cannot do (a login, a captcha, a payment): they get a live view of it and hand it back when done; you then continue with the browser's fresh state and their note.",
            example: json!({"text": "Please log in to the dashboard, then hand the browser back."}),
            run: web_browser_takeover,
        },
    ]
}
