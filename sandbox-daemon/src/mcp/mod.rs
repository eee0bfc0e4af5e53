//! coved as an MCP server: the sandbox's tools (shell, files, browser, vision, preview,
//! and the workspace's checkpoints), with the very names, schemas and results Cove's own agent gets, for any MCP host (Claude
//! Code, Codex, Cursor, goose). Over streamable HTTP at `/mcp` with the API token, or over
//! stdio with `coved mcp`.
//!
//! The tools are `cove-tools`' definitions run as Cove's controller runs them: through the
//! daemon's own HTTP API (on loopback, with its token), so an MCP call is checked, limited and
//! answered exactly as an API call is.

pub mod http;

use std::sync::{Arc, Mutex};

use cove_protocol::client::CovedClient;
use cove_tools::{SandboxEnv, ToolDef, ToolResult, checkpoint_tools, sandbox_tools, state_text};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;

/// What an MCP host is told about the server when it connects.
const INSTRUCTIONS: &str = "A Cove sandbox: a Linux machine with a persistent shell, the files of its workspace, a real Chromium browser and image viewing. File paths are relative to the workspace. After each browser action the result carries the page as text, its controls numbered ([12]<button>Save), and a screenshot; act on controls by those numbers, which belong to the latest state.";

/// The tools of the sandbox, listed once.
struct Catalog {
    defs: Vec<ToolDef>,
    listing: Vec<Tool>,
}

fn catalog() -> Catalog {
    let mut defs = sandbox_tools();
    defs.extend(checkpoint_tools());
    let listing = defs
        .iter()
        .map(|def| {
            let schema = match def.schema() {
                Value::Object(map) => map,
                _ => serde_json::Map::new(),
            };
            Tool::new(def.name, def.description, Arc::new(schema))
        })
        .collect();
    Catalog { defs, listing }
}

/// One MCP session: the sandbox's tools and what this session has seen of the browser.
#[derive(Clone)]
pub struct SandboxTools {
    catalog: Arc<Catalog>,
    env: Arc<Mutex<SandboxEnv>>,
}

impl SandboxTools {
    /// The tools over the daemon at `client` (its own API on loopback).
    pub fn new(client: CovedClient) -> SandboxTools {
        SandboxTools {
            catalog: Arc::new(catalog()),
            env: Arc::new(Mutex::new(SandboxEnv::new(client, true))),
        }
    }
}

/// A tool result as MCP content: the text, then the browser state as text and its
/// screenshot, then any image.
pub fn call_result(result: ToolResult) -> CallToolResult {
    let mut content = vec![ContentBlock::text(result.text)];
    if let Some(state) = &result.browser_state {
        content.push(ContentBlock::text(format!(
            "[The browser as it is now]\n{}",
            state_text(state)
        )));
        if let Some(shot) = &state.screenshot {
            content.push(ContentBlock::image(shot.base64.clone(), shot.mime.clone()));
        }
    }
    if let Some(image) = result.image {
        content.push(ContentBlock::image(image.base64, image.mime));
    }
    if result.ok {
        CallToolResult::success(content)
    } else {
        CallToolResult::error(content)
    }
}

impl ServerHandler for SandboxTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("coved", crate::VERSION))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.catalog.listing.clone(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.catalog
            .listing
            .iter()
            .find(|t| t.name == name)
            .cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(def) = self
            .catalog
            .defs
            .iter()
            .find(|d| d.name == request.name)
            .copied()
        else {
            return Err(ErrorData::invalid_params(
                format!("there is no tool {:?}; tools/list lists them", request.name),
                None,
            ));
        };
        let env = self
            .env
            .lock()
            .map(|e| e.clone())
            .map_err(|_| ErrorData::internal_error("the session's state is unusable", None))?;
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let result = tokio::select! {
            result = def.call(&env, arguments) => result,
            () = context.ct.cancelled() => ToolResult::error("cancelled by the client"),
        };
        if let Some(state) = &result.browser_state
            && let Ok(mut env) = self.env.lock()
        {
            // Element numbers of later calls refer to the state this session was just shown.
            env.snapshot_id = Some(state.snapshot_id);
        }
        Ok(call_result(result).into())
    }
}
