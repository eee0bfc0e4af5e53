//! How runs behave: one constructor with the defaults, and a builder for the rest.

use crate::context::ContextSettings;
use crate::llm::price::{Price, PriceTable};
use crate::llm::profile::ModelProfile;
use crate::llm::retry::RetryPolicy;
use crate::permissions::Policy;

use crate::toolcall::ToolMode;

/// The longest a `wait_for_events` waits unless `--max-wait` says otherwise.
pub const DEFAULT_MAX_WAIT: std::time::Duration = std::time::Duration::from_secs(3600);

/// How long the first model call waits for MCP servers by default: long enough for a fast
/// one, short enough that slow ones never hold up the start.
pub const DEFAULT_MCP_FIRST_CALL_WAIT: std::time::Duration = std::time::Duration::from_millis(200);

/// How runs behave.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// The model's name at its provider.
    pub(crate) model: String,
    /// `provider/model`, for people and the store.
    pub(crate) model_label: String,
    pub(crate) profile: ModelProfile,
    /// Output cap of each call.
    pub(crate) max_tokens: u32,
    pub(crate) mode: ToolMode,
    pub(crate) max_iterations: u32,
    /// How often an answer cut by the output cap is continued.
    pub(crate) max_auto_continues: u32,
    pub(crate) parallel_tools: bool,
    /// Most tool calls one XML answer may make.
    pub(crate) max_calls_per_answer: usize,
    pub(crate) retry: RetryPolicy,
    /// The workspace as the agent should think of it.
    pub(crate) workspace_label: String,
    /// How the history is kept within the window, and the knowledge budget.
    pub(crate) context: ContextSettings,
    /// The permission policy calls pass; none lets every call run.
    pub(crate) permissions: Option<Policy>,
    /// The user approves a plan before the agent changes anything.
    pub(crate) plan_first: bool,
    /// The workspace is checkpointed at the run's start and after iterations that may
    /// change files.
    pub(crate) checkpoints: bool,
    /// No one can answer a permission request while the run goes on: the run pauses on it.
    pub(crate) pause_for_permission: bool,
    /// How long the first model call waits for MCP servers still starting (the later ones
    /// join as they come up).
    pub(crate) mcp_first_call_wait: std::time::Duration,
    /// What the model's calls cost, when known.
    pub(crate) price: Option<Price>,
    /// US dollars a run may spend on model calls.
    pub(crate) max_cost: Option<f64>,
    /// The longest one `wait_for_events` waits, whatever the model asks.
    pub(crate) max_wait: std::time::Duration,
    /// How deep this run is among sub-agents (0: the user's own run).
    pub(crate) depth: u32,
    /// How deep sub-agents may go (1: the user's run may start them, they may not).
    pub(crate) max_depth: u32,
    /// Sub-agents working at once, at most.
    pub(crate) max_children: usize,
}

impl AgentConfig {
    /// The configuration of runs of `model` (`label` is its `provider/model`) in `mode`, with
    /// the defaults: 100 iterations, 25 continues of a cut answer, 10 calls per answer, tools
    /// in parallel, an output cap of the profile's (at most half the window), the default
    /// retries and context handling, the workspace at `/workspace`, the model's price from
    /// the built-in table, no cost limit.
    pub fn new(
        model: impl Into<String>,
        label: impl Into<String>,
        profile: ModelProfile,
        mode: ToolMode,
    ) -> AgentConfig {
        let model = model.into();
        AgentConfig {
            price: PriceTable::default().price(&model),
            max_cost: None,
            max_wait: DEFAULT_MAX_WAIT,
            depth: 0,
            max_depth: 1,
            max_children: 4,
            model,
            model_label: label.into(),
            max_tokens: profile.max_output.min(profile.context_window / 2).max(256),
            profile,
            mode,
            max_iterations: 100,
            max_auto_continues: 25,
            parallel_tools: true,
            max_calls_per_answer: 10,
            retry: RetryPolicy::default(),
            workspace_label: "/workspace".into(),
            context: ContextSettings::default(),
            permissions: None,
            plan_first: false,
            checkpoints: true,
            pause_for_permission: false,
            mcp_first_call_wait: DEFAULT_MCP_FIRST_CALL_WAIT,
        }
    }

    /// What the model's calls cost (`None`: unknown, so runs report tokens only).
    pub fn price(mut self, price: Option<Price>) -> Self {
        self.price = price;
        self
    }

    /// US dollars a run may spend: it stops, resumable, before a call whose worst case (its
    /// whole prompt uncached, its full output cap) would take it past the limit.
    pub fn max_cost(mut self, usd: Option<f64>) -> Self {
        self.max_cost = usd;
        self
    }

    /// How deep sub-agents may go (default 1: the user's run may start them, they may not)
    /// and how many work at once (default 4).
    pub fn sub_agents(mut self, max_depth: u32, max_children: usize) -> Self {
        self.max_depth = max_depth;
        self.max_children = max_children.max(1);
        self
    }

    /// The longest one `wait_for_events` waits (`--max-wait`).
    pub fn max_wait(mut self, wait: std::time::Duration) -> Self {
        self.max_wait = wait;
        self
    }

    /// How long the first model call waits for MCP servers still starting.
    pub fn mcp_first_call_wait(mut self, wait: std::time::Duration) -> Self {
        self.mcp_first_call_wait = wait;
        self
    }

    /// Output cap of each call.
    pub fn max_tokens(mut self, tokens: u32) -> Self {
        self.max_tokens = tokens;
        self
    }

    /// Most model calls of one run.
    pub fn max_iterations(mut self, iterations: u32) -> Self {
        self.max_iterations = iterations.max(1);
        self
    }

    /// How often an answer cut by the output cap is continued.
    pub fn max_auto_continues(mut self, continues: u32) -> Self {
        self.max_auto_continues = continues;
        self
    }

    /// Whether the tool calls of one answer run at once.
    pub fn parallel_tools(mut self, parallel: bool) -> Self {
        self.parallel_tools = parallel;
        self
    }

    /// Most tool calls one XML answer may make.
    pub fn max_calls_per_answer(mut self, calls: usize) -> Self {
        self.max_calls_per_answer = calls.max(1);
        self
    }

    /// How failed model calls are retried.
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The workspace as the agent should think of it.
    pub fn workspace_label(mut self, label: impl Into<String>) -> Self {
        self.workspace_label = label.into();
        self
    }

    /// How the history is kept within the window, and the knowledge budget.
    pub fn context(mut self, context: ContextSettings) -> Self {
        self.context = context;
        self
    }

    /// The permission policy every tool call passes: calls it asks about wait for a
    /// decision ([`super::RunHandle::permit`], or any process on the store). Without one,
    /// every call runs.
    pub fn permissions(mut self, policy: Policy) -> Self {
        self.permissions = Some(policy);
        self
    }

    /// Tells the policy whether walls stand between the agent and this machine.
    pub fn walls(mut self, walled: bool) -> Self {
        self.permissions = self.permissions.map(|p| p.with_walls(walled));
        self
    }

    /// Tells the policy which places of this machine a sandbox walled in on it shows
    /// ([`Policy::with_machine_view`]).
    pub fn machine_view(mut self, shown: Vec<std::path::PathBuf>) -> Self {
        self.permissions = self.permissions.map(|p| p.with_machine_view(shown));
        self
    }

    /// Whether the agent must have a plan approved (`create_plan`) before it changes
    /// anything: until then calls that change something are refused.
    pub fn plan_first(mut self, plan_first: bool) -> Self {
        self.plan_first = plan_first;
        self
    }

    /// Whether the run checkpoints the workspace (at its start and after iterations that may
    /// change files), so the thread can be rewound or forked.
    pub fn checkpoints(mut self, on: bool) -> Self {
        self.checkpoints = on;
        self
    }

    /// Whether a call that needs the user's permission pauses the run (once the answer's
    /// other calls are done; `RunOutcome::Paused` with `PauseKind::Permission`) instead of
    /// waiting in it: for callers with no one to answer while the run goes on. The request
    /// stays open; the next run of the thread applies its decision.
    pub fn pause_for_permission(mut self, pause: bool) -> Self {
        self.pause_for_permission = pause;
        self
    }
}
