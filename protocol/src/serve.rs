//! `cove serve`'s API: its wire types and its route table, from which the server routes and
//! renders `/v1/openapi.json`, as coved does with [`crate::api::ENDPOINTS`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::api::{Endpoint, Method, RequestBody, ResponseBody, inline, reference, render_openapi};
use crate::checkpoints::{CheckpointDiff, DiffQuery};
use crate::files::{ListQuery, ListResponse};
use crate::plan::Plan;

/// Every operation `cove serve` answers under `/v1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServeOp {
    OpenApi,
    ThreadsList,
    ThreadsCreate,
    ThreadGet,
    ThreadDelete,
    ThreadMessages,
    ThreadExport,
    ThreadEvents,
    ThreadReply,
    ThreadPermit,
    ThreadApprove,
    ThreadReject,
    ThreadStop,
    ThreadResume,
    ThreadTakeover,
    ThreadFiles,
    ThreadFileContent,
    ThreadFileView,
    ThreadScreenshot,
    ThreadLatestScreenshot,
    ThreadCheckpoints,
    ThreadCheckpointDiff,
    ThreadRewind,
    ThreadFork,
    Upload,
    Metrics,
}

/// A new thread: its task, started at once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewThreadRequest {
    /// What the agent should do.
    pub task: String,
    /// `provider/model` (default: the server's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `native` or `xml`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<String>,
    /// Propose a plan and wait for approval before changing anything.
    #[serde(default)]
    pub plan: bool,
    /// Where it runs: `local`, or a sandbox named in `cove.toml` or made with `cove sandbox
    /// create` (default: the server's `--sandbox`). A URL is refused: the server does not
    /// send its sandbox token to an address a client picks, so name it in `cove.toml`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// Ids of files uploaded with `POST /v1/uploads`, put in the workspace's `uploads/`
    /// before the run starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<String>,
}

/// Something a thread waits for from a person.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WaitingRequest {
    pub id: String,
    /// `ask`, `permission`, `plan` or `takeover`.
    pub kind: String,
    pub tool: Option<String>,
    /// The question, the call or the plan in one line.
    pub summary: String,
    /// What made the policy ask (permissions).
    pub why: Option<String>,
    pub arguments: Option<Value>,
    pub created_at: i64,
    pub decision: Option<String>,
}

/// A run's wait for its watches in the sandbox.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EventWaitView {
    /// What it waits for, in a few words ("tests to finish").
    pub summary: String,
    /// Since when (milliseconds since the Unix epoch).
    pub since: i64,
    /// When it gives up at the latest.
    pub until: i64,
}

/// A thread as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadView {
    pub id: String,
    pub title: String,
    /// Milliseconds since the Unix epoch.
    pub created_at: i64,
    pub updated_at: i64,
    /// `provider/model`.
    pub model: String,
    pub tool_mode: String,
    /// `local:<workspace>`, `docker:<name>` or a daemon's URL.
    pub sandbox: String,
    /// The thread whose agent started this one as a sub-agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// `new`, `running`, `waiting`, `paused`, `completed`, `stopped` or `failed`.
    pub status: String,
    /// A run of this server works on it now.
    pub running: bool,
    /// What it waits for from a person.
    pub waiting: Vec<WaitingRequest>,
    /// What its run waits for in the sandbox (`wait_for_events`), while it does: it wakes
    /// by itself, no person needed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_for: Option<EventWaitView>,
    /// The number of its newest event (0: none yet).
    pub last_event: u64,
}

/// `GET /v1/threads`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadList {
    /// Newest first.
    pub threads: Vec<ThreadView>,
}

/// `GET /v1/threads/{id}/messages`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MessageList {
    /// The stored conversation: the model's messages and the runs' status events.
    pub messages: Vec<Value>,
}

/// An answer, or the conversation continued.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplyRequest {
    pub text: String,
    /// The waiting question (`waiting[].id` of kind `ask`) this answers: when it was
    /// answered already (another tab), the reply is refused with 409 already_answered
    /// instead of starting a second run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers: Option<String>,
    /// Ids of files uploaded with `POST /v1/uploads`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<String>,
}

/// Where a reply went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReplyResponse {
    /// `run`: to the run waiting on a takeover; `new_run`: a new run of the thread.
    pub delivered: String,
}

/// A decision on a permission request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PermitRequest {
    /// `allow_once`, `allow_for_thread` or `deny`.
    pub decision: String,
    /// Told to the model with a denial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The decision taken.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PermitResponse {
    pub request: String,
    pub decision: String,
    /// Identical requests the same decision released (`allow_for_thread`).
    pub also: Vec<String>,
}

/// Why a plan is rejected.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RejectRequest {
    /// With a reason the agent proposes a new version; without, the thread ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The plan after the user's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlanAnswer {
    pub plan: Plan,
    /// The thread ended with the rejection (no reason was given).
    #[serde(default)]
    pub ended: bool,
}

/// A checkpoint of a thread's workspace, and where in its conversation it was taken.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadCheckpointView {
    /// The sandbox's id for it (`c12`).
    pub checkpoint: String,
    /// The run that took it (empty for one taken by a fork).
    pub run_id: String,
    /// The thread's newest message when it was taken.
    pub after_message: i64,
    /// `run start`, or the tools of the iteration it follows.
    pub reason: String,
    pub files: u64,
    /// Paths changed since the checkpoint before it.
    pub changed: u64,
    /// When (ms since the epoch).
    pub created_at: i64,
}

/// The answer to `GET /v1/threads/{id}/checkpoints`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadCheckpoints {
    /// Oldest first.
    pub checkpoints: Vec<ThreadCheckpointView>,
}

/// What a rewind takes back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RewindScopeWire {
    /// The workspace and the conversation.
    #[default]
    Both,
    /// The workspace only.
    Files,
    /// The conversation only.
    Conversation,
}

/// Body of `POST /v1/threads/{id}/rewind`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RewindRequest {
    /// The checkpoint to go back to.
    pub checkpoint: String,
    #[serde(default)]
    pub scope: RewindScopeWire,
    /// Kill shell sessions still running a command first (else 409 busy).
    #[serde(default)]
    pub stop_commands: bool,
}

/// The answer to `POST /v1/threads/{id}/rewind`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RewindAnswer {
    pub checkpoint: String,
    /// A checkpoint of the files as they were just before (rewinding to it undoes this).
    pub files_before: Option<String>,
    pub written: u64,
    pub removed: u64,
    /// Messages kept aside, and the branch number they carry.
    pub messages_aside: u64,
    pub branch: Option<i64>,
}

/// Body of `POST /v1/threads/{id}/fork`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForkRequest {
    /// The checkpoint to branch from (default: the thread as it is now).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<String>,
}

/// The answer to `POST /v1/threads/{id}/fork`: the new thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ForkAnswer {
    pub thread_id: String,
    pub forked_from: String,
    pub checkpoint: String,
}

/// A run asked to stop, or to start again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Accepted {
    /// What happens now: `stopping` or `resumed`.
    pub state: String,
}

/// The link of a browser takeover.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TakeoverLink {
    /// The takeover page (it carries its own short-lived token).
    pub url: String,
    /// RFC 3339.
    pub expires_at: Option<String>,
    /// The agent asked for it (and waits for the hand-back), rather than the person.
    pub asked_by_agent: bool,
}

/// Query of `POST /v1/uploads`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UploadQuery {
    /// The file's name (no folders); it lands in the workspace as `uploads/NAME`.
    pub name: String,
}

/// A file held for a task or reply that names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Upload {
    pub id: String,
    pub name: String,
    pub size: u64,
}

/// Query of `GET /v1/threads/{id}/files/content`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileContentQuery {
    /// Relative to the workspace.
    pub path: String,
    /// Sent as an attachment to save, rather than shown.
    #[serde(default)]
    pub download: bool,
}

const fn row(
    op: ServeOp,
    method: Method,
    path: &'static str,
    summary: &'static str,
    request: RequestBody,
    response: ResponseBody,
) -> Endpoint<ServeOp> {
    Endpoint {
        op,
        method,
        path,
        summary,
        auth: true,
        query: None,
        request,
        response,
    }
}

/// The whole API of `cove serve` v1 (the page, `/login` and its assets sit outside it).
pub const SERVE_ENDPOINTS: &[Endpoint<ServeOp>] = &[
    row(
        ServeOp::OpenApi,
        Method::Get,
        "/v1/openapi.json",
        "This OpenAPI document",
        RequestBody::None,
        ResponseBody::Bytes("application/json"),
    ),
    row(
        ServeOp::ThreadsList,
        Method::Get,
        "/v1/threads",
        "Every thread, newest first",
        RequestBody::None,
        ResponseBody::Json(reference::<ThreadList>),
    ),
    row(
        ServeOp::ThreadsCreate,
        Method::Post,
        "/v1/threads",
        "A thread for the task, started at once (201)",
        RequestBody::Json(reference::<NewThreadRequest>),
        ResponseBody::Json(reference::<ThreadView>),
    ),
    row(
        ServeOp::ThreadGet,
        Method::Get,
        "/v1/threads/{id}",
        "One thread: its state, what it waits for, its newest event's number",
        RequestBody::None,
        ResponseBody::Json(reference::<ThreadView>),
    ),
    row(
        ServeOp::ThreadDelete,
        Method::Delete,
        "/v1/threads/{id}",
        "Deletes a thread and all that is stored of it: runs, messages, events, screenshots, requests, plans (409 running while it runs: stop it first). Its workspace's files stay",
        RequestBody::None,
        ResponseBody::Json(reference::<Accepted>),
    ),
    row(
        ServeOp::ThreadMessages,
        Method::Get,
        "/v1/threads/{id}/messages",
        "The stored conversation",
        RequestBody::None,
        ResponseBody::Json(reference::<MessageList>),
    ),
    Endpoint {
        query: Some(inline::<ExportQuery>),
        ..row(
            ServeOp::ThreadExport,
            Method::Get,
            "/v1/threads/{id}/export",
            "The thread as one file to keep or share (as `cove export`): a self-contained HTML page with its screenshots (default), Markdown or JSON; no key or token of the server's is in it",
            RequestBody::None,
            ResponseBody::Bytes("text/html"),
        )
    },
    Endpoint {
        query: Some(inline::<EventsQuery>),
        ..row(
            ServeOp::ThreadEvents,
            Method::Get,
            "/v1/threads/{id}/events",
            "Server-Sent Events, `id:` the event's number in the thread; with `Last-Event-ID: N` (or `?after=N`) exactly the events after N, then each new one. The data is `cove run --json`'s event JSON (see RunEvent) with `seq` the same number; a comment every 15 s keeps the stream open",
            RequestBody::None,
            ResponseBody::Bytes("text/event-stream"),
        )
    },
    row(
        ServeOp::ThreadReply,
        Method::Post,
        "/v1/threads/{id}/reply",
        "Ends a takeover the run waits on (200); on a thread not running, starts its next run with the text (202); 409 not_waiting while it runs and waits for no answer, plan_waiting while its plan waits, sub_agent for a sub-agent whose parent's run takes it up (answer the parent)",
        RequestBody::Json(reference::<ReplyRequest>),
        ResponseBody::Json(reference::<ReplyResponse>),
    ),
    row(
        ServeOp::ThreadPermit,
        Method::Post,
        "/v1/threads/{id}/permissions/{request}",
        "Answers a permission request once (409 already_answered for a second answer); a thread not running resumes with it",
        RequestBody::Json(reference::<PermitRequest>),
        ResponseBody::Json(reference::<PermitResponse>),
    ),
    row(
        ServeOp::ThreadApprove,
        Method::Post,
        "/v1/threads/{id}/approve",
        "Approves the plan waiting for approval; the thread runs on (202; 409 no_plan_waiting)",
        RequestBody::None,
        ResponseBody::Json(reference::<PlanAnswer>),
    ),
    row(
        ServeOp::ThreadReject,
        Method::Post,
        "/v1/threads/{id}/reject",
        "Rejects the waiting plan: with a reason the agent proposes another, without one the thread ends (202)",
        RequestBody::Json(reference::<RejectRequest>),
        ResponseBody::Json(reference::<PlanAnswer>),
    ),
    row(
        ServeOp::ThreadStop,
        Method::Post,
        "/v1/threads/{id}/stop",
        "Stops the thread's run (202; 409 not_running)",
        RequestBody::None,
        ResponseBody::Json(reference::<Accepted>),
    ),
    row(
        ServeOp::ThreadResume,
        Method::Post,
        "/v1/threads/{id}/resume",
        "Continues a thread whose run stopped (202; 409 running)",
        RequestBody::None,
        ResponseBody::Json(reference::<Accepted>),
    ),
    row(
        ServeOp::ThreadTakeover,
        Method::Post,
        "/v1/threads/{id}/takeover",
        "The link of the browser takeover the agent asked for, or a new takeover of the running thread's browser (409 not_running when it has none)",
        RequestBody::None,
        ResponseBody::Json(reference::<TakeoverLink>),
    ),
    Endpoint {
        query: Some(inline::<ListQuery>),
        ..row(
            ServeOp::ThreadFiles,
            Method::Get,
            "/v1/threads/{id}/files",
            "The thread's workspace files (its sandbox is opened for it when no run has it open)",
            RequestBody::None,
            ResponseBody::Json(reference::<ListResponse>),
        )
    },
    Endpoint {
        query: Some(inline::<FileContentQuery>),
        ..row(
            ServeOp::ThreadFileContent,
            Method::Get,
            "/v1/threads/{id}/files/content",
            "A workspace file's bytes: shown when its type is safe to show (text, images; HTML and SVG without scripts, in a sandbox of their own), an attachment otherwise or with download=true",
            RequestBody::None,
            ResponseBody::Bytes("application/octet-stream"),
        )
    },
    Endpoint {
        query: Some(inline::<FileContentQuery>),
        ..row(
            ServeOp::ThreadFileView,
            Method::Get,
            "/v1/threads/{id}/files/view",
            "303 to a short-lived address (/view/{token}/{path}) that shows a workspace web page as a browser would, its style sheets, pictures and fonts loaded from beside it; still sandboxed, without scripts",
            RequestBody::None,
            ResponseBody::Bytes("text/html"),
        )
    },
    row(
        ServeOp::ThreadScreenshot,
        Method::Get,
        "/v1/threads/{id}/screenshots/{run}/{call}",
        "The browser (JPEG) as browser tool call `call` of run `run` left it (the `run_id` and `call_id` of its tool_completed or tool_failed event)",
        RequestBody::None,
        ResponseBody::Bytes("image/jpeg"),
    ),
    row(
        ServeOp::ThreadLatestScreenshot,
        Method::Get,
        "/v1/threads/{id}/screenshots/latest",
        "The browser (JPEG) as the thread's newest browser tool call left it",
        RequestBody::None,
        ResponseBody::Bytes("image/jpeg"),
    ),
    row(
        ServeOp::ThreadCheckpoints,
        Method::Get,
        "/v1/threads/{id}/checkpoints",
        "The checkpoints of the thread's workspace, each with where in the conversation it was taken",
        RequestBody::None,
        ResponseBody::Json(reference::<ThreadCheckpoints>),
    ),
    Endpoint {
        query: Some(inline::<DiffQuery>),
        ..row(
            ServeOp::ThreadCheckpointDiff,
            Method::Get,
            "/v1/threads/{id}/checkpoints/{checkpoint}/diff",
            "What changed in the workspace from a checkpoint to another (`to`) or to now, with unified diffs of text files",
            RequestBody::None,
            ResponseBody::Json(reference::<CheckpointDiff>),
        )
    },
    row(
        ServeOp::ThreadRewind,
        Method::Post,
        "/v1/threads/{id}/rewind",
        "Takes the thread's workspace and conversation (or one of them) back to a checkpoint; later messages are kept aside, the thread's streams get `thread_rewound` (409 running, 409 busy)",
        RequestBody::Json(reference::<RewindRequest>),
        ResponseBody::Json(reference::<RewindAnswer>),
    ),
    row(
        ServeOp::ThreadFork,
        Method::Post,
        "/v1/threads/{id}/fork",
        "A new thread from a checkpoint of this one: its conversation up to there, a copy of that workspace in a sandbox of its own (201)",
        RequestBody::Json(reference::<ForkRequest>),
        ResponseBody::Json(reference::<ForkAnswer>),
    ),
    Endpoint {
        query: Some(inline::<UploadQuery>),
        ..row(
            ServeOp::Upload,
            Method::Post,
            "/v1/uploads",
            "Holds a file (the raw body, up to 100 MB) for a task or reply that names its id in `attachments`",
            RequestBody::Bytes,
            ResponseBody::Json(reference::<Upload>),
        )
    },
    row(
        ServeOp::Metrics,
        Method::Get,
        "/metrics",
        "What the server's runs did, in the Prometheus text format: runs by state, model calls, tokens and cost by model, tool calls by tool and outcome, threads waiting, tool and model latencies, open event streams",
        RequestBody::None,
        ResponseBody::Bytes("text/plain; version=0.0.4"),
    ),
];

/// Query of `GET /v1/threads/{id}/export`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExportQuery {
    /// `html` (default), `md` or `json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
}

/// Query of `GET /v1/threads/{id}/events`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventsQuery {
    /// Start after this event (as `Last-Event-ID`, which wins when both are sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<u64>,
}

/// The OpenAPI 3.1 document of [`SERVE_ENDPOINTS`], for a server of the given version.
pub fn openapi_document(version: &str) -> Value {
    let mut doc = render_openapi(
        SERVE_ENDPOINTS,
        json!({
            "title": "cove serve",
            "version": version,
            "description": "Cove's agent over HTTP: threads, their runs' events as Server-Sent Events, and the answers a person gives (replies, permission decisions, plan approval). Every route takes `Authorization: Bearer <token>` (printed by `cove serve`) or the session cookie of the one-time login link it prints (every route also answers under `/k/<key>/`, the cookie's path); a request whose `Origin` is not the server's own is refused (403 cross_origin). Errors are `{\"error\": {\"code\", \"message\"}}`; the codes of this API: unauthorized, cross_origin, not_found, invalid_request, running, starting, not_running, not_waiting, plan_waiting, no_plan_waiting, sub_agent, already_answered, sandbox_unavailable, payload_too_large.",
        }),
    );
    // The events' schema, for clients that read the stream.
    let mut generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| s.definitions_path = "/components/schemas".into())
        .into_generator();
    let event = generator.subschema_for::<crate::events::RunEvent>();
    if let Some(schemas) = doc["components"]["schemas"].as_object_mut() {
        for (name, schema) in generator.take_definitions(true) {
            schemas.entry(name).or_insert(schema);
        }
    }
    doc["paths"]["/v1/threads/{id}/events"]["get"]["responses"]["200"]["content"]["text/event-stream"]
        ["x-event-data"] = serde_json::to_value(event).unwrap_or(Value::Null);
    doc
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn every_op_has_one_route_and_every_reference_resolves() {
        let mut ops = HashSet::new();
        for ep in SERVE_ENDPOINTS {
            assert!(ops.insert(ep.op), "{:?} listed twice", ep.op);
            assert!(ep.auth, "{} needs the token", ep.path);
        }
        assert_eq!(ops.len(), 26, "a new ServeOp needs a row");
        let doc = openapi_document("0.0.0");
        let text = doc.to_string();
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        for piece in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
            let name = piece.split('"').next().unwrap();
            assert!(schemas.contains_key(name), "dangling $ref to {name}");
        }
        assert!(schemas.contains_key("RunEvent"));
        assert_eq!(
            doc["paths"]["/v1/threads/{id}/permissions/{request}"]["post"]["parameters"][1]["name"],
            "request"
        );
        assert_eq!(
            doc["paths"]["/v1/uploads"]["post"]["parameters"][0]["name"],
            "name"
        );
    }
}
