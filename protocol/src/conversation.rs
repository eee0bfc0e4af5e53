//! The conversation with a model, whatever the provider: its messages and what a call cost
//! in tokens. Shared by the model providers, which speak it, and the store, which keeps it.

use serde::{Deserialize, Serialize};

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
    /// The result of a native tool call.
    Tool,
}

/// A piece of message content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    Text {
        text: String,
    },
    /// A base64-encoded image.
    Image {
        mime: String,
        data: String,
    },
}

/// A tool call the model made (native tool calling).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: serde_json::Value,
}

/// One message of a conversation, whatever the provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: Role,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub content: Vec<ContentPart>,
    /// Native tool calls of an assistant message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a tool result: the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For a tool result: the tool's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// For a tool result: the tool failed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

impl ChatMessage {
    fn with_text(role: Role, text: impl Into<String>) -> Self {
        ChatMessage {
            role,
            content: vec![ContentPart::Text { text: text.into() }],
            tool_calls: Vec::new(),
            tool_call_id: None,
            tool_name: None,
            is_error: false,
        }
    }

    /// A user message of plain text.
    pub fn user(text: impl Into<String>) -> Self {
        Self::with_text(Role::User, text)
    }

    /// An assistant message of plain text.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::with_text(Role::Assistant, text)
    }

    /// The result of native tool call `call_id`.
    pub fn tool_result(call_id: &str, tool: &str, text: impl Into<String>, is_error: bool) -> Self {
        ChatMessage {
            tool_call_id: Some(call_id.to_string()),
            tool_name: Some(tool.to_string()),
            is_error,
            ..Self::with_text(Role::Tool, text)
        }
    }

    /// All text parts, joined.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for part in &self.content {
            if let ContentPart::Text { text } = part {
                out.push_str(text);
            }
        }
        out
    }
}

/// Token counts a provider reported for one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// The whole prompt, however it was billed.
    pub input_tokens: u64,
    /// Of the prompt: read from the provider's cache.
    pub cached_tokens: u64,
    /// Of the prompt: written to the cache (Anthropic bills these above the input price).
    pub cache_write_tokens: u64,
    pub output_tokens: u64,
}

impl Usage {
    /// Prompt tokens billed at the plain input price.
    pub fn uncached_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_sub(self.cached_tokens)
            .saturating_sub(self.cache_write_tokens)
    }
}
