//! A run's settings: what a front end's flags or request set, over `cove.toml`, over what
//! the model's profile and its server say.

use crate::agent::AgentConfig;
use crate::config::FileConfig;
use crate::context::{ContextMode, ContextSettings};
use crate::llm::choice::ModelChoice;
use crate::llm::price::PriceTable;
use crate::llm::profile::profile;
use crate::llm::served::ServedWindow;
use crate::permissions::{Mode, Policy};
use crate::toolcall::ToolMode;

use super::SessionError;

/// What a run's caller may set; `None` leaves it to `cove.toml`, then the default.
#[derive(Debug, Clone, Default)]
pub struct RunSettings {
    /// Iteration cap of the run (default 100).
    pub max_iterations: Option<u32>,
    /// US dollars the run may spend on model calls.
    pub max_cost: Option<f64>,
    /// Seconds one `wait_for_events` may wait at most (default 3600).
    pub max_wait: Option<u64>,
    /// Run a batch of tool calls one after another instead of in parallel.
    pub sequential_tools: bool,
    /// The model's context window (tokens), over what its server or name says.
    pub context_window: Option<u32>,
    /// The output cap of each call (tokens).
    pub max_tokens: Option<u32>,
    /// `auto`, `full` or `compact`.
    pub tools: Option<String>,
    /// Whether the model accepts images.
    pub vision: Option<bool>,
    /// `truncate`, `summarize` or `off`.
    pub context: Option<String>,
    /// Tokens the knowledge section of the system prompt may take.
    pub knowledge_budget: Option<usize>,
    /// The permission mode (`auto`, `ask`, `read-only`, `yolo`).
    pub permissions: Option<String>,
}

impl RunSettings {
    /// The window the caller or `cove.toml` names, if any (then the server is not asked).
    pub fn context_window(&self, file: &FileConfig) -> Option<u32> {
        self.context_window.or(file.context_window)
    }
}

/// Windows this small or smaller get the compact tool set unless told otherwise.
pub const COMPACT_WINDOW: u32 = 16_384;

/// The tool set asked for (`tools`): compact or not; none for auto.
pub fn tool_set(settings: &RunSettings, file: &FileConfig) -> Result<Option<bool>, SessionError> {
    match settings.tools.as_deref().or(file.tools.as_deref()) {
        None | Some("auto") => Ok(None),
        Some("full") => Ok(Some(false)),
        Some("compact") => Ok(Some(true)),
        Some(other) => Err(SessionError::Invalid(format!(
            "tools in cove.toml must be auto, full or compact, not {other:?}"
        ))),
    }
}

/// The engine's settings for a run of `model` from its profile, what its server runs it
/// with, `cove.toml` and the caller's settings (later wins).
pub fn agent_config(
    file: &FileConfig,
    model: &ModelChoice,
    mode: ToolMode,
    settings: &RunSettings,
    workspace_label: String,
    served: Option<&ServedWindow>,
) -> Result<AgentConfig, SessionError> {
    let mut prof = profile(model.provider.as_str(), &model.name);
    // What the server runs the model with beats what its name suggests; the user's word
    // beats both.
    if let Some(served) = served {
        prof.context_window = served.tokens;
    }
    if let Some(window) = settings.context_window(file) {
        prof.context_window = window;
    }
    if let Some(vision) = settings.vision.or(file.vision) {
        prof.vision = vision;
    }
    let max_tokens = settings
        .max_tokens
        .or(file.max_tokens)
        .unwrap_or(prof.max_output)
        .min(prof.context_window / 2)
        .max(256);
    let context = context_settings(file, settings)?;
    let prices = PriceTable::new(&file.prices).map_err(|e| SessionError::Invalid(e.to_string()))?;
    let price = prices.price(&model.name);
    let max_cost = settings.max_cost.or(file.max_cost);
    if let Some(usd) = max_cost {
        if !(usd.is_finite() && usd > 0.0) {
            return Err(SessionError::Invalid(format!(
                "--max-cost must be a number of dollars above 0, not {usd}"
            )));
        }
        if price.is_none() {
            return Err(SessionError::Invalid(format!(
                "--max-cost needs the price of {}, which Cove does not know: set [prices.\"{}\"] with input and output (dollars per million tokens) in cove.toml",
                model.name, model.name
            )));
        }
    }
    let mut config = AgentConfig::new(model.name.clone(), model.label(), prof, mode)
        .max_tokens(max_tokens)
        .parallel_tools(!(settings.sequential_tools || file.sequential_tools.unwrap_or(false)))
        .workspace_label(workspace_label)
        .context(context)
        .price(price)
        .max_cost(max_cost);
    if let Some(secs) = settings.max_wait {
        if secs == 0 {
            return Err(SessionError::Invalid(
                "--max-wait must be at least 1 second".into(),
            ));
        }
        config = config.max_wait(std::time::Duration::from_secs(secs));
    }
    if let Some(iterations) = settings.max_iterations.or(file.max_iterations) {
        config = config.max_iterations(iterations);
    }
    if let Some(wait) = file.mcp_first_call_wait {
        if !(wait.is_finite() && (0.0..=600.0).contains(&wait)) {
            return Err(SessionError::Invalid(format!(
                "mcp_first_call_wait in cove.toml must be 0 to 600 seconds, not {wait}"
            )));
        }
        config = config.mcp_first_call_wait(std::time::Duration::from_secs_f64(wait));
    }
    let mode = settings
        .permissions
        .as_deref()
        .map(str::parse::<Mode>)
        .transpose()
        .map_err(|e| SessionError::Invalid(e.to_string()))?;
    let policy = Policy::new(&file.permissions.clone().unwrap_or_default(), mode)
        .map_err(|e| SessionError::Invalid(format!("[permissions] in cove.toml: {e}")))?;
    Ok(config.permissions(policy))
}

/// How the history is kept within the window.
fn context_settings(
    file: &FileConfig,
    settings: &RunSettings,
) -> Result<ContextSettings, SessionError> {
    let mode = settings
        .context
        .clone()
        .or_else(|| file.context.clone())
        .unwrap_or_else(|| "truncate".into());
    Ok(ContextSettings {
        mode: ContextMode::parse(&mode).ok_or_else(|| {
            SessionError::Invalid(format!(
                "context must be truncate, summarize or off, not {mode:?}"
            ))
        })?,
        knowledge_budget: settings
            .knowledge_budget
            .or(file.knowledge_budget)
            .unwrap_or(crate::context::knowledge::DEFAULT_BUDGET),
        prefix_stable: true,
    })
}
