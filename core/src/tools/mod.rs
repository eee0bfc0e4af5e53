//! The agent's tools: the sandbox's (shell, files, browser, vision, preview: defined once in
//! `cove-tools`, which coved's MCP server offers too), the message tools that end a run, plans,
//! history, skills, and the tools of the user's MCP servers.
//!
//! Names and parameters are Suna's, so prompts and habits carry over. Each of Cove's own tools
//! is a [`ToolDef`] with a JSON schema (derived from its argument type), an example for the XML
//! documentation, and an async function that runs it.

mod agents;
mod expand;
mod mcp;
mod mcp_result;
mod message;
mod plan;
mod skill;
mod watch;
mod web;

use std::sync::Arc;

use cove_protocol::browser::BrowserState;
use cove_protocol::client::{ClientError, CovedClient};
use serde_json::Value;

pub use cove_tools::{
    Image, MAX_RESULT_CHARS, ReadOffsets, SandboxEnv, cap_text, checkpoint_diff_text,
    describe_client_error, workspace_path,
};
pub use expand::{EXPAND_MESSAGE, MessageArchive};

use crate::llm::ToolSpec;
use crate::mcp::{McpHub, McpTool};
use crate::skills::Skill;
use crate::web::WebTools;
use cove_tools::{ToolOutput, types_of, xml_arguments};

/// One of Cove's own tools (not the sandbox's).
pub type ToolDef = cove_tools::ToolDef<ToolEnv, ToolResult>;

/// How a tool ends the run, if it does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Control {
    /// Pause for the user's answer.
    Ask {
        text: String,
        attachments: Vec<String>,
    },
    /// The task is done.
    Complete {
        text: Option<String>,
        attachments: Vec<String>,
    },
    /// Wait while a person handles the browser, at the page `grant` names.
    Takeover {
        text: String,
        grant: cove_protocol::takeover::TakeoverGrant,
    },
    /// Propose this plan and wait for the user's approval.
    Plan { draft: crate::store::PlanDraft },
    /// The call did not run: it waits for the user's decision on permission request
    /// `request_id`, which no one can give while the run goes on, so the run pauses.
    AwaitsPermission { request_id: String, summary: String },
    /// Wait until watches of the thread fire (`watches`, or any when empty), at most
    /// `timeout_secs`; the run fills in the call this result belongs to.
    WaitForEvents {
        call_id: String,
        tool: String,
        timeout_secs: u64,
        watches: Vec<String>,
    },
    /// Run these sub-agents, at most `max_parallel` at once, and answer the call with what
    /// each did; the run fills in the call.
    SpawnAgents {
        call_id: String,
        tool: String,
        agents: Vec<ChildTask>,
        max_parallel: usize,
    },
}

impl Control {
    /// Whether this control's call gets its result only once the run has done what it
    /// asks (waited, run the sub-agents); if so, it learns the call it belongs to.
    pub fn deferred_for(&mut self, id: &str, name: &str) -> bool {
        match self {
            Control::WaitForEvents { call_id, tool, .. }
            | Control::SpawnAgents { call_id, tool, .. } => {
                id.clone_into(call_id);
                name.clone_into(tool);
                true
            }
            _ => false,
        }
    }
}

/// One sub-agent `spawn_agents` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildTask {
    pub task: String,
    /// The tools it may use (none: the parent's, less those a sub-agent never has).
    pub tools: Option<Vec<String>>,
    /// It works in its own copy of the workspace, its changes handed back as a patch.
    pub fork: bool,
}

/// What a tool call produced.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub ok: bool,
    /// What the model reads.
    pub text: String,
    /// The browser state after the call, shown to the model in its next call only.
    pub browser_state: Option<BrowserState>,
    /// An image to show the model in its next call only.
    pub image: Option<Image>,
    pub control: Option<Control>,
    /// What the call did that the run announces with its result (`plan_updated`,
    /// `skill_loaded`).
    pub event: Option<cove_protocol::events::EventKind>,
}

impl ToolResult {
    /// A success.
    pub fn ok(text: impl Into<String>) -> Self {
        cove_tools::ToolResult::ok(text).into()
    }

    /// A failure, reported to the model.
    pub fn error(text: impl Into<String>) -> Self {
        cove_tools::ToolResult::error(text).into()
    }

    /// A failure from the sandbox, with the fresh browser state if it sent one.
    pub fn from_client(error: &ClientError) -> Self {
        cove_tools::ToolResult::from_client(error).into()
    }
}

impl From<cove_tools::ToolResult> for ToolResult {
    fn from(result: cove_tools::ToolResult) -> Self {
        ToolResult {
            ok: result.ok,
            text: result.text,
            browser_state: result.browser_state,
            image: result.image,
            control: None,
            event: None,
        }
    }
}

impl ToolOutput for ToolResult {
    fn failure(text: String) -> Self {
        ToolResult::error(text)
    }

    fn text_mut(&mut self) -> &mut String {
        &mut self.text
    }
}

/// What the tools that keep a thread's records reach: the store, and which thread.
#[derive(Debug, Clone)]
pub struct ThreadBook {
    pub store: Arc<crate::store::Store>,
    pub thread: String,
}

/// What one tool call can reach: the sandbox and what its run has shown the model, the
/// thread's history and plan, the MCP servers and the skills.
#[derive(Debug, Clone)]
pub struct ToolEnv {
    /// What the sandbox's tools reach.
    pub base: SandboxEnv,
    /// The thread's stored messages, for `expand_message`.
    pub archive: Option<MessageArchive>,
    /// The thread's records (its plan, its watches), for `update_plan` and the watch tools.
    pub book: Option<ThreadBook>,
    /// The MCP servers, for `mcp_search_tools`.
    pub mcp: Option<Arc<McpHub>>,
    /// The user's skills, for `load_skill`.
    pub skills: Arc<Vec<Skill>>,
    /// The search provider and images API, for the web tools.
    pub web: Arc<WebTools>,
}

impl ToolEnv {
    /// An environment over `sandbox` that has shown the model nothing yet.
    pub fn new(sandbox: CovedClient, vision: bool) -> Self {
        ToolEnv {
            base: SandboxEnv::new(sandbox, vision),
            archive: None,
            book: None,
            mcp: None,
            skills: Arc::default(),
            web: Arc::default(),
        }
    }
}

impl std::ops::Deref for ToolEnv {
    type Target = SandboxEnv;

    fn deref(&self) -> &SandboxEnv {
        &self.base
    }
}

/// Defines one of Cove's own tools from a typed async function.
macro_rules! tool {
    ($($rest:tt)*) => {
        cove_tools::tool_def!(
            env: $crate::tools::ToolEnv,
            output: $crate::tools::ToolResult,
            $($rest)*
        )
    };
}
pub(crate) use tool;

/// A tool as a run offers it: the sandbox's, one of Cove's own, or one an MCP server offers.
#[derive(Debug, Clone)]
pub enum Tool {
    Sandbox(cove_tools::ToolDef),
    Own(ToolDef),
    Mcp(McpTool),
}

/// The native description of a defined tool.
fn spec_of<E, R: ToolOutput>(def: &cove_tools::ToolDef<E, R>) -> ToolSpec {
    ToolSpec {
        name: def.name.to_string(),
        description: def.description.to_string(),
        parameters: def.schema(),
    }
}

impl Tool {
    /// The name the model calls it by.
    pub fn name(&self) -> &str {
        match self {
            Tool::Sandbox(def) => def.name,
            Tool::Own(def) => def.name,
            Tool::Mcp(tool) => &tool.name,
        }
    }

    /// The name permission rules match: its own, or `mcp:SERVER:TOOL`.
    pub fn policy_name(&self) -> String {
        match self {
            Tool::Mcp(tool) => tool.policy_name(),
            other => other.name().to_string(),
        }
    }

    /// The native tool description.
    pub fn spec(&self) -> ToolSpec {
        match self {
            Tool::Sandbox(def) => spec_of(def),
            Tool::Own(def) => spec_of(def),
            Tool::Mcp(tool) => tool.spec(),
        }
    }

    fn schema(&self) -> Value {
        match self {
            Tool::Sandbox(def) => def.schema(),
            Tool::Own(def) => def.schema(),
            Tool::Mcp(tool) => tool.schema.clone(),
        }
    }

    /// Arguments from an XML call's raw strings, typed by the schema.
    pub fn arguments_from_xml(&self, parameters: &[(String, String)]) -> Result<Value, String> {
        match self {
            Tool::Sandbox(def) => def.arguments_from_xml(parameters),
            Tool::Own(def) => def.arguments_from_xml(parameters),
            Tool::Mcp(tool) => xml_arguments(&tool.name, &tool.schema, &[], parameters),
        }
    }

    /// The argument that says most about a call, shortened: for an MCP tool, its first
    /// required text argument.
    pub fn summarize(&self, arguments: &Value) -> Option<String> {
        match self {
            Tool::Sandbox(def) => def.summarize(arguments),
            Tool::Own(def) => def.summarize(arguments),
            Tool::Mcp(tool) => {
                let required = tool.schema.get("required").and_then(Value::as_array)?;
                let text = required
                    .iter()
                    .filter_map(Value::as_str)
                    .find_map(|key| arguments.get(key).and_then(Value::as_str))?;
                Some(cap_text(text.lines().next().unwrap_or_default(), 120))
            }
        }
    }

    /// Runs the tool. Arguments that do not fit come back as an error.
    pub async fn call(&self, env: &ToolEnv, arguments: Value) -> ToolResult {
        match self {
            Tool::Sandbox(def) => def.call(&env.base, arguments).await.into(),
            Tool::Own(def) => def.call(env, arguments).await,
            Tool::Mcp(tool) => {
                let Value::Object(arguments) = arguments else {
                    return ToolResult::error("the arguments are not a JSON object");
                };
                let mut result = match tool.server.call(&tool.raw, arguments).await {
                    Ok(result) => mcp_result::tool_result(&tool.name, result, env.vision),
                    Err(e) => ToolResult::error(e.to_string()),
                };
                result.text = cap_text(&result.text, MAX_RESULT_CHARS);
                result
            }
        }
    }

    /// How to call it in Suna's XML format: what it does, its parameters, an example.
    fn xml_documentation(&self) -> String {
        let schema = self.schema();
        let (description, example) = match self {
            Tool::Sandbox(def) => (def.description.to_string(), def.xml_example()),
            Tool::Own(def) => (def.description.to_string(), def.xml_example()),
            Tool::Mcp(tool) => (tool.spec().description, xml_example_of(&tool.name, &schema)),
        };
        let mut out = format!("### {}\n{description}\n", self.name());
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            for (name, prop) in props {
                let kind = types_of(prop)
                    .into_iter()
                    .filter(|t| *t != "null")
                    .collect::<Vec<_>>()
                    .join("|");
                let need = if required.contains(&name.as_str()) {
                    "required"
                } else {
                    "optional"
                };
                let about = prop
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                out.push_str(&format!("- {name} ({kind}, {need}): {about}\n"));
            }
        }
        out.push_str(&format!("Example:\n{example}\n\n"));
        out
    }
}

/// An XML call of a tool with no written example: each required parameter with a stand-in.
fn xml_example_of(name: &str, schema: &Value) -> String {
    let mut out = format!("<invoke name=\"{name}\">\n");
    for key in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        out.push_str(&format!("<parameter name=\"{key}\">...</parameter>\n"));
    }
    out.push_str("</invoke>");
    out
}

/// The tools of a run: the sandbox's, Cove's own and, when servers are configured, the
/// MCP servers'.
#[derive(Debug, Clone)]
pub struct ToolRegistry {
    tools: Vec<Tool>,
    mcp: Option<Arc<McpHub>>,
    skills: Arc<Vec<Skill>>,
    web: Arc<WebTools>,
    /// Only the core tools are offered (a small window), with the plan tools when asked.
    compact: Option<Compact>,
}

/// What a compact tool set offers besides the core tools.
#[derive(Debug, Clone, Copy)]
struct Compact {
    plans: bool,
}

/// The tools a compact set offers: the shell, files, the web, the browser's basic actions,
/// and talking to the user. Enough for most tasks, in about half the tokens.
pub const COMPACT_TOOLS: [&str; 17] = [
    "execute_command",
    "check_command_output",
    "send_command_input",
    "create_file",
    "read_file",
    "str_replace",
    "list_files",
    "web_search",
    "web_fetch",
    "browser_navigate_to",
    "browser_click_element",
    "browser_input_text",
    "browser_scroll_down",
    "browser_handle_dialog",
    "expand_message",
    "ask",
    "complete",
];

impl ToolRegistry {
    /// Every standard tool.
    pub fn standard() -> Self {
        let mut tools: Vec<Tool> = cove_tools::sandbox_tools()
            .into_iter()
            .map(Tool::Sandbox)
            .collect();
        let own = [
            message::tools(),
            plan::tools(),
            expand::tools(),
            mcp::tools(),
            skill::tools(),
            web::tools(),
            watch::tools(),
            agents::tools(),
        ];
        tools.extend(own.into_iter().flatten().map(Tool::Own));
        ToolRegistry::of(tools)
    }

    /// A registry of exactly these tools.
    pub fn of(tools: Vec<Tool>) -> Self {
        ToolRegistry {
            tools,
            mcp: None,
            skills: Arc::default(),
            web: Arc::default(),
            compact: None,
        }
    }

    /// The same registry offering only [`COMPACT_TOOLS`] (and the plan tools when `plans`),
    /// for models whose window the full set would crowd.
    pub fn compact(mut self, plans: bool) -> Self {
        self.compact = Some(Compact { plans });
        self
    }

    /// Whether only the compact set is offered.
    pub fn is_compact(&self) -> bool {
        self.compact.is_some()
    }

    /// The registry a sub-agent gets: these tools (only those `allowed` names, when it
    /// names some, and `complete`), less what a sub-agent never has (plans, a takeover),
    /// with `spawn_agents` only when it `may_spawn`. Its `ask` reaches the person through
    /// its parent's thread.
    pub fn for_child(&self, allowed: Option<&[String]>, may_spawn: bool) -> ToolRegistry {
        /// A sub-agent has no plan of its own, nor a browser to hand a person.
        const NOT_FOR_CHILDREN: &[&str] = &["web_browser_takeover", "create_plan", "update_plan"];
        let mut child = self.clone();
        child.tools.retain(|t| {
            let name = t.name();
            let listed = allowed
                .is_none_or(|a| name == "complete" || name == "ask" || a.iter().any(|x| x == name));
            listed
                && !NOT_FOR_CHILDREN.contains(&name)
                && (may_spawn || name != agents::SPAWN_AGENTS)
        });
        if allowed.is_some() {
            // Named tools are Cove's and the sandbox's; MCP tools come with the whole set.
            child.mcp = None;
        }
        child
    }

    /// The same tools, searching and making images with `web`'s providers.
    pub fn with_web(mut self, web: WebTools) -> Self {
        self.web = Arc::new(web);
        self
    }

    /// The search provider and images API the web tools use.
    pub fn web(&self) -> &Arc<WebTools> {
        &self.web
    }

    /// The same tools, and `load_skill` for these skills.
    pub fn with_skills(mut self, skills: Vec<Skill>) -> Self {
        self.skills = Arc::new(skills);
        self
    }

    /// The skills `load_skill` loads.
    pub fn skills(&self) -> &Arc<Vec<Skill>> {
        &self.skills
    }

    /// The same tools and the tools of `hub`'s servers.
    pub fn with_mcp(mut self, hub: Arc<McpHub>) -> Self {
        self.mcp = Some(hub);
        self
    }

    /// The MCP servers, if any are configured.
    pub fn mcp(&self) -> Option<&Arc<McpHub>> {
        self.mcp.as_ref()
    }

    /// Whether `tool` is offered now: `mcp_search_tools` only while MCP tools are deferred
    /// or servers are starting,
    /// `load_skill` only when there are skills.
    fn offers(&self, tool: &Tool) -> bool {
        if let Some(compact) = self.compact {
            let name = tool.name();
            let plan_tool = matches!(name, "create_plan" | "update_plan");
            let always = matches!(name, mcp::SEARCH_TOOLS | skill::LOAD_SKILL);
            if !(COMPACT_TOOLS.contains(&name) || (compact.plans && plan_tool) || always) {
                return false;
            }
        }
        match tool.name() {
            mcp::SEARCH_TOOLS => self
                .mcp
                .as_ref()
                .is_some_and(|m| m.is_deferred() || m.starting()),
            skill::LOAD_SKILL => !self.skills.is_empty(),
            web::GENERATE_IMAGE | web::EDIT_IMAGE => self.web.images.is_some(),
            _ => true,
        }
    }

    /// The tool called `name` (or by the name Suna's prompts use for it): an MCP tool is
    /// found even while deferred.
    pub fn get(&self, name: &str) -> Option<Tool> {
        if let Some(tool) = self.tools.iter().find(|t| t.name() == name) {
            // The search is offered while a server starts; called once it is up (the model
            // asked a moment before), it still answers.
            let callable =
                self.offers(tool) || (tool.name() == mcp::SEARCH_TOOLS && self.mcp.is_some());
            return callable.then(|| tool.clone());
        }
        if let Some(alias) = cove_tools::sandbox_aliases()
            .into_iter()
            .find(|t| t.name == name)
        {
            return Some(Tool::Sandbox(alias));
        }
        self.mcp.as_ref()?.tool(name).map(Tool::Mcp)
    }

    /// The tool called `name`, waiting first for the MCP server it would be from when that
    /// server is still starting; why there is none otherwise.
    pub async fn resolve(&self, name: &str) -> Result<Tool, String> {
        if let Some(tool) = self.get(name) {
            return Ok(tool);
        }
        let Some(hub) = &self.mcp else {
            return Err(format!("there is no tool named {name:?}"));
        };
        hub.wait_for_owner(name).await;
        self.get(name).ok_or_else(|| {
            hub.why_missing(name)
                .unwrap_or_else(|| format!("there is no tool named {name:?}"))
        })
    }

    /// The built-in tools (the sandbox's and Cove's own), in order.
    pub fn all(&self) -> &[Tool] {
        &self.tools
    }

    /// The tools offered to the model now.
    pub fn offered(&self) -> Vec<Tool> {
        let mut tools: Vec<Tool> = self
            .tools
            .iter()
            .filter(|t| self.offers(t))
            .cloned()
            .collect();
        if let Some(hub) = &self.mcp {
            tools.extend(hub.offered().into_iter().map(Tool::Mcp));
        }
        tools
    }

    /// Native tool descriptions of the tools offered now.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.offered().iter().map(Tool::spec).collect()
    }

    /// The tools offered now, described for XML mode.
    pub fn xml_documentation(&self) -> String {
        self.offered().iter().map(Tool::xml_documentation).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_tools_have_unique_names_and_the_ones_prompts_expect() {
        let registry = ToolRegistry::standard();
        let mut names = std::collections::HashSet::new();
        for tool in registry.all() {
            assert!(
                names.insert(tool.name().to_string()),
                "{} twice",
                tool.name()
            );
            assert_eq!(tool.spec().parameters["type"], "object", "{}", tool.name());
        }
        for wanted in [
            "execute_command",
            "check_command_output",
            "send_command_input",
            "terminate_command",
            "list_commands",
            "create_file",
            "read_file",
            "full_file_rewrite",
            "str_replace",
            "delete_file",
            "list_files",
            "browser_navigate_to",
            "browser_go_back",
            "browser_wait",
            "browser_click_element",
            "browser_click_coordinates",
            "browser_input_text",
            "browser_send_keys",
            "browser_switch_tab",
            "browser_close_tab",
            "browser_scroll_down",
            "browser_scroll_up",
            "browser_scroll_to_text",
            "browser_get_dropdown_options",
            "browser_select_dropdown_option",
            "browser_drag_drop",
            "browser_handle_dialog",
            "see_image",
            "expose_port",
            "ask",
            "complete",
            "web_browser_takeover",
            "expand_message",
            "web_search",
            "web_fetch",
        ] {
            assert!(registry.get(wanted).is_some(), "{wanted} missing");
        }
        // Offered only when there is something for them to do.
        assert!(registry.get("load_skill").is_none());
        assert!(registry.get("generate_image").is_none());
        assert!(registry.get("edit_image").is_none());
        // Suna's name for reading a page.
        assert!(registry.get("scrape_webpage").is_some());
        assert!(
            !registry
                .offered()
                .iter()
                .any(|t| t.name() == "scrape_webpage")
        );
        assert!(registry.get("mcp_search_tools").is_none());
    }

    #[test]
    fn every_own_tool_has_an_example_that_fits_its_schema() {
        for tool in ToolRegistry::standard().all() {
            let Tool::Own(def) = tool else { continue };
            def.check_example().unwrap();
        }
    }
}
