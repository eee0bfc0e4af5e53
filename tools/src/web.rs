//! Reading a web page: its main content as Markdown, fetched by the sandbox.

use cove_protocol::web::{FetchFormat, FetchRequest, FetchResponse};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::{SandboxEnv, ToolDef, ToolResult, tool};

/// Characters of a page one call gives when the model does not say.
pub const FETCH_DEFAULT_CHARS: usize = 15_000;
/// Most characters of a page one call gives.
pub const FETCH_MAX_CHARS: usize = 50_000;
/// Most URLs one call fetches (Suna's `scrape_webpage` takes several).
const MAX_URLS: usize = 5;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WebFetch {
    /// The page's http(s) URL. Several, comma-separated, are fetched one after another.
    url: String,
    /// markdown (default: the main content with links and tables), text, or html.
    format: Option<String>,
    /// Characters per page of the result (default 15000, at most 50000).
    max_chars: Option<usize>,
    /// Which page of a long result, from 1 (later pages come from the saved copy).
    page: Option<usize>,
}

fn describe(page: &FetchResponse) -> String {
    let mut out = String::new();
    if !page.title.is_empty() {
        out.push_str(&format!("# {}\n", page.title));
    }
    out.push_str(&format!("URL: {}", page.url));
    if page.rendered {
        out.push_str(" (rendered in the browser: the page needs scripts)");
    }
    out.push('\n');
    if page.pages > 1 {
        out.push_str(&format!(
            "Page {} of {} ({} characters in all){}. ",
            page.page,
            page.pages,
            page.total_chars,
            if page.page < page.pages {
                format!("; page={} for the next", page.page + 1)
            } else {
                String::new()
            }
        ));
    }
    out.push_str(&format!("Saved in full: {}\n\n", page.saved_path));
    if page.content.trim().is_empty() {
        out.push_str(if page.page > page.pages {
            "(no such page)"
        } else {
            "(the page has no text)"
        });
    } else {
        out.push_str(&page.content);
    }
    out
}

/// Suna's `scrape_webpage`: its parameter names, the same work.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ScrapeWebpage {
    /// The pages' http(s) URLs, comma-separated.
    urls: String,
    /// markdown (default), text, or html.
    format: Option<String>,
    /// Characters per page of the result (default 15000, at most 50000).
    max_chars: Option<usize>,
    /// Which page of a long result, from 1.
    page: Option<usize>,
}

async fn scrape_webpage(env: &SandboxEnv, a: ScrapeWebpage) -> ToolResult {
    let ScrapeWebpage {
        urls,
        format,
        max_chars,
        page,
    } = a;
    web_fetch(
        env,
        WebFetch {
            url: urls,
            format,
            max_chars,
            page,
        },
    )
    .await
}

async fn web_fetch(env: &SandboxEnv, a: WebFetch) -> ToolResult {
    let format = match a.format.as_deref().map(str::trim) {
        None | Some("" | "markdown" | "md") => FetchFormat::Markdown,
        Some("text") => FetchFormat::Text,
        Some("html") => FetchFormat::Html,
        Some(other) => {
            return ToolResult::error(format!(
                "format {other:?} is not one of markdown, text or html"
            ));
        }
    };
    let max_chars = a.max_chars.unwrap_or(FETCH_DEFAULT_CHARS);
    if max_chars == 0 || max_chars > FETCH_MAX_CHARS {
        return ToolResult::error(format!("max_chars must be between 1 and {FETCH_MAX_CHARS}"));
    }
    let urls: Vec<&str> = a
        .url
        .split([',', '\n'])
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .collect();
    if urls.is_empty() {
        return ToolResult::error("give the URL of the page to read");
    }
    if urls.len() > MAX_URLS {
        return ToolResult::error(format!("at most {MAX_URLS} URLs per call"));
    }
    // Several pages share the budget.
    let each = (max_chars / urls.len()).max(1);
    let mut parts = Vec::new();
    let mut failed = 0;
    for url in &urls {
        let request = FetchRequest {
            url: url.to_string(),
            format,
            max_chars: Some(each),
            page: a.page,
        };
        match env.sandbox.web_fetch(&request).await {
            Ok(page) => parts.push(describe(&page)),
            Err(e) => {
                failed += 1;
                let result = ToolResult::from_client(&e);
                parts.push(format!("{url}: {}", result.text));
            }
        }
    }
    let text = parts.join("\n\n---\n\n");
    if failed == urls.len() {
        ToolResult::error(text)
    } else {
        ToolResult::ok(text)
    }
}

/// Tools known by other runtimes' names, found when called but never offered: the prompts
/// written for those runtimes work as they are.
pub fn aliases() -> Vec<ToolDef> {
    vec![
        tool! {
            name: "scrape_webpage",
            args: ScrapeWebpage,
            summary: Some("urls"),
            raw: &[],
            description: "Suna's name for web_fetch: read web pages (comma-separated URLs) as Markdown.",
            example: json!({"urls": "https://docs.python.org/3/tutorial/index.html"}),
            run: scrape_webpage,
        }
        .uncapped(),
    ]
}

/// The web tools that run in the sandbox.
pub fn tools() -> Vec<ToolDef> {
    vec![
        tool! {
            name: "web_fetch",
            args: WebFetch,
            summary: Some("url"),
            raw: &[],
            description: "Read a web page: its main content as Markdown (links and tables kept; navigation, ads and footers left out). Pages that need scripts are rendered in the browser; PDFs become text. A long page comes in pages (`page`), and the whole is saved in the workspace under .cove/web/ so you can read or grep it later. Use it to read a page whose URL you know; use the browser tools to click, type or log in.",
            example: json!({"url": "https://docs.python.org/3/tutorial/index.html"}),
            run: web_fetch,
        }
        .uncapped(),
    ]
}
