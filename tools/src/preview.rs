//! Preview: a link a person can open to see a server the agent started in the sandbox.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::{SandboxEnv, ToolDef, ToolResult, tool};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ExposePort {
    /// The port the server listens on inside the sandbox.
    port: u16,
}

async fn expose_port(env: &SandboxEnv, a: ExposePort) -> ToolResult {
    match env.sandbox.expose(a.port).await {
        Ok(exposed) if exposed.listening => ToolResult::ok(format!(
            "Port {} is reachable at {} (give this link to the user; it opens the app at the root of its own address). The workspace's files are at {}.",
            a.port, exposed.url, exposed.files_url
        )),
        Ok(_) => ToolResult::error(format!(
            "nothing listens on port {} inside the sandbox yet: start the server first (execute_command with blocking=false), check its output, then expose the port again",
            a.port
        )),
        Err(e) => ToolResult::from_client(&e),
    }
}

/// The preview tools.
pub fn tools() -> Vec<ToolDef> {
    vec![tool! {
        name: "expose_port",
        args: ExposePort,
        summary: Some("port"),
        raw: &[],
        description: "Get a link the user can open in their browser to see a web server you started inside the sandbox (a site, an app, a dashboard).",
        example: json!({"port": 8000}),
        run: expose_port,
    }]
}
