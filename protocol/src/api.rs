//! The daemon's route table and the OpenAPI document generated from it.
//!
//! The table is the single source of truth: coved builds its router from it (one handler per
//! [`Op`], matched exhaustively), its auth test walks it, and `/v1/openapi.json` is rendered
//! from it, so a route cannot exist in one place and not the others.

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{Map, Value, json};

use crate::browser::{
    BrowserState, ClickCoordinates, ClickElement, CloseTab, DragDrop, GetDropdownOptions, GoBack,
    HandleDialog, HoverElement, InputText, NavigateTo, ScrollDown, ScrollToText, ScrollUp,
    SelectDropdownOption, SendKeys, StateQuery, SwitchTab, Wait,
};
use crate::checkpoints::{
    CheckpointCreated, CheckpointDiff, CheckpointList, CreateCheckpoint, DiffQuery, ImportQuery,
    RestoreRequest, RestoreResponse,
};
use crate::error::ErrorEnvelope;
use crate::files::{
    ContentQuery, CreateRequest, DeleteQuery, DeleteResponse, ListQuery, ListResponse, ReadRequest,
    ReadResponse, RewriteRequest, StrReplaceRequest, StrReplaceResponse, WriteResponse,
};
use crate::forks::{ApplyResponse, CreateFork, ForkInfo, ForkList};
use crate::info::{HealthResponse, IdleResponse, InfoResponse, RotateToken, TokenRotated};
use crate::preview::{ExposeRequest, ExposeResponse};
use crate::shell::{
    DeleteSessionResponse, ExecRequest, ExecResponse, InputRequest, InputResponse, OutputQuery,
    OutputResponse, SessionList, SignalRequest, SignalResponse,
};
use crate::takeover::{
    StartTakeover, TakeoverGrant, TakeoverQuery, TakeoverReleased, TakeoverStatus,
};
use crate::vision::{SeeImageRequest, SeeImageResponse};
use crate::watches::{CreateWatch, EventList, EventsQuery, WatchInfo, WatchList};
use crate::web::{FetchRequest, FetchResponse, SearchRequest, SearchResponse};

/// The API version served under `/v1`.
pub const API_VERSION: &str = "v1";

/// Every operation the daemon serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    Health,
    Info,
    Idle,
    Metrics,
    RotateToken,
    OpenApi,
    ShellExec,
    ShellSessions,
    ShellOutput,
    ShellRecording,
    ShellInput,
    ShellSignal,
    ShellDeleteSession,
    FilesList,
    FilesRead,
    FilesCreate,
    FilesRewrite,
    FilesStrReplace,
    FilesDelete,
    FilesDownload,
    FilesUpload,
    BrowserNavigateTo,
    BrowserGoBack,
    BrowserWait,
    BrowserClickElement,
    BrowserClickCoordinates,
    BrowserInputText,
    BrowserSendKeys,
    BrowserSwitchTab,
    BrowserCloseTab,
    BrowserScrollDown,
    BrowserScrollUp,
    BrowserScrollToText,
    BrowserGetDropdownOptions,
    BrowserSelectDropdownOption,
    BrowserDragDrop,
    BrowserHoverElement,
    BrowserHandleDialog,
    BrowserState,
    BrowserScreenshot,
    BrowserTakeoverStart,
    BrowserTakeoverStatus,
    BrowserTakeoverEnd,
    VisionSeeImage,
    PreviewExpose,
    WebFetch,
    WebSearch,
    CheckpointsCreate,
    CheckpointsList,
    CheckpointsDiff,
    CheckpointsRestore,
    CheckpointsArchive,
    CheckpointsImport,
    WatchesCreate,
    WatchesList,
    WatchesDelete,
    Events,
    ForksCreate,
    ForksList,
    ForksChanges,
    ForksApply,
    ForksDelete,
    Mcp,
}

/// The HTTP methods the API uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    Get,
    Post,
    Put,
    Delete,
}

impl Method {
    /// Upper-case method name, as on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Delete => "DELETE",
        }
    }
}

/// Produces a schema for one type, registering what it refers to in the generator.
pub type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

/// What a request carries in its body.
#[derive(Debug, Clone, Copy)]
pub enum RequestBody {
    None,
    Json(SchemaFn),
    /// Raw bytes, streamed.
    Bytes,
}

/// What a successful answer carries.
#[derive(Debug, Clone, Copy)]
pub enum ResponseBody {
    Json(SchemaFn),
    /// Raw bytes of the given media type, streamed.
    Bytes(&'static str),
}

/// One route of an API: the daemon's ([`Op`]) or `cove serve`'s
/// ([`crate::serve::ServeOp`]).
#[derive(Debug, Clone, Copy)]
pub struct Endpoint<O: 'static = Op> {
    pub op: O,
    pub method: Method,
    /// Path with `{param}` placeholders, in axum's and OpenAPI's shared syntax.
    pub path: &'static str,
    pub summary: &'static str,
    /// Requires `Authorization: Bearer <token>`.
    pub auth: bool,
    /// Schema of the query string (an object whose properties are the parameters).
    pub query: Option<SchemaFn>,
    pub request: RequestBody,
    pub response: ResponseBody,
}

/// A schema by reference to `components/schemas`.
pub fn reference<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

/// A schema written out in place (query strings, whose properties become parameters).
pub fn inline<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    T::json_schema(generator)
}

/// A browser action: `POST` with its own body, the state query, the state back.
const fn browser_action(
    op: Op,
    path: &'static str,
    summary: &'static str,
    request: SchemaFn,
) -> Endpoint {
    Endpoint {
        op,
        method: Method::Post,
        path,
        summary,
        auth: true,
        query: Some(inline::<StateQuery>),
        request: RequestBody::Json(request),
        response: ResponseBody::Json(reference::<BrowserState>),
    }
}

/// The whole API of coved v1.
pub const ENDPOINTS: &[Endpoint] = &[
    Endpoint {
        op: Op::Health,
        method: Method::Get,
        path: "/health",
        summary: "Liveness; the only route that needs no token",
        auth: false,
        query: None,
        request: RequestBody::None,
        response: ResponseBody::Json(reference::<HealthResponse>),
    },
    Endpoint {
        op: Op::Info,
        method: Method::Get,
        path: "/v1/info",
        summary: "Version, API version and capabilities",
        auth: true,
        query: None,
        request: RequestBody::None,
        response: ResponseBody::Json(reference::<InfoResponse>),
    },
    Endpoint {
        op: Op::Idle,
        method: Method::Get,
        path: "/v1/idle",
        summary: "How long the sandbox has been idle (no request, no command running, no one in the takeover view), and what keeps it busy; asking does not count as use",
        auth: true,
        query: None,
        request: RequestBody::None,
        response: ResponseBody::Json(reference::<IdleResponse>),
    },
    Endpoint {
        op: Op::Metrics,
        method: Method::Get,
        path: "/metrics",
        summary: "What the daemon has done, in the Prometheus text format: requests by route and status with their latency, requests in flight, shell sessions and running commands, the takeover, memory; asking does not count as use",
        auth: true,
        query: None,
        request: RequestBody::None,
        response: ResponseBody::Bytes("text/plain; version=0.0.4"),
    },
    Endpoint {
        op: Op::RotateToken,
        method: Method::Post,
        path: "/v1/token",
        summary: "Replace the API token: the one this request carries is refused from then on (a pooled sandbox gets its own as it is handed out)",
        auth: true,
        query: None,
        request: RequestBody::Json(reference::<RotateToken>),
        response: ResponseBody::Json(reference::<TokenRotated>),
    },
    Endpoint {
        op: Op::OpenApi,
        method: Method::Get,
        path: "/v1/openapi.json",
        summary: "This OpenAPI document",
        auth: true,
        query: None,
        request: RequestBody::None,
        response: ResponseBody::Bytes("application/json"),
    },
    Endpoint {
        op: Op::ShellExec,
        method: Method::Post,
        path: "/v1/shell/exec",
        summary: "Run a command in a named persistent shell session",
        auth: true,
        query: None,
        request: RequestBody::Json(reference::<ExecRequest>),
        response: ResponseBody::Json(reference::<ExecResponse>),
    },
    Endpoint {
        op: Op::ShellSessions,
        method: Method::Get,
        path: "/v1/shell/sessions",
        summary: "List shell sessions",
        auth: true,
        query: None,
        request: RequestBody::None,
        response: ResponseBody::Json(reference::<SessionList>),
    },
    Endpoint {
        op: Op::ShellOutput,
        method: Method::Get,
        path: "/v1/shell/sessions/{name}/output",
        summary: "Read a session's output from an offset",
        auth: true,
        query: Some(inline::<OutputQuery>),
        request: RequestBody::None,
        response: ResponseBody::Json(reference::<OutputResponse>),
    },
    Endpoint {
        op: Op::ShellRecording,
        method: Method::Get,
        path: "/v1/shell/sessions/{name}/recording",
        summary: "The session's output still held, as a terminal recording (asciicast v2)",
        auth: true,
        query: None,
        request: RequestBody::None,
        response: ResponseBody::Bytes("application/x-asciicast"),
    },
    Endpoint {
        op: Op::ShellInput,
        method: Method::Post,
        path: "/v1/shell/sessions/{name}/input",
        summary: "Type text into the running command's terminal",
        auth: true,
        query: None,
        request: RequestBody::Json(reference::<InputRequest>),
        response: ResponseBody::Json(reference::<InputResponse>),
    },
    Endpoint {
        op: Op::ShellSignal,
        method: Method::Post,
        path: "/v1/shell/sessions/{name}/signal",
        summary: "Signal the running command (the terminal's foreground job)",
        auth: true,
        query: None,
        request: RequestBody::Json(reference::<SignalRequest>),
        response: ResponseBody::Json(reference::<SignalResponse>),
    },
    Endpoint {
        op: Op::ShellDeleteSession,
        method: Method::Delete,
        path: "/v1/shell/sessions/{name}",
        summary: "Kill a session's whole process tree and forget it",
        auth: true,
        query: None,
        request: RequestBody::None,
        response: ResponseBody::Json(reference::<DeleteSessionResponse>),
    },
    Endpoint {
        op: Op::FilesList,
        method: Method::Get,
        path: "/v1/files/list",
        summary: "List a directory, optionally several levels deep",
        auth: true,
        query: Some(inline::<ListQuery>),
        request: RequestBody::None,
        response: ResponseBody::Json(reference::<ListResponse>),
    },
    Endpoint {
        op: Op::FilesRead,
        method: Method::Post,
        path: "/v1/files/read",
        summary: "Read a text file, optionally a range of lines",
        auth: true,
        query: None,
        request: RequestBody::Json(reference::<ReadRequest>),
        response: ResponseBody::Json(reference::<ReadResponse>),
    },
    Endpoint {
        op: Op::FilesCreate,
        method: Method::Post,
        path: "/v1/files/create",
        summary: "Create a new file (and its parents); fails if it exists",
        auth: true,
        query: None,
        request: RequestBody::Json(reference::<CreateRequest>),
        response: ResponseBody::Json(reference::<WriteResponse>),
    },
    Endpoint {
        op: Op::FilesRewrite,
        method: Method::Post,
        path: "/v1/files/rewrite",
        summary: "Replace an existing file's content atomically",
        auth: true,
        query: None,
        request: RequestBody::Json(reference::<RewriteRequest>),
        response: ResponseBody::Json(reference::<WriteResponse>),
    },
    Endpoint {
        op: Op::FilesStrReplace,
        method: Method::Post,
        path: "/v1/files/str_replace",
        summary: "Replace the single occurrence of a string in a file",
        auth: true,
        query: None,
        request: RequestBody::Json(reference::<StrReplaceRequest>),
        response: ResponseBody::Json(reference::<StrReplaceResponse>),
    },
    Endpoint {
        op: Op::FilesDelete,
        method: Method::Delete,
        path: "/v1/files",
        summary: "Delete a file, or a directory with recursive=true",
        auth: true,
        query: Some(inline::<DeleteQuery>),
        request: RequestBody::None,
        response: ResponseBody::Json(reference::<DeleteResponse>),
    },
    Endpoint {
        op: Op::FilesDownload,
        method: Method::Get,
        path: "/v1/files/content",
        summary: "Download a file's raw bytes",
        auth: true,
        query: Some(inline::<ContentQuery>),
        request: RequestBody::None,
        response: ResponseBody::Bytes("application/octet-stream"),
    },
    Endpoint {
        op: Op::FilesUpload,
        method: Method::Put,
        path: "/v1/files/content",
        summary: "Upload raw bytes to a file (created or replaced atomically; size-capped)",
        auth: true,
        query: Some(inline::<ContentQuery>),
        request: RequestBody::Bytes,
        response: ResponseBody::Json(reference::<WriteResponse>),
    },
    browser_action(
        Op::BrowserNavigateTo,
        "/v1/browser/navigate_to",
        "Load a URL in the active tab",
        reference::<NavigateTo>,
    ),
    browser_action(
        Op::BrowserGoBack,
        "/v1/browser/go_back",
        "Go back in the active tab's history",
        reference::<GoBack>,
    ),
    browser_action(
        Op::BrowserWait,
        "/v1/browser/wait",
        "Let the page work for a few seconds",
        reference::<Wait>,
    ),
    browser_action(
        Op::BrowserClickElement,
        "/v1/browser/click_element",
        "Click an element by its index",
        reference::<ClickElement>,
    ),
    browser_action(
        Op::BrowserClickCoordinates,
        "/v1/browser/click_coordinates",
        "Click a point of the viewport",
        reference::<ClickCoordinates>,
    ),
    browser_action(
        Op::BrowserInputText,
        "/v1/browser/input_text",
        "Replace the text of an input, textarea or editable element",
        reference::<InputText>,
    ),
    browser_action(
        Op::BrowserSendKeys,
        "/v1/browser/send_keys",
        "Press keys (Enter, Control+a, ...) in the focused element",
        reference::<SendKeys>,
    ),
    browser_action(
        Op::BrowserSwitchTab,
        "/v1/browser/switch_tab",
        "Make a tab the active one",
        reference::<SwitchTab>,
    ),
    browser_action(
        Op::BrowserCloseTab,
        "/v1/browser/close_tab",
        "Close a tab",
        reference::<CloseTab>,
    ),
    browser_action(
        Op::BrowserScrollDown,
        "/v1/browser/scroll_down",
        "Scroll down by an amount of pixels or a viewport",
        reference::<ScrollDown>,
    ),
    browser_action(
        Op::BrowserScrollUp,
        "/v1/browser/scroll_up",
        "Scroll up by an amount of pixels or a viewport",
        reference::<ScrollUp>,
    ),
    browser_action(
        Op::BrowserScrollToText,
        "/v1/browser/scroll_to_text",
        "Bring a text into view",
        reference::<ScrollToText>,
    ),
    browser_action(
        Op::BrowserGetDropdownOptions,
        "/v1/browser/get_dropdown_options",
        "List the options of a native select",
        reference::<GetDropdownOptions>,
    ),
    browser_action(
        Op::BrowserSelectDropdownOption,
        "/v1/browser/select_dropdown_option",
        "Pick an option of a native select by its text",
        reference::<SelectDropdownOption>,
    ),
    browser_action(
        Op::BrowserDragDrop,
        "/v1/browser/drag_drop",
        "Drag from an element or point and drop on another",
        reference::<DragDrop>,
    ),
    browser_action(
        Op::BrowserHoverElement,
        "/v1/browser/hover_element",
        "Move the mouse over an element (menus that open on hover)",
        reference::<HoverElement>,
    ),
    browser_action(
        Op::BrowserHandleDialog,
        "/v1/browser/handle_dialog",
        "Answer the page's JavaScript dialog (alert, confirm, prompt, leave the page)",
        reference::<HandleDialog>,
    ),
    Endpoint {
        op: Op::BrowserState,
        method: Method::Get,
        path: "/v1/browser/state",
        summary: "The browser state, without acting",
        auth: true,
        query: Some(inline::<StateQuery>),
        request: RequestBody::None,
        response: ResponseBody::Json(reference::<BrowserState>),
    },
    Endpoint {
        op: Op::BrowserScreenshot,
        method: Method::Get,
        path: "/v1/browser/screenshot",
        summary: "A JPEG of the active tab's viewport",
        auth: true,
        query: None,
        request: RequestBody::None,
        response: ResponseBody::Bytes("image/jpeg"),
    },
    Endpoint {
        op: Op::BrowserTakeoverStart,
        method: Method::Post,
        path: "/v1/browser/takeover",
        summary: "Hand the browser to a person: a live page URL and its short-lived token",
        auth: true,
        query: None,
        request: RequestBody::Json(reference::<StartTakeover>),
        response: ResponseBody::Json(reference::<TakeoverGrant>),
    },
    Endpoint {
        op: Op::BrowserTakeoverStatus,
        method: Method::Get,
        path: "/v1/browser/takeover",
        summary: "Who is in control of the browser; optionally wait for a takeover to end",
        auth: true,
        query: Some(inline::<TakeoverQuery>),
        request: RequestBody::None,
        response: ResponseBody::Json(reference::<TakeoverStatus>),
    },
    Endpoint {
        op: Op::BrowserTakeoverEnd,
        method: Method::Delete,
        path: "/v1/browser/takeover",
        summary: "End the takeover and take the browser back; answers with the fresh state",
        auth: true,
        query: None,
        request: RequestBody::None,
        response: ResponseBody::Json(reference::<TakeoverReleased>),
    },
    Endpoint {
        op: Op::VisionSeeImage,
        method: Method::Post,
        path: "/v1/vision/see_image",
        summary: "An image from the workspace or the web, scaled and re-encoded for a model",
        auth: true,
        query: None,
        request: RequestBody::Json(reference::<SeeImageRequest>),
        response: ResponseBody::Json(reference::<SeeImageResponse>),
    },
    Endpoint {
        op: Op::PreviewExpose,
        method: Method::Post,
        path: "/v1/preview/expose",
        summary: "A browser URL, on an origin of its own, for a server the agent started on a port inside the sandbox",
        auth: true,
        query: None,
        request: RequestBody::Json(reference::<ExposeRequest>),
        response: ResponseBody::Json(reference::<ExposeResponse>),
    },
    Endpoint {
        op: Op::WebFetch,
        method: Method::Post,
        path: "/v1/web/fetch",
        summary: "A web page's main content as Markdown, text or HTML, one page of it at a time; the whole saved under .cove/web/ in the workspace. Fetched over HTTP, rendered in a background tab when it needs scripts; PDFs become text",
        auth: true,
        query: None,
        request: RequestBody::Json(reference::<FetchRequest>),
        response: ResponseBody::Json(reference::<FetchResponse>),
    },
    Endpoint {
        op: Op::WebSearch,
        method: Method::Post,
        path: "/v1/web/search",
        summary: "A web search with no key: the sandbox's browser asks a keyless engine in a background tab (the agent's tab is left alone) and reads its results",
        auth: true,
        query: None,
        request: RequestBody::Json(reference::<SearchRequest>),
        response: ResponseBody::Json(reference::<SearchResponse>),
    },
    Endpoint {
        op: Op::CheckpointsCreate,
        method: Method::Post,
        path: "/v1/checkpoints",
        summary: "Record the workspace as it is (files with their modes, symlinks, folders; .coveignore leaves paths out), incrementally into a content-addressed store outside it",
        auth: true,
        query: None,
        request: RequestBody::Json(reference::<CreateCheckpoint>),
        response: ResponseBody::Json(reference::<CheckpointCreated>),
    },
    Endpoint {
        op: Op::CheckpointsList,
        method: Method::Get,
        path: "/v1/checkpoints",
        summary: "The checkpoints kept, oldest first, and the store's size and cap",
        auth: true,
        query: None,
        request: RequestBody::None,
        response: ResponseBody::Json(reference::<CheckpointList>),
    },
    Endpoint {
        op: Op::CheckpointsDiff,
        method: Method::Get,
        path: "/v1/checkpoints/{id}/diff",
        summary: "What was added, changed and deleted from a checkpoint to another or to the workspace now, with unified diffs of text files (capped)",
        auth: true,
        query: Some(inline::<DiffQuery>),
        request: RequestBody::None,
        response: ResponseBody::Json(reference::<CheckpointDiff>),
    },
    Endpoint {
        op: Op::CheckpointsRestore,
        method: Method::Post,
        path: "/v1/checkpoints/{id}/restore",
        summary: "Make the workspace exactly what it was at a checkpoint (journalled: one cut short is finished or rolled back at the next start); busy while a shell session runs a command, unless stop_commands",
        auth: true,
        query: None,
        request: RequestBody::Json(reference::<RestoreRequest>),
        response: ResponseBody::Json(reference::<RestoreResponse>),
    },
    Endpoint {
        op: Op::CheckpointsArchive,
        method: Method::Get,
        path: "/v1/checkpoints/{id}/archive",
        summary: "A checkpoint as a tar stream, for import into another sandbox",
        auth: true,
        query: None,
        request: RequestBody::None,
        response: ResponseBody::Bytes("application/x-tar"),
    },
    Endpoint {
        op: Op::CheckpointsImport,
        method: Method::Post,
        path: "/v1/checkpoints/import",
        summary: "Take a checkpoint's tar (from another sandbox's archive) as a new checkpoint here; restore it to use it. Names that leave the workspace are refused",
        auth: true,
        query: Some(inline::<ImportQuery>),
        request: RequestBody::Bytes,
        response: ResponseBody::Json(reference::<CheckpointCreated>),
    },
    Endpoint {
        op: Op::WatchesCreate,
        method: Method::Post,
        path: "/v1/watches",
        summary: "Register a one-shot watch: a command exiting, a line of its output matching, a port listening, a file changing, a timer. It fires one event (or `expired` when its lifetime ends first)",
        auth: true,
        query: None,
        request: RequestBody::Json(reference::<CreateWatch>),
        response: ResponseBody::Json(reference::<WatchInfo>),
    },
    Endpoint {
        op: Op::WatchesList,
        method: Method::Get,
        path: "/v1/watches",
        summary: "The watches that have not fired yet",
        auth: true,
        query: None,
        request: RequestBody::None,
        response: ResponseBody::Json(reference::<WatchList>),
    },
    Endpoint {
        op: Op::WatchesDelete,
        method: Method::Delete,
        path: "/v1/watches/{id}",
        summary: "Drop a watch that has not fired; it fires nothing",
        auth: true,
        query: None,
        request: RequestBody::None,
        response: ResponseBody::Json(reference::<WatchInfo>),
    },
    Endpoint {
        op: Op::Events,
        method: Method::Get,
        path: "/v1/events",
        summary: "The events fired after `after` (a long poll: waits up to `wait_secs` for the first when there is none yet), resumable by id",
        auth: true,
        query: Some(inline::<EventsQuery>),
        request: RequestBody::None,
        response: ResponseBody::Json(reference::<EventList>),
    },
    Endpoint {
        op: Op::ForksCreate,
        method: Method::Post,
        path: "/v1/forks",
        summary: "Make a copy of the workspace from a checkpoint (one taken now by default), inside this sandbox: requests with the header `x-cove-fork: ID` then work on the copy, with its own shells, files and browser",
        auth: true,
        query: None,
        request: RequestBody::Json(reference::<CreateFork>),
        response: ResponseBody::Json(reference::<ForkInfo>),
    },
    Endpoint {
        op: Op::ForksList,
        method: Method::Get,
        path: "/v1/forks",
        summary: "The forks of the workspace",
        auth: true,
        query: None,
        request: RequestBody::None,
        response: ResponseBody::Json(reference::<ForkList>),
    },
    Endpoint {
        op: Op::ForksChanges,
        method: Method::Get,
        path: "/v1/forks/{id}/changes",
        summary: "What the fork changed since it began, with unified diffs of text files",
        auth: true,
        query: None,
        request: RequestBody::None,
        response: ResponseBody::Json(reference::<CheckpointDiff>),
    },
    Endpoint {
        op: Op::ForksApply,
        method: Method::Post,
        path: "/v1/forks/{id}/apply",
        summary: "Merge the fork's changes into the workspace, file by file: taken where the workspace did not change the file since the fork began, merged where both changed different lines of a text file, and otherwise left alone and named as a conflict (never merged silently)",
        auth: true,
        query: None,
        request: RequestBody::None,
        response: ResponseBody::Json(reference::<ApplyResponse>),
    },
    Endpoint {
        op: Op::ForksDelete,
        method: Method::Delete,
        path: "/v1/forks/{id}",
        summary: "Remove a fork: its processes are killed and its copy deleted",
        auth: true,
        query: None,
        request: RequestBody::None,
        response: ResponseBody::Json(reference::<ForkInfo>),
    },
    Endpoint {
        op: Op::Mcp,
        method: Method::Post,
        path: "/mcp",
        summary: "The sandbox's tools over MCP (streamable HTTP): JSON-RPC messages in, a JSON answer or an event stream out; GET opens the server's stream, DELETE ends a session. A request whose Origin is not the daemon's own is refused (403)",
        auth: true,
        query: None,
        request: RequestBody::Json(inline::<serde_json::Value>),
        response: ResponseBody::Bytes("text/event-stream"),
    },
];

/// The endpoint serving `op` (every `Op` has one; a unit test holds the table to that).
pub fn endpoint(op: Op) -> Option<&'static Endpoint> {
    ENDPOINTS.iter().find(|e| e.op == op)
}

/// Names of the `{param}` placeholders in a route path.
pub fn path_params(path: &str) -> Vec<&str> {
    path.split('/')
        .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
        .collect()
}

fn op_id(op: impl std::fmt::Debug) -> String {
    let name = format!("{op:?}");
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

fn tag(path: &str) -> &str {
    path.trim_start_matches("/v1/")
        .split('/')
        .next()
        .filter(|s| !s.is_empty())
        .unwrap_or("meta")
}

fn query_parameters(schema: &Schema) -> Vec<Value> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    props
        .iter()
        .map(|(name, prop)| {
            let mut param = json!({
                "name": name,
                "in": "query",
                "required": required.contains(&name.as_str()),
                "schema": prop,
            });
            if let Some(desc) = prop.get("description") {
                param["description"] = desc.clone();
            }
            param
        })
        .collect()
}

/// The OpenAPI 3.1 document describing [`ENDPOINTS`], for a daemon of the given version.
pub fn openapi_document(daemon_version: &str) -> Value {
    render_openapi(
        ENDPOINTS,
        json!({
            "title": "coved",
            "version": daemon_version,
            "description": "The Cove sandbox daemon: shell sessions, files, browser, vision and browser takeover over authenticated HTTP. The takeover page (`GET /takeover?token=`) and its WebSocket (`GET /takeover/ws`) take the takeover token instead of the bearer token; previews are served on origins of their own, `p<port>-<run>.<base>` (a server the agent started inside the sandbox) and `files-<run>.<base>` (the workspace's files, read-only), and take the preview token of `/v1/preview/expose` (one per origin, traded for a cookie; cross-origin requests other than navigations are refused) or the bearer token; `/preview/` and `/proxy/{port}/` on this origin serve the bearer token's holder and send browsers to those origins. With `--public-url`, requests for other hosts answer 421.",
        }),
    )
}

/// The OpenAPI 3.1 document of the routes `endpoints`, under `info`.
pub fn render_openapi<O: std::fmt::Debug + Copy>(endpoints: &[Endpoint<O>], info: Value) -> Value {
    let mut generator = SchemaSettings::draft2020_12()
        .with(|s| s.definitions_path = "/components/schemas".into())
        .into_generator();
    let error_ref = generator.subschema_for::<ErrorEnvelope>();
    let mut paths = Map::new();
    for ep in endpoints {
        let mut parameters: Vec<Value> = path_params(ep.path)
            .into_iter()
            .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
            .collect();
        if let Some(query) = ep.query {
            parameters.extend(query_parameters(&query(&mut generator)));
        }
        let mut op = json!({
            "operationId": op_id(ep.op),
            "summary": ep.summary,
            "tags": [tag(ep.path)],
            "parameters": parameters,
            "security": if ep.auth { json!([{"bearer": []}]) } else { json!([]) },
        });
        match ep.request {
            RequestBody::None => {}
            RequestBody::Json(schema) => {
                op["requestBody"] = json!({
                    "required": true,
                    "content": {"application/json": {"schema": schema(&mut generator)}},
                });
            }
            RequestBody::Bytes => {
                op["requestBody"] = json!({
                    "required": true,
                    "content": {"application/octet-stream": {"schema": {"type": "string", "contentMediaType": "application/octet-stream"}}},
                });
            }
        }
        let ok = match ep.response {
            ResponseBody::Json(schema) => json!({
                "description": "Success",
                "content": {"application/json": {"schema": schema(&mut generator)}},
            }),
            ResponseBody::Bytes(mime) => json!({
                "description": "Success",
                "content": {mime: {"schema": {"type": "string", "contentMediaType": mime}}},
            }),
        };
        op["responses"] = json!({
            "200": ok,
            "default": {
                "description": "Error envelope with a stable code",
                "content": {"application/json": {"schema": error_ref.clone()}},
            },
        });
        let entry = paths
            .entry(ep.path.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        entry[ep.method.as_str().to_ascii_lowercase()] = op;
    }
    json!({
        "openapi": "3.1.0",
        "info": info,
        "paths": paths,
        "components": {
            "schemas": generator.take_definitions(true),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn every_op_has_exactly_one_route_and_routes_are_unique() {
        let mut ops = HashSet::new();
        let mut routes = HashSet::new();
        for ep in ENDPOINTS {
            assert!(ops.insert(ep.op), "{:?} listed twice", ep.op);
            assert!(
                routes.insert((ep.method, ep.path)),
                "{} {}",
                ep.method.as_str(),
                ep.path
            );
            assert_eq!(endpoint(ep.op).unwrap().path, ep.path);
        }
        assert_eq!(ops.len(), 63, "a new Op needs a row in ENDPOINTS");
    }

    #[test]
    fn only_health_is_public() {
        let public: Vec<_> = ENDPOINTS
            .iter()
            .filter(|e| !e.auth)
            .map(|e| e.path)
            .collect();
        assert_eq!(public, ["/health"]);
    }

    #[test]
    fn openapi_lists_every_route_and_resolves_every_reference() {
        let doc = openapi_document("0.0.0");
        for ep in ENDPOINTS {
            let op = &doc["paths"][ep.path][ep.method.as_str().to_ascii_lowercase()];
            assert!(op.is_object(), "{} {} missing", ep.method.as_str(), ep.path);
        }
        let text = doc.to_string();
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        for piece in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
            let name = piece.split('"').next().unwrap();
            assert!(schemas.contains_key(name), "dangling $ref to {name}");
        }
        assert!(schemas.contains_key("ExecRequest"));
        assert!(schemas.contains_key("ErrorEnvelope"));
        let list_params = doc["paths"]["/v1/files/list"]["get"]["parameters"]
            .as_array()
            .unwrap();
        let names: Vec<_> = list_params
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["depth", "path"]);
        let output_params = doc["paths"]["/v1/shell/sessions/{name}/output"]["get"]["parameters"]
            .as_array()
            .unwrap();
        assert_eq!(output_params[0]["in"], "path");
        assert_eq!(output_params[1]["name"], "since");
    }

    #[test]
    fn op_ids_are_snake_case() {
        assert_eq!(op_id(Op::FilesStrReplace), "files_str_replace");
        assert_eq!(op_id(Op::Health), "health");
    }
}
