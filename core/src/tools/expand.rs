//! `expand_message`: reading back a stored message that the context shows cut or left out.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::{ToolDef, ToolEnv, ToolResult, tool};
use crate::llm::Role;
use crate::store::Store;

/// The tool's name.
pub const EXPAND_MESSAGE: &str = "expand_message";

/// Where `expand_message` reads: the stored messages of the thread being run.
#[derive(Debug, Clone)]
pub struct MessageArchive {
    pub store: Arc<Store>,
    pub thread: String,
    /// Characters per page: a page must fit the model's window with room to spare.
    pub page_chars: usize,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Expand {
    /// The id the truncation note or context note gives.
    message_id: i64,
    /// For a message too long for one result: which page, from 1.
    page: Option<usize>,
}

async fn expand_message(env: &ToolEnv, a: Expand) -> ToolResult {
    let archive = env.archive.clone();
    let Some(archive) = archive else {
        return ToolResult::error("there is no stored conversation to read from");
    };
    let message = match archive.store.llm_message(&archive.thread, a.message_id) {
        Ok(Some(m)) => m,
        Ok(None) => {
            return ToolResult::error(format!(
                "this conversation has no message {}; use an id from a truncation or context note",
                a.message_id
            ));
        }
        Err(e) => return ToolResult::error(format!("cannot read message {}: {e}", a.message_id)),
    };
    let role = match message.role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool result",
    };
    let mut text = message.text();
    for call in &message.tool_calls {
        text.push_str(&format!(
            "\n[tool call {} {}: {}]",
            call.id, call.name, call.arguments
        ));
    }
    let chars: Vec<char> = text.chars().collect();
    let page_chars = archive.page_chars.max(1_000);
    let pages = chars.len().div_ceil(page_chars).max(1);
    let page = a.page.unwrap_or(1);
    if page == 0 || page > pages {
        return ToolResult::error(format!(
            "message {} has {pages} page(s); ask for page 1 to {pages}",
            a.message_id
        ));
    }
    let body: String = chars[(page - 1) * page_chars..(page * page_chars).min(chars.len())]
        .iter()
        .collect();
    let header = if pages == 1 {
        format!("Message {} ({role}), whole:\n", a.message_id)
    } else {
        format!(
            "Message {} ({role}), page {page} of {pages} (ask for page {} next):\n",
            a.message_id,
            (page % pages) + 1
        )
    };
    ToolResult::ok(header + &body)
}

/// The tool.
pub fn tools() -> Vec<ToolDef> {
    vec![tool! {
        name: "expand_message",
        args: Expand,
        summary: Some("message_id"),
        raw: &[],
        description: "Read a stored message of this conversation whole, when the context shows it truncated or left out (the note gives its id). Long messages come in pages.",
        example: json!({"message_id": 42}),
        run: expand_message,
    }
    // It pages its own output to fit the window: capping it would defeat that.
    .uncapped()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ChatMessage;
    use crate::store::NewThread;
    use cove_protocol::client::CovedClient;

    fn env(store: &Arc<Store>, thread: &str, page_chars: usize) -> ToolEnv {
        // expand_message never reaches the sandbox.
        let client = CovedClient::new("http://127.0.0.1:9", "unused").unwrap();
        ToolEnv {
            archive: Some(MessageArchive {
                store: store.clone(),
                thread: thread.to_string(),
                page_chars,
            }),
            ..ToolEnv::new(client, false)
        }
    }

    #[tokio::test]
    async fn messages_come_back_whole_or_in_pages_and_only_from_this_thread() {
        let store = Arc::new(Store::in_memory().unwrap());
        let thread = store
            .create_thread(NewThread::new("t", "m", "native", "x"))
            .unwrap();
        let other = store
            .create_thread(NewThread::new("o", "m", "native", "x"))
            .unwrap();
        let text: String = (0..2_500).map(|i| format!("{i:04} ")).collect();
        let id = store
            .append_llm(
                &thread.id,
                None,
                &ChatMessage::tool_result("c1", "read_file", text.clone(), false),
            )
            .unwrap();
        let foreign = store
            .append_llm(&other.id, None, &ChatMessage::user("not yours"))
            .unwrap();
        let tool = tools().remove(0);

        let whole = tool
            .call(
                &env(&store, &thread.id, 50_000),
                serde_json::json!({"message_id": id}),
            )
            .await;
        assert!(whole.ok);
        assert!(whole.text.contains(&text), "whole, not capped");

        let env = env(&store, &thread.id, 5_000);
        let mut pages = String::new();
        for page in 1..=3 {
            let r = tool
                .call(&env, serde_json::json!({"message_id": id, "page": page}))
                .await;
            assert!(r.ok, "{}", r.text);
            assert!(r.text.contains(&format!("page {page} of 3")), "{}", r.text);
            pages.push_str(r.text.split_once(":\n").unwrap().1);
        }
        assert_eq!(pages, text, "the pages add up to the message");
        let beyond = tool
            .call(&env, serde_json::json!({"message_id": id, "page": 4}))
            .await;
        assert!(!beyond.ok && beyond.text.contains("1 to 3"));
        let stranger = tool
            .call(&env, serde_json::json!({"message_id": foreign}))
            .await;
        assert!(!stranger.ok, "another thread's message is not readable");
    }
}
