//! The web family: a page's main content as Markdown (`POST /v1/web/fetch`) and a search
//! with no key (`POST /v1/web/search`). Pages are fetched over HTTP; one that needs scripts
//! to show its content is rendered in a background tab of the daemon's browser, as are
//! searches, so the agent's own tab is never disturbed.

pub mod bounds;
pub mod download;
pub mod engines;
pub mod extract;
pub mod http;
pub mod pdf;
pub mod reader;
pub mod saved;

use std::collections::VecDeque;
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

use cove_protocol::web::{
    DEFAULT_MAX_CHARS, DEFAULT_NUM_RESULTS, FetchFormat, FetchRequest, FetchResponse,
    MAX_MAX_CHARS, MAX_NUM_RESULTS, SearchHit, SearchRequest, SearchResponse,
};
use serde::Deserialize;

use crate::browser::{BrowserError, BrowserManager};
use crate::files::{FileError, Workspace};
use crate::procs::ChildRegistry;
use download::Kind;
use engines::Engine;
use reader::{PageKind, Read, ReadArgs, Reader};

/// Fetches whose later pages are served from their saved copy.
const REMEMBERED: usize = 32;
/// Longest query searched.
const MAX_QUERY_CHARS: usize = 500;
/// Read from the rendered page when a page needs scripts.
const OUTER_HTML_JS: &str = "document.documentElement.outerHTML";

/// What went wrong reading the web, by what the caller should do about it.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    /// Fix the request.
    #[error("{0}")]
    InvalidRequest(String),
    /// Check the URL, or try again later.
    #[error("{0}")]
    Unreachable(String),
    /// Try again, or another source.
    #[error("{0}")]
    Timeout(String),
    /// The server refused or failed; another URL, or later.
    #[error("{url} answered HTTP {status} {reason}")]
    Status {
        url: String,
        status: u16,
        reason: String,
    },
    /// Not a page: download it with the shell instead.
    #[error(
        "{url} is {content_type}, not a page; download it with the shell (curl -o) and use the tool that reads it (see_image for images)"
    )]
    NotAPage { url: String, content_type: String },
    /// Too big to read as a page: download it with the shell instead.
    #[error("{url} is {}, over the {} MB a page may be; download it with the shell (curl -o) instead", size.map_or("larger".to_string(), |s| format!("{s} bytes")), download::MAX_PAGE_BYTES / (1024 * 1024))]
    TooLarge { url: String, size: Option<u64> },
    /// The content cannot be turned into text.
    #[error("{0}")]
    Unreadable(String),
    /// The engine showed something other than results: a person can clear it.
    #[error("{0}")]
    Blocked(String),
    #[error(transparent)]
    Browser(#[from] BrowserError),
    #[error(transparent)]
    File(#[from] FileError),
    /// Not the caller's fault.
    #[error("{0}")]
    Internal(String),
}

impl WebError {
    /// Sorts a failed request.
    pub fn from_reqwest(url: &str, e: reqwest::Error, timeout: std::time::Duration) -> WebError {
        if e.is_timeout() {
            WebError::Timeout(format!(
                "{url} did not send the page within {} s; try again later, or another source",
                timeout.as_secs()
            ))
        } else if e.is_redirect() {
            WebError::Unreachable(format!("{url} redirects too many times (a loop?)"))
        } else {
            // The source chain holds the useful part (DNS, refused, certificate).
            let mut message = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                message = format!("{message}: {s}");
                source = s.source();
            }
            WebError::Unreachable(format!("cannot fetch {url}: {message}"))
        }
    }
}

/// How the daemon fetches pages and searches without a key.
#[derive(Debug, Clone)]
pub struct WebSettings {
    pub engine: Engine,
    /// Another results page for the engine's markup (a mirror; the tests' fake engine), with
    /// `{query}` where the query goes.
    pub search_url: Option<String>,
    /// The whole of one page's download.
    pub fetch_timeout: std::time::Duration,
}

impl Default for WebSettings {
    fn default() -> Self {
        WebSettings {
            engine: engines::DUCKDUCKGO,
            search_url: None,
            fetch_timeout: download::FETCH_TIMEOUT,
        }
    }
}

/// What a fetch found besides its content, kept for its later pages.
#[derive(Debug, Clone)]
struct Fetched {
    requested: String,
    format: FetchFormat,
    url: String,
    title: String,
    content_type: String,
    rendered: bool,
    saved_path: String,
}

/// The web family's state.
pub struct Web {
    settings: WebSettings,
    client: OnceLock<reqwest::Client>,
    recent: Mutex<VecDeque<Fetched>>,
    reader: Reader,
}

#[derive(Debug, Deserialize)]
struct EngineAnswer {
    /// The page's title, for a message when it holds no results.
    #[serde(default)]
    title: String,
    #[serde(default)]
    results: Vec<SearchHit>,
    #[serde(default)]
    blocked: Option<String>,
    #[serde(default)]
    empty: bool,
}

impl Web {
    /// A web family fetching and searching as `settings` say; its page readers are
    /// children `registry` leaves to their waiter.
    pub fn new(settings: WebSettings, registry: Arc<ChildRegistry>) -> Web {
        Web {
            settings,
            client: OnceLock::new(),
            recent: Mutex::new(VecDeque::new()),
            reader: Reader::new(registry),
        }
    }

    fn client(&self) -> Result<&reqwest::Client, WebError> {
        if let Some(client) = self.client.get() {
            return Ok(client);
        }
        let client = download::client()
            .map_err(|e| WebError::Internal(format!("cannot build the HTTP client: {e}")))?;
        Ok(self.client.get_or_init(|| client))
    }

    /// One page of `request.url`'s main content; the whole saved in the workspace.
    pub async fn fetch(
        &self,
        workspace: &Arc<Workspace>,
        browser: &BrowserManager,
        request: FetchRequest,
    ) -> Result<FetchResponse, WebError> {
        let max_chars = request.max_chars.unwrap_or(DEFAULT_MAX_CHARS);
        if max_chars == 0 || max_chars > MAX_MAX_CHARS {
            return Err(WebError::InvalidRequest(format!(
                "max_chars must be between 1 and {MAX_MAX_CHARS}"
            )));
        }
        let page = request.page.unwrap_or(1);
        if page == 0 {
            return Err(WebError::InvalidRequest("pages count from 1".into()));
        }
        let url = parse_url(&request.url)?;
        if page > 1
            && let Some(answer) = self
                .saved_page(workspace, url.as_str(), request.format, max_chars, page)
                .await
        {
            return Ok(answer);
        }
        let (fetched, content) = self.fetch_whole(browser, &url, request.format).await?;
        let save = {
            let workspace = workspace.clone();
            let path = fetched.saved_path.clone();
            let bytes = content.clone().into_bytes();
            crate::blocking::blocking(move || save(&workspace, &path, &bytes))
        };
        save.await
            .map_err(|e| WebError::Internal(e.to_string()))??;
        self.remember(fetched.clone());
        Ok(answer(&fetched, &content, max_chars, page))
    }

    /// The content of `url` in `format`, fetched and extracted.
    async fn fetch_whole(
        &self,
        browser: &BrowserManager,
        url: &reqwest::Url,
        format: FetchFormat,
    ) -> Result<(Fetched, String), WebError> {
        let downloaded =
            download::download(self.client()?, url, self.settings.fetch_timeout).await?;
        let kind = download::kind_of(&downloaded)?;
        let mut rendered = false;
        let landed = downloaded.url.clone();
        let content_type = downloaded.content_type.clone();
        let read_args = |kind, content_type: &str, check_scripts| ReadArgs {
            kind,
            format,
            url: landed.clone(),
            content_type: content_type.to_string(),
            check_scripts,
        };
        let body = bytes::Bytes::from(downloaded.bytes);
        let read = match kind {
            Kind::Pdf => {
                self.reader
                    .read(&read_args(PageKind::Pdf, &content_type, false), body)
                    .await?
            }
            Kind::Text => Read::Read {
                title: String::new(),
                content: download::decode_bytes(&body, &content_type, kind),
            },
            Kind::Html => {
                let first = self
                    .reader
                    .read(
                        &read_args(PageKind::Html, &content_type, true),
                        body.clone(),
                    )
                    .await?;
                if first != Read::NeedsScripts {
                    first
                } else {
                    let (html, html_type) = match browser
                        .read_in_background::<String>(&landed, OUTER_HTML_JS)
                        .await
                    {
                        Ok(read) => {
                            rendered = true;
                            (bytes::Bytes::from(read.value), "text/html; charset=utf-8")
                        }
                        // What came over HTTP is still worth giving.
                        Err(e) => {
                            tracing::info!(error = %e, url = %landed, "cannot render a page that needs scripts");
                            (body, content_type.as_str())
                        }
                    };
                    self.reader
                        .read(&read_args(PageKind::Html, html_type, false), html)
                        .await?
                }
            }
        };
        let (title, content) = match read {
            Read::Read { title, content } => (title, content),
            Read::NeedsScripts => {
                return Err(WebError::Internal(
                    "the page reader asked for scripts twice".into(),
                ));
            }
        };
        let fetched = Fetched {
            requested: url.to_string(),
            format,
            saved_path: saved::path_for(url.as_str(), format),
            url: landed,
            title,
            content_type,
            rendered,
        };
        Ok((fetched, content))
    }

    /// A later page of a fetch made a moment ago, from its saved copy.
    async fn saved_page(
        &self,
        workspace: &Arc<Workspace>,
        url: &str,
        format: FetchFormat,
        max_chars: usize,
        page: usize,
    ) -> Option<FetchResponse> {
        let fetched = self
            .recent
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|f| f.requested == url && f.format == format)
            .cloned()?;
        let workspace = workspace.clone();
        let path = fetched.saved_path.clone();
        let content = crate::blocking::blocking(move || {
            let (mut file, _) = workspace.open_for_download(&path).ok()?;
            let mut text = String::new();
            std::io::Read::read_to_string(&mut file, &mut text).ok()?;
            Some(text)
        })
        .await
        .ok()
        .flatten()?;
        Some(answer(&fetched, &content, max_chars, page))
    }

    fn remember(&self, fetched: Fetched) {
        let mut recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
        recent.retain(|f| !(f.requested == fetched.requested && f.format == fetched.format));
        if recent.len() >= REMEMBERED {
            recent.pop_front();
        }
        recent.push_back(fetched);
    }

    /// Searches the configured keyless engine in a background tab.
    pub async fn search(
        &self,
        browser: &BrowserManager,
        request: SearchRequest,
    ) -> Result<SearchResponse, WebError> {
        let query = request.query.trim();
        if query.is_empty() {
            return Err(WebError::InvalidRequest("the query is empty".into()));
        }
        if query.chars().count() > MAX_QUERY_CHARS {
            return Err(WebError::InvalidRequest(format!(
                "the query is over {MAX_QUERY_CHARS} characters"
            )));
        }
        let wanted = request.num_results.unwrap_or(DEFAULT_NUM_RESULTS);
        if wanted == 0 || wanted > MAX_NUM_RESULTS {
            return Err(WebError::InvalidRequest(format!(
                "num_results must be between 1 and {MAX_NUM_RESULTS}"
            )));
        }
        let engine = self.settings.engine;
        let template = self.settings.search_url.as_deref().unwrap_or(engine.url);
        let encoded: String = url::form_urlencoded::byte_serialize(query.as_bytes()).collect();
        let page_url = template.replace("{query}", &encoded);
        // The engine's answer and the page's title, in one look at the page.
        let script = format!("Object.assign({{title: document.title}}, {})", engine.read);
        let read = browser
            .read_in_background::<EngineAnswer>(&page_url, &script)
            .await?;
        let answer = read.value;
        let takeover = format!(
            "a person can clear it: open {page_url} in the browser and ask for a takeover (web_browser_takeover), then search again; or configure a search provider's key (TAVILY_API_KEY, BRAVE_API_KEY or SEARXNG_URL)"
        );
        if let Some(wall) = answer.blocked {
            return Err(WebError::Blocked(format!(
                "{} answered with {wall:?} instead of results; {takeover}",
                engine.name
            )));
        }
        if answer.results.is_empty() && !answer.empty {
            return Err(WebError::Blocked(format!(
                "{}'s page ({:?} at {}) has no results coved can read: a consent wall or a check, or the engine changed its layout; {takeover}",
                engine.name, answer.title, read.url
            )));
        }
        let mut results: Vec<SearchHit> = Vec::new();
        for hit in answer.results {
            let good =
                url::Url::parse(&hit.url).is_ok_and(|u| matches!(u.scheme(), "http" | "https"));
            if good && !results.iter().any(|r| r.url == hit.url) {
                results.push(hit);
            }
            if results.len() == wanted {
                break;
            }
        }
        Ok(SearchResponse {
            engine: engine.name.to_string(),
            query: query.to_string(),
            results,
        })
    }
}

fn parse_url(raw: &str) -> Result<reqwest::Url, WebError> {
    let raw = raw.trim();
    let url = reqwest::Url::parse(raw)
        .or_else(|e| {
            // "example.com/page": the scheme left off, as people write them.
            if !raw.contains("://") && raw.contains('.') {
                reqwest::Url::parse(&format!("https://{raw}"))
            } else {
                Err(e)
            }
        })
        .map_err(|e| WebError::InvalidRequest(format!("{raw:?} is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(WebError::InvalidRequest(format!(
            "only http and https URLs can be fetched, not {}:",
            url.scheme()
        )));
    }
    Ok(url)
}

/// Writes the whole content into the workspace, in one step (nothing half-written is left).
fn save(workspace: &Workspace, path: &str, bytes: &[u8]) -> Result<(), WebError> {
    let mut upload = workspace.begin_upload(path)?;
    let mut file = upload
        .take_file()
        .ok_or_else(|| WebError::Internal("the saved copy has no file".into()))?;
    file.write_all(bytes)
        .and_then(|()| file.flush())
        .map_err(|e| WebError::Internal(format!("cannot save {path}: {e}")))?;
    drop(file);
    workspace.commit(upload)?;
    Ok(())
}

fn answer(fetched: &Fetched, content: &str, max_chars: usize, page: usize) -> FetchResponse {
    let (text, pages) = saved::page_of(content, max_chars, page);
    FetchResponse {
        url: fetched.url.clone(),
        title: fetched.title.clone(),
        format: fetched.format,
        content_type: fetched.content_type.clone(),
        rendered: fetched.rendered,
        content: text,
        page,
        pages,
        total_chars: content.chars().count(),
        saved_path: fetched.saved_path.clone(),
    }
}
