//! The sandbox's tools as an agent sees them: each a [`ToolDef`] with Suna's name, a
//! description, a JSON schema derived from its argument type, an example, and the function
//! that calls coved for it. Cove's agent offers them to its model; coved's MCP server offers
//! the very same definitions to any MCP host, so the two never drift apart.

mod browser;
mod checkpoints;
mod files;
mod preview;
mod shell;
pub use shell::DEFAULT_SESSION;
mod vision;
mod web;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cove_protocol::browser::BrowserState;
use cove_protocol::client::{ClientError, CovedClient};
use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

/// Longest tool result the model reads; longer ones keep head and tail.
pub const MAX_RESULT_CHARS: usize = 20_000;

/// An image for the model's next call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    pub mime: String,
    pub base64: String,
    /// What it is, for the model.
    pub caption: String,
}

/// What a sandbox tool call produced.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub ok: bool,
    /// What the model reads.
    pub text: String,
    /// The browser state after the call: shown to the model with the result.
    pub browser_state: Option<BrowserState>,
    /// An image to show the model with the result.
    pub image: Option<Image>,
}

impl ToolResult {
    /// A success.
    pub fn ok(text: impl Into<String>) -> Self {
        ToolResult {
            ok: true,
            text: text.into(),
            browser_state: None,
            image: None,
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

/// What a tool returns: a failure can be made of a message (arguments that do not fit), and
/// its text can be capped.
pub trait ToolOutput: Send + 'static {
    /// A failed call whose result is `text`.
    fn failure(text: String) -> Self;
    /// The text the model reads.
    fn text_mut(&mut self) -> &mut String;
}

impl ToolOutput for ToolResult {
    fn failure(text: String) -> Self {
        ToolResult::error(text)
    }

    fn text_mut(&mut self) -> &mut String {
        &mut self.text
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

/// What a sandbox tool call can reach: the sandbox, and what the caller has seen so far.
#[derive(Debug, Clone)]
pub struct SandboxEnv {
    pub sandbox: CovedClient,
    /// The caller accepts images.
    pub vision: bool,
    pub read_offsets: ReadOffsets,
    /// The browser snapshot the caller last saw: element indices refer to it.
    pub snapshot_id: Option<u64>,
}

impl SandboxEnv {
    /// An environment over `sandbox` that has shown nothing yet.
    pub fn new(sandbox: CovedClient, vision: bool) -> Self {
        SandboxEnv {
            sandbox,
            vision,
            read_offsets: ReadOffsets::default(),
            snapshot_id: None,
        }
    }
}

type Runner<E, R> = for<'a> fn(&'a E, Value) -> BoxFuture<'a, R>;

/// One tool, run in environment `E`, giving `R`.
pub struct ToolDef<E: 'static = SandboxEnv, R: 'static = ToolResult> {
    pub name: &'static str,
    pub description: &'static str,
    schema: fn() -> Value,
    example: fn() -> Value,
    /// The argument that says most about a call (shown as it runs).
    pub summary: Option<&'static str>,
    /// Parameters whose XML values are content, kept exactly (others are trimmed).
    raw: &'static [&'static str],
    run: Runner<E, R>,
    /// Whether its result may be as long as it likes (it pages itself).
    uncapped: bool,
}

impl<E, R> Clone for ToolDef<E, R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E, R> Copy for ToolDef<E, R> {}

impl<E, R> std::fmt::Debug for ToolDef<E, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolDef")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl<E, R: ToolOutput> ToolDef<E, R> {
    /// A tool; [`tool_def!`] writes the arguments from a typed async function.
    #[allow(clippy::too_many_arguments)]
    pub const fn new(
        name: &'static str,
        description: &'static str,
        schema: fn() -> Value,
        example: fn() -> Value,
        summary: Option<&'static str>,
        raw: &'static [&'static str],
        run: Runner<E, R>,
    ) -> Self {
        ToolDef {
            name,
            description,
            schema,
            example,
            summary,
            raw,
            run,
            uncapped: false,
        }
    }

    /// The same tool, its result never capped (it pages its own output).
    pub const fn uncapped(mut self) -> Self {
        self.uncapped = true;
        self
    }

    /// The JSON schema of the arguments.
    pub fn schema(&self) -> Value {
        (self.schema)()
    }

    /// An example of its arguments.
    pub fn example(&self) -> Value {
        (self.example)()
    }

    /// Checks that the example fits the schema: its XML form reads back as the same
    /// arguments.
    pub fn check_example(&self) -> Result<(), String> {
        let example = self.example();
        let Some(args) = example.as_object() else {
            return Err(format!("{}: the example is not an object", self.name));
        };
        let params: Vec<(String, String)> = args
            .iter()
            .map(|(k, v)| {
                let raw = v
                    .as_str()
                    .map(String::from)
                    .unwrap_or_else(|| v.to_string());
                (k.clone(), raw)
            })
            .collect();
        match self.arguments_from_xml(&params) {
            Ok(read) if read == example => Ok(()),
            Ok(read) => Err(format!("{}: the example reads back as {read}", self.name)),
            Err(e) => Err(format!("{}: {e}", self.name)),
        }
    }

    /// How to call it in Suna's XML format.
    pub fn xml_example(&self) -> String {
        let mut out = format!("<invoke name=\"{}\">\n", self.name);
        if let Some(args) = self.example().as_object() {
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
    pub async fn call(&self, env: &E, arguments: Value) -> R {
        let mut result = (self.run)(env, arguments).await;
        if !self.uncapped {
            let text = result.text_mut();
            *text = cap_text(text, MAX_RESULT_CHARS);
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
pub fn xml_arguments(
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

/// The JSON types a schema allows.
pub fn types_of(schema: &Value) -> Vec<&str> {
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
pub fn schema_of<T: JsonSchema>() -> Value {
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

/// The browser state as the caller reads it: where the browser is, and the page as text
/// with its controls numbered.
pub fn state_text(state: &BrowserState) -> String {
    let tabs: Vec<String> = state
        .tabs
        .iter()
        .map(|t| {
            let active = if t.active { " (active)" } else { "" };
            format!("tab {}{active}: {:?} {}", t.tab_id, t.title, t.url)
        })
        .collect();
    let mut text = format!(
        "URL: {}\nTitle: {}\nTabs: {}\nScroll: {} px above, {} px below the viewport ({}x{})\nThe page (act on controls by their [number]):\n{}",
        state.url,
        state.title,
        tabs.join("; "),
        state.pixels_above,
        state.pixels_below,
        state.viewport.width,
        state.viewport.height,
        if state.elements.is_empty() {
            "(none)"
        } else {
            &state.elements
        },
    );
    if let Some(notice) = &state.notice {
        text.push_str(&format!("\nNote: {notice}"));
    }
    text
}

/// Defines a tool from a typed async function `run(&ENV, ARGS) -> OUTPUT`.
#[macro_export]
macro_rules! tool_def {
    (
        env: $env:ty,
        output: $output:ty,
        name: $name:literal,
        args: $args:ty,
        summary: $summary:expr,
        raw: $raw:expr,
        description: $description:expr,
        example: $example:expr,
        run: $run:path $(,)?
    ) => {{
        fn run<'a>(
            env: &'a $env,
            value: serde_json::Value,
        ) -> futures_util::future::BoxFuture<'a, $output> {
            Box::pin(async move {
                match serde_json::from_value::<$args>(value) {
                    Ok(args) => $run(env, args).await,
                    Err(e) => <$output as $crate::ToolOutput>::failure(format!(
                        "the arguments of {} do not fit its parameters: {e}",
                        $name
                    )),
                }
            })
        }
        fn schema() -> serde_json::Value {
            $crate::schema_of::<$args>()
        }
        fn example() -> serde_json::Value {
            $example
        }
        $crate::ToolDef::new($name, $description, schema, example, $summary, $raw, run)
    }};
}

/// A sandbox tool from a typed async function.
macro_rules! tool {
    ($($rest:tt)*) => {
        $crate::tool_def!(env: $crate::SandboxEnv, output: $crate::ToolResult, $($rest)*)
    };
}
pub(crate) use tool;

/// Every sandbox tool: shell, files, browser, vision and preview.
pub fn sandbox_tools() -> Vec<ToolDef> {
    let mut tools = Vec::new();
    tools.extend(shell::tools());
    tools.extend(files::tools());
    tools.extend(browser::tools());
    tools.extend(vision::tools());
    tools.extend(preview::tools());
    tools.extend(web::tools());
    tools
}

/// The workspace's checkpoints, for MCP hosts (Cove's controller checkpoints runs itself).
pub fn checkpoint_tools() -> Vec<ToolDef> {
    checkpoints::tools()
}

pub use checkpoints::diff_text as checkpoint_diff_text;

/// Tools known by other runtimes' names (Suna's `scrape_webpage`): found when called, never
/// offered.
pub fn sandbox_aliases() -> Vec<ToolDef> {
    web::aliases()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn every_tool_has_a_schema_an_example_and_a_unique_name() {
        let mut names = std::collections::HashSet::new();
        for tool in sandbox_tools().into_iter().chain(checkpoint_tools()) {
            assert!(names.insert(tool.name), "{} twice", tool.name);
            let schema = tool.schema();
            assert_eq!(schema["type"], "object", "{}", tool.name);
            assert!(!tool.description.is_empty());
            tool.check_example().unwrap();
        }
    }

    #[test]
    fn xml_strings_become_typed_arguments() {
        let tools = sandbox_tools();
        let exec = tools.iter().find(|t| t.name == "execute_command").unwrap();
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
        let create = tools.iter().find(|t| t.name == "create_file").unwrap();
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
