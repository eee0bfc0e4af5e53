//! The agent's tools: every coved endpoint as a tool, plus the message tools that end a run.
//!
//! Names and parameters are Suna's, so prompts and habits carry over. Each tool is a
//! [`ToolDef`] with a JSON schema (derived from its argument type), an example for the XML
//! documentation, and an async function that calls the sandbox.

mod browser;
mod expand;
mod files;
mod mcp;
mod message;
mod plan;
mod preview;
mod shell;
mod skill;
mod vision;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cove_protocol::browser::BrowserState;
use cove_protocol::client::{ClientError, CovedClient};
use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

pub use expand::{EXPAND_MESSAGE, MessageArchive};
pub use plan::PlanBook;

use crate::llm::ToolSpec;
use crate::mcp::{McpHub, McpTool};
use crate::skills::Skill;

/// Longest tool result the model reads; longer ones keep head and tail.
pub const MAX_RESULT_CHARS: usize = 20_000;

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
}

/// An image for the model's next call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    pub mime: String,
    pub base64: String,
    /// What it is, for the model.
    pub caption: String,
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
        ToolResult {
            ok: true,
            text: text.into(),
            browser_state: None,
            image: None,
            control: None,
            event: None,
        }
    }

    /// A failure, reported to the model.
    pub fn error(text: impl Into<String>) -> Self {
        ToolResult {
            ok: false,
            ..Self::ok(text)
        }
    }

    /// A failure from the sandbox, with the fresh browser state if it sent one.
    pub fn from_client(error: &ClientError) -> Self {
        let mut result = Self::error(describe_client_error(error));
        result.browser_state = error.browser_state();
        result
    }
}

/// What a sandbox error says, for the model: the daemon's message without HTTP details.
pub fn describe_client_error(error: &ClientError) -> String {
    match error {
        ClientError::Api { code, message, .. } => format!("{message} ({code})"),
        other => other.to_string(),
    }
}

/// Per shell session, how much output `check_command_output` has already shown. It belongs
/// to the sandbox, not to a run: a thread's next run goes on reading where the last one was.
pub type ReadOffsets = Arc<Mutex<HashMap<String, u64>>>;

/// What one tool call can reach: the sandbox, and what its run has shown the model.
#[derive(Debug, Clone)]
pub struct ToolEnv {
    pub sandbox: CovedClient,
    /// The model accepts images.
    pub vision: bool,
    pub read_offsets: ReadOffsets,
    /// The browser snapshot the model last saw: element indices refer to it.
    pub snapshot_id: Option<u64>,
    /// The thread's stored messages, for `expand_message`.
    pub archive: Option<MessageArchive>,
    /// The thread's plan, for `update_plan`.
    pub plans: Option<PlanBook>,
    /// The MCP servers, for `mcp_search_tools`.
    pub mcp: Option<Arc<McpHub>>,
    /// The user's skills, for `load_skill`.
    pub skills: Arc<Vec<Skill>>,
}

impl ToolEnv {
    /// An environment over `sandbox` that has shown the model nothing yet.
    pub fn new(sandbox: CovedClient, vision: bool) -> Self {
        ToolEnv {
            sandbox,
            vision,
            read_offsets: ReadOffsets::default(),
            snapshot_id: None,
            archive: None,
            plans: None,
            mcp: None,
            skills: Arc::default(),
        }
    }
}

type Runner = for<'a> fn(&'a ToolEnv, Value) -> BoxFuture<'a, ToolResult>;

/// One tool.
#[derive(Clone, Copy)]
pub struct ToolDef {
    pub name: &'static str,
    pub description: &'static str,
    schema: fn() -> Value,
    example: fn() -> Value,
    /// The argument that says most about a call (shown as it runs).
    pub summary: Option<&'static str>,
    /// Parameters whose XML values are content, kept exactly (others are trimmed).
    raw: &'static [&'static str],
    run: Runner,
}

impl std::fmt::Debug for ToolDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolDef")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl ToolDef {
    /// The JSON schema of the arguments.
    pub fn schema(&self) -> Value {
        (self.schema)()
    }

    /// The native tool description.
    pub fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name.to_string(),
            description: self.description.to_string(),
            parameters: self.schema(),
        }
    }

    /// How to call it in Suna's XML format.
    pub fn xml_example(&self) -> String {
        let mut out = format!("<invoke name=\"{}\">\n", self.name);
        if let Some(args) = (self.example)().as_object() {
            for (key, value) in args {
                let raw = match value {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                out.push_str(&format!("<parameter name=\"{key}\">{raw}</parameter>\n"));
            }
        }
        out.push_str("</invoke>");
        out
    }

    /// Runs the tool. Arguments that do not fit its schema come back as an error.
    pub async fn call(&self, env: &ToolEnv, arguments: Value) -> ToolResult {
        let mut result = (self.run)(env, arguments).await;
        // expand_message pages its own output to fit the window: capping it would defeat it.
        if self.name != EXPAND_MESSAGE {
            result.text = cap_text(&result.text, MAX_RESULT_CHARS);
        }
        result
    }

    /// Arguments from an XML call's raw strings, typed by the schema.
    pub fn arguments_from_xml(&self, parameters: &[(String, String)]) -> Result<Value, String> {
        xml_arguments(self.name, &self.schema(), self.raw, parameters)
    }

    /// The value of the summary argument of a call, shortened.
    pub fn summarize(&self, arguments: &Value) -> Option<String> {
        let key = self.summary?;
        let value = arguments.get(key)?;
        let text = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let line = text.lines().next().unwrap_or_default();
        Some(cap_text(line, 120))
    }
}

/// Arguments from an XML call's raw strings, typed by the tool's `schema`; the `raw`
/// parameters are kept exactly, the others trimmed.
fn xml_arguments(
    tool: &str,
    schema: &Value,
    raw: &[&str],
    parameters: &[(String, String)],
) -> Result<Value, String> {
    let properties = schema.get("properties").and_then(Value::as_object);
    let mut args = Map::new();
    for (name, value) in parameters {
        let Some(prop) = properties.and_then(|p| p.get(name)) else {
            return Err(format!(
                "{tool} has no parameter {name:?}; its parameters are: {}",
                properties
                    .map(|p| p.keys().cloned().collect::<Vec<_>>().join(", "))
                    .unwrap_or_default()
            ));
        };
        let value = if raw.contains(&name.as_str()) {
            Value::String(value.clone())
        } else {
            typed(prop, value.trim()).map_err(|e| format!("parameter {name:?} of {tool}: {e}"))?
        };
        args.insert(name.clone(), value);
    }
    Ok(Value::Object(args))
}

fn types_of(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// Reads an XML string as the JSON type the schema wants.
fn typed(schema: &Value, raw: &str) -> Result<Value, String> {
    let types = types_of(schema);
    let wants = |t: &str| types.contains(&t);
    if wants("boolean") {
        match raw.to_ascii_lowercase().as_str() {
            "true" | "yes" | "1" => return Ok(Value::Bool(true)),
            "false" | "no" | "0" => return Ok(Value::Bool(false)),
            _ => {}
        }
    }
    if wants("integer")
        && let Ok(n) = raw.parse::<i64>()
    {
        return Ok(Value::from(n));
    }
    if (wants("number") || wants("integer"))
        && let Ok(n) = raw.parse::<f64>()
    {
        return Ok(Value::from(n));
    }
    if (wants("array") || wants("object"))
        && let Ok(v) = serde_json::from_str::<Value>(raw)
    {
        return Ok(v);
    }
    if wants("array") {
        // A lone item, or a comma-separated list, for lists of strings.
        return Ok(Value::Array(
            raw.split(',')
                .map(|s| Value::String(s.trim().to_string()))
                .filter(|v| v != &Value::String(String::new()))
                .collect(),
        ));
    }
    if wants("string") || types.is_empty() {
        return Ok(Value::String(raw.to_string()));
    }
    Err(format!("{raw:?} is not a {}", types.join(" or ")))
}

/// The schema of an argument type, as tools present it.
fn schema_of<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Some(obj) = schema.as_object_mut() {
        obj.remove("title");
        obj.remove("description");
    }
    schema
}

/// Keeps head and tail of text over `max` characters.
pub fn cap_text(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_string();
    }
    let head: String = text.chars().take(max / 2).collect();
    let tail: String = text.chars().skip(count - max / 2).collect();
    format!(
        "{head}\n[... {} characters omitted ...]\n{tail}",
        count - 2 * (max / 2)
    )
}

/// Suna's habit of `/workspace/...` paths, made relative to the workspace root.
pub fn workspace_path(path: &str) -> String {
    let p = path.trim();
    let p = p
        .strip_prefix("/workspace/")
        .or_else(|| p.strip_prefix("/workspace"))
        .unwrap_or(p);
    if p.is_empty() {
        ".".to_string()
    } else {
        p.to_string()
    }
}

/// Defines a tool from a typed async function.
macro_rules! tool {
    (
        name: $name:literal,
        args: $args:ty,
        summary: $summary:expr,
        raw: $raw:expr,
        description: $description:expr,
        example: $example:expr,
        run: $run:path $(,)?
    ) => {{
        fn run<'a>(
            env: &'a $crate::tools::ToolEnv,
            value: serde_json::Value,
        ) -> futures_util::future::BoxFuture<'a, $crate::tools::ToolResult> {
            Box::pin(async move {
                match serde_json::from_value::<$args>(value) {
                    Ok(args) => $run(env, args).await,
                    Err(e) => $crate::tools::ToolResult::error(format!(
                        "the arguments of {} do not fit its parameters: {e}",
                        $name
                    )),
                }
            })
        }
        fn schema() -> serde_json::Value {
            $crate::tools::schema_of::<$args>()
        }
        fn example() -> serde_json::Value {
            $example
        }
        $crate::tools::ToolDef {
            name: $name,
            description: $description,
            schema,
            example,
            summary: $summary,
            raw: $raw,
            run,
        }
    }};
}
pub(crate) use tool;

/// A tool as a run offers it: one of Cove's own, or one an MCP server offers.
#[derive(Debug, Clone)]
pub enum Tool {
    Own(ToolDef),
    Mcp(McpTool),
}

impl Tool {
    /// The name the model calls it by.
    pub fn name(&self) -> &str {
        match self {
            Tool::Own(def) => def.name,
            Tool::Mcp(tool) => &tool.name,
        }
    }

    /// The name permission rules match: its own, or `mcp:SERVER:TOOL`.
    pub fn policy_name(&self) -> String {
        match self {
            Tool::Own(def) => def.name.to_string(),
            Tool::Mcp(tool) => tool.policy_name(),
        }
    }

    /// The native tool description.
    pub fn spec(&self) -> ToolSpec {
        match self {
            Tool::Own(def) => def.spec(),
            Tool::Mcp(tool) => tool.spec(),
        }
    }

    fn schema(&self) -> Value {
        match self {
            Tool::Own(def) => def.schema(),
            Tool::Mcp(tool) => tool.schema.clone(),
        }
    }

    /// Arguments from an XML call's raw strings, typed by the schema.
    pub fn arguments_from_xml(&self, parameters: &[(String, String)]) -> Result<Value, String> {
        match self {
            Tool::Own(def) => def.arguments_from_xml(parameters),
            Tool::Mcp(tool) => xml_arguments(&tool.name, &tool.schema, &[], parameters),
        }
    }

    /// The argument that says most about a call, shortened: for an MCP tool, its first
    /// required text argument.
    pub fn summarize(&self, arguments: &Value) -> Option<String> {
        match self {
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
            Tool::Own(def) => def.call(env, arguments).await,
            Tool::Mcp(tool) => {
                let Value::Object(arguments) = arguments else {
                    return ToolResult::error("the arguments are not a JSON object");
                };
                let mut result = match tool.server.call(&tool.raw, arguments).await {
                    Ok(result) => crate::mcp::result::tool_result(&tool.name, result, env.vision),
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

/// The tools of a run: Cove's own and, when servers are configured, the MCP servers'.
#[derive(Debug, Clone)]
pub struct ToolRegistry {
    tools: Vec<ToolDef>,
    mcp: Option<Arc<McpHub>>,
    skills: Arc<Vec<Skill>>,
}

impl ToolRegistry {
    /// Every standard tool.
    pub fn standard() -> Self {
        let mut tools = Vec::new();
        tools.extend(shell::tools());
        tools.extend(files::tools());
        tools.extend(browser::tools());
        tools.extend(vision::tools());
        tools.extend(preview::tools());
        tools.extend(message::tools());
        tools.extend(plan::tools());
        tools.extend(expand::tools());
        tools.extend(mcp::tools());
        tools.extend(skill::tools());
        ToolRegistry::of(tools)
    }

    /// A registry of exactly these tools.
    pub fn of(tools: Vec<ToolDef>) -> Self {
        ToolRegistry {
            tools,
            mcp: None,
            skills: Arc::default(),
        }
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

    /// Whether `def` is offered now: `mcp_search_tools` only while MCP tools are deferred,
    /// `load_skill` only when there are skills.
    fn offers(&self, def: &ToolDef) -> bool {
        match def.name {
            mcp::SEARCH_TOOLS => self.mcp.as_ref().is_some_and(|m| m.is_deferred()),
            skill::LOAD_SKILL => !self.skills.is_empty(),
            _ => true,
        }
    }

    /// The tool called `name`: an MCP tool is found even while deferred.
    pub fn get(&self, name: &str) -> Option<Tool> {
        if let Some(def) = self.tools.iter().find(|t| t.name == name) {
            return self.offers(def).then_some(Tool::Own(*def));
        }
        self.mcp.as_ref()?.tool(name).map(Tool::Mcp)
    }

    /// Cove's own tools, in order.
    pub fn all(&self) -> &[ToolDef] {
        &self.tools
    }

    /// The tools offered to the model now.
    pub fn offered(&self) -> Vec<Tool> {
        let mut tools: Vec<Tool> = self
            .tools
            .iter()
            .filter(|def| self.offers(def))
            .map(|def| Tool::Own(*def))
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
    fn every_tool_has_a_schema_an_example_and_a_unique_name() {
        let registry = ToolRegistry::standard();
        let mut names = std::collections::HashSet::new();
        for tool in registry.all() {
            assert!(names.insert(tool.name), "{} twice", tool.name);
            let schema = tool.schema();
            assert_eq!(schema["type"], "object", "{}", tool.name);
            assert!(!tool.description.is_empty());
            // The example fits the schema: its XML form converts back to the same arguments.
            let example = (tool.example)();
            let params: Vec<(String, String)> = example
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.as_str()
                            .map(String::from)
                            .unwrap_or_else(|| v.to_string()),
                    )
                })
                .collect();
            assert_eq!(
                tool.arguments_from_xml(&params).unwrap(),
                example,
                "{}",
                tool.name
            );
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
            "see_image",
            "expose_port",
            "ask",
            "complete",
            "web_browser_takeover",
            "expand_message",
        ] {
            assert!(registry.get(wanted).is_some(), "{wanted} missing");
        }
    }

    #[test]
    fn xml_strings_become_typed_arguments() {
        let registry = ToolRegistry::standard();
        let exec = registry.get("execute_command").unwrap();
        let args = exec
            .arguments_from_xml(&[
                ("command".into(), "\nls -la\n".into()),
                ("blocking".into(), "True".into()),
                ("timeout".into(), " 30 ".into()),
            ])
            .unwrap();
        assert_eq!(
            args,
            serde_json::json!({"command": "ls -la", "blocking": true, "timeout": 30})
        );
        let bad = exec
            .arguments_from_xml(&[("timeout".into(), "soon".into())])
            .unwrap_err();
        assert!(bad.contains("timeout"), "{bad}");
        let unknown = exec
            .arguments_from_xml(&[("cmd".into(), "ls".into())])
            .unwrap_err();
        assert!(
            unknown.contains("command"),
            "names the real parameters: {unknown}"
        );
        let create = registry.get("create_file").unwrap();
        let args = create
            .arguments_from_xml(&[
                ("file_path".into(), " a.txt ".into()),
                ("file_contents".into(), "  keep  \n spaces \n".into()),
            ])
            .unwrap();
        assert_eq!(args["file_path"], "a.txt");
        assert_eq!(
            args["file_contents"], "  keep  \n spaces \n",
            "content stays exact"
        );
    }

    #[test]
    fn workspace_paths_and_caps() {
        assert_eq!(workspace_path("/workspace/src/a.rs"), "src/a.rs");
        assert_eq!(workspace_path("/workspace"), ".");
        assert_eq!(workspace_path("src/a.rs"), "src/a.rs");
        let long = "é".repeat(100);
        let capped = cap_text(&long, 10);
        assert!(
            capped.starts_with("ééééé\n[... 90 characters omitted ...]\nééééé"),
            "{capped}"
        );
        assert_eq!(cap_text("short", 10), "short");
    }
}
