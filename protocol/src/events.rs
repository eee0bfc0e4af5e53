//! The run event vocabulary: what an agent run reports as it goes, in order. The engine
//! emits these; terminals, `--json` output and any server only render them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Why one model answer ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// The model finished its answer.
    Stop,
    /// The answer hit the output cap; the run continues it automatically.
    Length,
    /// The answer ended to let tools run.
    ToolCalls,
    /// The answer made more tool calls than allowed; the rest were not run.
    XmlToolLimitReached,
    /// A tool ended the run (`ask`, `complete`, `web_browser_takeover`), or the run was stopped.
    AgentTerminated,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The agent finished (`complete`, or an answer without tool calls).
    Completed,
    /// The agent is waiting for the user (`ask`) or for a person to hand the browser back.
    Paused,
    /// The run hit its iteration cap.
    Stopped,
    /// The run failed; an `error` event says why.
    Failed,
}

/// One event of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunEvent {
    /// Position in the run, from 0, without gaps.
    pub seq: u64,
    pub thread_id: String,
    pub run_id: String,
    /// Milliseconds since the Unix epoch.
    pub timestamp_ms: u64,
    #[serde(flatten)]
    pub kind: EventKind,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// A run began.
    ThreadRunStart { model: String, sandbox: String },
    /// The person's message to the agent: the task or a later message that starts the run,
    /// or a reply that ends a takeover the run waits on.
    UserMessage {
        text: String,
        /// What the person did, when Cove wrote the message for them (an approval of the
        /// plan): shown instead of `text`, which is worded for the model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        says: Option<String>,
    },
    /// The model is about to be called for the `iteration`-th time in this run (from 1).
    AssistantResponseStart { iteration: u32 },
    /// A piece of the model's answer, as it streams.
    AssistantText { text: String },
    /// The model call failed in a way worth retrying; the answer so far is discarded.
    LlmRetry {
        attempt: u32,
        delay_ms: u64,
        reason: String,
    },
    /// A tool call began.
    ToolStarted {
        call_id: String,
        tool: String,
        /// The argument that says most about the call (the command, the path, the URL).
        summary: Option<String>,
        arguments: serde_json::Value,
    },
    /// A tool call succeeded.
    ToolCompleted {
        call_id: String,
        tool: String,
        /// The result as the model will read it (shortened for display by renderers).
        output: String,
    },
    /// A tool call failed; the failure goes back to the model.
    ToolFailed {
        call_id: String,
        tool: String,
        error: String,
    },
    /// The agent asks the user something; the run pauses until `cove reply`.
    Ask {
        text: String,
        attachments: Vec<String>,
        /// The sub-agent's thread, when the question is a sub-agent's put through its
        /// parent (the answer goes to it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_thread: Option<String>,
    },
    /// A person is asked to take over the browser at `url`; the run waits until they hand it
    /// back (or `cove reply` answers). `url` and `token` are secrets, never stored.
    Takeover {
        text: String,
        url: Option<String>,
        token: Option<String>,
        expires_at: Option<String>,
    },
    /// The takeover ended (`handed_back`, `released`, `expired` or `replied`); the run goes
    /// on with the browser's fresh state.
    TakeoverEnded {
        reason: String,
        note: Option<String>,
    },
    /// The run waits for watches in the sandbox to fire (`wait_for_events`): `waits_for`
    /// says what in a few words; it wakes by itself, at the latest at `until` (milliseconds
    /// since the epoch).
    WaitingForEvents {
        waits_for: String,
        since: i64,
        until: i64,
    },
    /// The wait ended: what fired (each watch's label and what happened), or that it timed
    /// out; the run goes on with it.
    WaitEnded { text: String, timed_out: bool },
    /// The agent started a sub-agent (`spawn_agents`): a thread of its own, `agent` its
    /// number in the call (from 1).
    AgentSpawned {
        agent: u32,
        thread: String,
        task: String,
    },
    /// A sub-agent is doing something (a tool it started).
    AgentProgress {
        agent: u32,
        thread: String,
        doing: String,
    },
    /// A sub-agent's run ended: `status` is the run's, `answer` what it said it did.
    AgentFinished {
        agent: u32,
        thread: String,
        status: String,
        answer: Option<String>,
        /// Tokens its model calls took (in and out).
        tokens: u64,
        /// What they cost in US dollars, when the model's price is known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost: Option<f64>,
    },
    /// The agent proposed a plan (a new version); the run pauses until the user approves,
    /// edits or rejects it (`cove approve THREAD`, `cove reject THREAD "why"`).
    PlanProposed { plan: crate::plan::Plan },
    /// The plan changed: approved, rejected, or a step's status moved (`update_plan`).
    PlanUpdated {
        plan: crate::plan::Plan,
        /// The agent's note with a step's new status.
        note: Option<String>,
    },
    /// A tool call waits for the user's permission: `summary` says in one line what it will
    /// do, `why` what made the policy ask; answer with one of `decisions`
    /// (`cove permit THREAD REQUEST DECISION`). Other calls of the answer go on meanwhile.
    PermissionRequest {
        request_id: String,
        call_id: String,
        tool: String,
        summary: String,
        why: String,
        arguments: serde_json::Value,
        decisions: Vec<String>,
    },
    /// The user answered a permission request: `allow_once`, `allow_for_thread` or `deny`
    /// (with their `reason`, which the model is told).
    PermissionDecided {
        request_id: String,
        call_id: String,
        decision: String,
        reason: Option<String>,
    },
    /// How an MCP server stands at the run's start: `ready` with its `tools`, `failed` with
    /// the `error` (the run goes on without it), or `disabled` in its configuration.
    McpStatus {
        server: String,
        status: String,
        tools: u32,
        error: Option<String>,
    },
    /// The agent loaded a skill: its instructions are in the conversation and its files were
    /// copied to `path` in the sandbox.
    SkillLoaded {
        name: String,
        path: String,
        files: u32,
    },
    /// The agent declares the task done.
    Complete {
        text: Option<String>,
        attachments: Vec<String>,
    },
    /// The history was cut to fit the model's window for this call (the stored messages are
    /// untouched; `expand_message` reads them back).
    ContextCompressed {
        /// Prompt tokens before and after.
        tokens_before: u64,
        tokens_after: u64,
        /// Older answers whose long tool-call arguments were dropped.
        arguments_dropped: u32,
        /// Messages cut to a threshold.
        truncated: u32,
        /// Messages left out whole.
        omitted: u32,
    },
    /// The model summarized older history, which the summary stands in for from now on.
    ContextSummarized {
        first_message: i64,
        last_message: i64,
        /// How many messages the summary replaces.
        messages: u32,
    },
    /// One model answer ended.
    Finish { finish_reason: FinishReason },
    /// Something went wrong; `fatal` errors end the run.
    Error { message: String, fatal: bool },
    /// The thread was taken back to a checkpoint: what followed it is kept aside, and a
    /// client shows the thread again from its start.
    ThreadRewound {
        checkpoint: String,
        /// The branch number the messages left aside carry.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        branch: Option<i64>,
    },
    /// The run ended: how, what its model calls took and cost, and how long it lasted.
    ThreadRunEnd {
        status: RunStatus,
        /// Tokens over the run's model calls, as the provider billed them.
        #[serde(default)]
        usage: TokenUsage,
        /// What those calls cost in US dollars; absent when the model's price is unknown.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost: Option<f64>,
        /// From the run's start to its end.
        #[serde(default)]
        duration_ms: u64,
    },
}

/// Tokens of one or more model calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TokenUsage {
    /// Model calls counted.
    pub calls: u32,
    /// The prompts, whole (cached and written parts included).
    pub input_tokens: u64,
    /// Of the prompts: read from the provider's cache.
    pub cached_tokens: u64,
    /// Of the prompts: written to the provider's cache.
    pub cache_write_tokens: u64,
    pub output_tokens: u64,
}

impl EventKind {
    /// The event's `type`, as on the wire.
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::ThreadRunStart { .. } => "thread_run_start",
            EventKind::ThreadRewound { .. } => "thread_rewound",
            EventKind::UserMessage { .. } => "user_message",
            EventKind::AssistantResponseStart { .. } => "assistant_response_start",
            EventKind::AssistantText { .. } => "assistant_text",
            EventKind::LlmRetry { .. } => "llm_retry",
            EventKind::ToolStarted { .. } => "tool_started",
            EventKind::ToolCompleted { .. } => "tool_completed",
            EventKind::ToolFailed { .. } => "tool_failed",
            EventKind::Ask { .. } => "ask",
            EventKind::Takeover { .. } => "takeover",
            EventKind::TakeoverEnded { .. } => "takeover_ended",
            EventKind::WaitingForEvents { .. } => "waiting_for_events",
            EventKind::WaitEnded { .. } => "wait_ended",
            EventKind::AgentSpawned { .. } => "agent_spawned",
            EventKind::AgentProgress { .. } => "agent_progress",
            EventKind::AgentFinished { .. } => "agent_finished",
            EventKind::PlanProposed { .. } => "plan_proposed",
            EventKind::PlanUpdated { .. } => "plan_updated",
            EventKind::PermissionRequest { .. } => "permission_request",
            EventKind::PermissionDecided { .. } => "permission_decided",
            EventKind::McpStatus { .. } => "mcp_status",
            EventKind::SkillLoaded { .. } => "skill_loaded",
            EventKind::Complete { .. } => "complete",
            EventKind::ContextCompressed { .. } => "context_compressed",
            EventKind::ContextSummarized { .. } => "context_summarized",
            EventKind::Finish { .. } => "finish",
            EventKind::Error { .. } => "error",
            EventKind::ThreadRunEnd { .. } => "thread_run_end",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_serialise_flat_with_a_type_tag() {
        let event = RunEvent {
            seq: 3,
            thread_id: "t1".into(),
            run_id: "r1".into(),
            timestamp_ms: 1,
            kind: EventKind::Finish {
                finish_reason: FinishReason::XmlToolLimitReached,
            },
        };
        let json = serde_json::to_value(&event).unwrap();
        assert_eq!(json["type"], "finish");
        assert_eq!(json["finish_reason"], "xml_tool_limit_reached");
        assert_eq!(json["seq"], 3);
        let back: RunEvent = serde_json::from_value(json).unwrap();
        assert_eq!(back, event);
        assert_eq!(back.kind.name(), "finish");
    }
}
