//! Web wire types: reading a page as Markdown and searching without a key.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Characters of a page one answer carries when the caller does not say.
pub const DEFAULT_MAX_CHARS: usize = 20_000;
/// Most characters of a page one answer may carry.
pub const MAX_MAX_CHARS: usize = 200_000;
/// Results a search returns when the caller does not say.
pub const DEFAULT_NUM_RESULTS: usize = 8;
/// Most results one search returns.
pub const MAX_NUM_RESULTS: usize = 20;
/// The workspace folder fetched pages are saved in.
pub const SAVED_DIR: &str = ".cove/web";

/// How a fetched page is given back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FetchFormat {
    /// The main content as Markdown, links and tables kept.
    #[default]
    Markdown,
    /// The main content as plain text.
    Text,
    /// The main content's cleaned HTML.
    Html,
}

impl FetchFormat {
    /// The saved copy's file extension.
    pub fn extension(self) -> &'static str {
        match self {
            FetchFormat::Markdown => "md",
            FetchFormat::Text => "txt",
            FetchFormat::Html => "html",
        }
    }
}

/// `POST /v1/web/fetch`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FetchRequest {
    /// An http or https URL.
    pub url: String,
    #[serde(default)]
    pub format: FetchFormat,
    /// Characters per page of the answer (default 20,000, at most 200,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_chars: Option<usize>,
    /// Which page of a long result, from 1. Pages after the first come from the saved copy
    /// when it is there, so the page is not fetched again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<usize>,
}

/// The answer to `POST /v1/web/fetch`: one page of the content; the whole of it is saved in
/// the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FetchResponse {
    /// Where the content came from, after redirects.
    pub url: String,
    pub title: String,
    pub format: FetchFormat,
    /// The `Content-Type` the server sent (`application/pdf`, `text/html; charset=...`).
    pub content_type: String,
    /// The page was rendered in the browser because it needs scripts to show its content.
    pub rendered: bool,
    /// This page of the content.
    pub content: String,
    /// Which page this is, from 1.
    pub page: usize,
    pub pages: usize,
    /// Characters of the whole content.
    pub total_chars: usize,
    /// The whole content in the workspace (`.cove/web/...`).
    pub saved_path: String,
}

/// `POST /v1/web/search`: a keyless search through the sandbox's browser.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchRequest {
    pub query: String,
    /// How many results (default 8, at most 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_results: Option<usize>,
}

/// One search result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SearchHit {
    pub title: String,
    pub url: String,
    pub snippet: String,
}

/// The answer to `POST /v1/web/search`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SearchResponse {
    /// The engine that answered (`duckduckgo`).
    pub engine: String,
    pub query: String,
    pub results: Vec<SearchHit>,
}
