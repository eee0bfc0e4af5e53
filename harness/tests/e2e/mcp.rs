//! MCP servers as the agent's tools, through the `cove` binary: the official reference
//! servers (stdio and streamable HTTP), a server built on the official Python SDK, and a raw
//! one that misbehaves on purpose.

use std::time::{Duration, Instant};

use cove_harness::Turn;
use cove_harness::llm::{Received, Wire};
use cove_harness::mcp_servers::{self, EverythingHttp};
use serde_json::{Value, json};

use super::{Cove, events, explain, kinds};

impl Cove {
    /// Writes the user's `mcp.json` (`~/.config/cove/mcp.json`) with these servers.
    fn mcp_servers(&self, servers: Value) {
        let dir = self.home.path().join("config/cove");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("mcp.json"),
            serde_json::to_string_pretty(&json!({ "mcpServers": servers })).unwrap(),
        )
        .unwrap();
    }

    /// `cove run TASK` on the OpenAI wire with every call allowed, as JSON events.
    async fn run_yolo(&self, task: &str) -> std::process::Output {
        let ws = self.workspace.to_str().unwrap().to_string();
        self.run(&[
            "--json",
            "run",
            task,
            "--model",
            "openai/scripted",
            "--workspace",
            &ws,
            "--no-prompt",
            "--permissions",
            "yolo",
        ])
        .await
    }

    /// Writes `cove.toml`.
    fn cove_toml(&self, text: &str) {
        let dir = self.home.path().join("config/cove");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("cove.toml"), text).unwrap();
    }
}

/// The tool names a request offered: native definitions, or the XML documentation's titles.
fn offered(request: &Received) -> Vec<String> {
    if request.native_tools() {
        return request.body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                t["function"]["name"]
                    .as_str()
                    .or_else(|| t["name"].as_str())
                    .unwrap()
                    .to_string()
            })
            .collect();
    }
    request
        .all_text()
        .lines()
        .filter_map(|l| l.strip_prefix("### "))
        .map(str::to_string)
        .collect()
}

fn mcp_status<'a>(all: &'a [Value], server: &str) -> &'a Value {
    all.iter()
        .find(|e| e["type"] == "mcp_status" && e["server"] == server)
        .unwrap_or_else(|| panic!("no mcp_status for {server}"))
}

#[tokio::test]
async fn mcp_tools_of_reference_servers_are_called_end_to_end_in_both_wires() {
    for (wire, mode) in [(Wire::OpenAi, "native"), (Wire::Anthropic, "xml")] {
        let cove = Cove::new(wire).await;
        cove.mcp_servers(json!({
            "everything": mcp_servers::everything_stdio().unwrap(),
            "time": mcp_servers::time_stdio().unwrap(),
            "missing": {"command": "no-such-mcp-server-command"},
        }));
        cove.cove_toml(
            r#"
mcp_first_call_wait = 60
[permissions]
deny = [{ tool = "mcp:everything:get-env" }]
allow = [{ tool = "mcp:everything:*" }, { tool = "mcp:time:*" }]
"#,
        );
        cove.llm.push_fn(|request| {
            let tools = offered(request);
            for wanted in [
                "everything__echo",
                "everything__get-tiny-image",
                "time__get_current_time",
                "execute_command",
            ] {
                if !tools.iter().any(|t| t == wanted) {
                    return Turn::text("").call(
                        "complete",
                        json!({"text": format!("MISSING {wanted}: {tools:?}")}),
                    );
                }
            }
            Turn::text("Using MCP tools.")
                .call("everything__echo", json!({"message": "hi from cove"}))
                .call(
                    "time__get_current_time",
                    json!({"timezone": "Europe/Paris"}),
                )
                .call("everything__get-tiny-image", json!({}))
                .call("everything__get-env", json!({}))
        });
        cove.llm.push_fn(|request| {
            let text = request.all_text();
            let mut verdict = Vec::new();
            for (what, found) in [
                ("echo", text.contains("Echo: hi from cove")),
                (
                    "time",
                    text.contains("Europe/Paris") && text.contains("datetime"),
                ),
                ("image", request.image_count() >= 1),
                ("deny", text.contains("Not run")),
            ] {
                if !found {
                    verdict.push(format!("NO {what}"));
                }
            }
            let verdict = if verdict.is_empty() {
                "all four".to_string()
            } else {
                verdict.join(", ")
            };
            Turn::text("").call("complete", json!({ "text": verdict }))
        });
        let out = cove.start_task("Use the MCP tools", mode).await;
        assert!(out.status.success(), "{}", explain(&out));
        let all = events(&out);
        let complete = all.iter().find(|e| e["type"] == "complete").unwrap();
        assert_eq!(complete["text"], "all four", "{mode}: {}", explain(&out));
        assert_eq!(mcp_status(&all, "everything")["status"], "ready");
        assert_eq!(mcp_status(&all, "time")["status"], "ready");
        assert_eq!(mcp_status(&all, "time")["tools"], 2);
        let missing = mcp_status(&all, "missing");
        assert_eq!(missing["status"], "failed");
        assert!(
            missing["error"]
                .as_str()
                .unwrap()
                .contains("no such command"),
            "{missing}"
        );
        // The calls were announced with the model's names; the denied one failed.
        let failed: Vec<&Value> = all.iter().filter(|e| e["type"] == "tool_failed").collect();
        assert_eq!(failed.len(), 1, "{:?}", kinds(&all));
        assert_eq!(failed[0]["tool"], "everything__get-env");
        assert!(cove.llm.violations().is_empty());
        // The servers were ended with the run: no child is left.
        let left = cove_harness::procs::matching("mcp_server_time");
        assert!(
            left.iter().all(|p| p.is_zombie()),
            "servers left running: {left:?}"
        );
    }
}

#[tokio::test]
async fn a_streamable_http_server_is_listed_and_called() {
    let server = EverythingHttp::start().await.unwrap();
    let cove = Cove::new(Wire::OpenAi).await;
    cove.mcp_servers(json!({
        "web": {"url": server.url(), "headers": {"X-Cove-Test": "1"}, "bearer_token": "${NO_SUCH_VAR:-open}"},
    }));
    cove.cove_toml("mcp_first_call_wait = 60\n");
    let out = cove.run(&["--json", "mcp", "ls"]).await;
    assert!(out.status.success(), "{}", explain(&out));
    let rows = events(&out);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["status"], "ready", "{}", rows[0]);
    let tools: Vec<&str> = rows[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"web__get-sum"), "{tools:?}");

    cove.llm
        .push(Turn::text("").call("web__get-sum", json!({"a": 19, "b": 23})));
    cove.llm.push_fn(|request| {
        let verdict = if request.last_message_text().contains("42") {
            "42"
        } else {
            "NO SUM"
        };
        Turn::text("").call("complete", json!({ "text": verdict }))
    });
    let out = cove.run_yolo("Add").await;
    assert!(out.status.success(), "{}", explain(&out));
    let all = events(&out);
    let complete = all.iter().find(|e| e["type"] == "complete").unwrap();
    assert_eq!(complete["text"], "42", "{}", explain(&out));
}

#[tokio::test]
async fn three_hundred_tools_are_deferred_behind_a_search_that_loads_them() {
    let cove = Cove::new(Wire::Anthropic).await;
    cove.mcp_servers(json!({ "catalog": mcp_servers::catalog(300).unwrap() }));
    cove.cove_toml(
        "mcp_first_call_wait = 60\n[permissions]\nallow = [{ tool = \"mcp:catalog:*\" }]\n",
    );
    cove.llm.push_fn(|request| {
        let tools = offered(request);
        let catalog = tools.iter().filter(|t| t.starts_with("catalog__")).count();
        if catalog > 0 || !tools.iter().any(|t| t == "mcp_search_tools") {
            return Turn::text("").call(
                "complete",
                json!({"text": format!("NOT DEFERRED: {catalog} listed")}),
            );
        }
        if !request.all_text().contains("catalog (302 tools)") {
            return Turn::text("").call("complete", json!({"text": "NO NOTE"}));
        }
        Turn::text("").call(
            "mcp_search_tools",
            json!({"query": "weather forecast", "limit": 2}),
        )
    });
    cove.llm.push_fn(|request| {
        let tools = offered(request);
        let loaded: Vec<&String> = tools
            .iter()
            .filter(|t| t.starts_with("catalog__"))
            .collect();
        if loaded.len() != 2
            || !loaded
                .iter()
                .all(|t| t.starts_with("catalog__weather_forecast_"))
        {
            return Turn::text("").call("complete", json!({"text": format!("LOADED {loaded:?}")}));
        }
        let name = loaded[0].clone();
        Turn::text("").call(&name, json!({"item_id": "berlin-7"}))
    });
    cove.llm.push_fn(|request| {
        let verdict = if request
            .last_message_text()
            .contains("forecast weather berlin-7 done")
        {
            "called".to_string()
        } else {
            format!("NOT CALLED: {}", request.last_message_text())
        };
        Turn::text("").call("complete", json!({ "text": verdict }))
    });
    let out = cove.start_task("Forecast", "native").await;
    // (Anthropic's wire with native tools: the scripted server checks every definition.)
    assert!(out.status.success(), "{}", explain(&out));
    let all = events(&out);
    let complete = all.iter().find(|e| e["type"] == "complete").unwrap();
    assert_eq!(complete["text"], "called", "{}", explain(&out));
    let received = cove.llm.received();
    let first = received[0].prompt_tokens();
    assert!(
        first < 40_000,
        "the first request stayed small: {first} tokens"
    );
}

#[tokio::test]
async fn a_crashed_server_is_restarted_once_and_every_failure_is_a_tool_error() {
    let cove = Cove::new(Wire::OpenAi).await;
    let mut unruly = mcp_servers::unruly(&["--flood"]).unwrap();
    unruly["tool_timeout"] = json!(2);
    cove.mcp_servers(json!({
        "catalog": mcp_servers::catalog(3).unwrap(),
        "unruly": unruly,
        "hangs": {
            "command": mcp_servers::python().unwrap(),
            "args": [mcp_servers::fixture("unruly.py"), "--hang"],
            "startup_timeout": 1.5,
        },
        "dies": mcp_servers::unruly(&["--die"]).unwrap(),
    }));
    cove.cove_toml("mcp_first_call_wait = 60\n");
    cove.llm
        .push(Turn::text("").call("catalog__crash", json!({})));
    cove.llm
        .push(Turn::text("").call("catalog__shout", json!({"text": "after"})));
    cove.llm
        .push(Turn::text("").call("catalog__crash", json!({})));
    cove.llm
        .push(Turn::text("").call("catalog__shout", json!({"text": "again"})));
    cove.llm.push(
        Turn::text("")
            .call("unruly__malformed", json!({}))
            .call("unruly__silent", json!({}))
            .call("unruly__ok", json!({})),
    );
    cove.llm
        .push(Turn::text("").call("complete", json!({"text": "done"})));
    let started = Instant::now();
    let out = cove.run_yolo("Misbehave").await;
    assert!(out.status.success(), "{}", explain(&out));
    assert!(started.elapsed() < Duration::from_secs(60));
    let all = events(&out);
    let ended: Vec<(String, bool, String)> = all
        .iter()
        .filter(|e| e["type"] == "tool_completed" || e["type"] == "tool_failed")
        .map(|e| {
            (
                e["tool"].as_str().unwrap().to_string(),
                e["type"] == "tool_completed",
                e["output"]
                    .as_str()
                    .or(e["error"].as_str())
                    .unwrap()
                    .to_string(),
            )
        })
        .collect();
    let by = |tool: &str, n: usize| ended.iter().filter(|e| e.0 == tool).nth(n).unwrap().clone();
    let crash = by("catalog__crash", 0);
    assert!(!crash.1);
    assert!(crash.2.contains("stopped during the call"), "{crash:?}");
    assert!(
        crash.2.contains("lost its database connection"),
        "its stderr: {crash:?}"
    );
    assert!(crash.2.contains("restarted"), "{crash:?}");
    assert_eq!(
        by("catalog__shout", 0),
        ("catalog__shout".into(), true, "AFTER".into())
    );
    let second = by("catalog__crash", 1);
    assert!(second.2.contains("not running"), "{second:?}");
    let down = by("catalog__shout", 1);
    assert!(!down.1 && down.2.contains("restarted once"), "{down:?}");
    let malformed = by("unruly__malformed", 0);
    assert!(!malformed.1, "{malformed:?}");
    let silent = by("unruly__silent", 0);
    assert!(!silent.1 && silent.2.contains("within 2s"), "{silent:?}");
    assert_eq!(by("unruly__ok", 0).2, "fine");
    let hangs = mcp_status(&all, "hangs");
    assert!(
        hangs["error"]
            .as_str()
            .unwrap()
            .contains("did not start within 1.5s"),
        "{hangs}"
    );
    let dies = mcp_status(&all, "dies");
    assert!(
        dies["error"]
            .as_str()
            .unwrap()
            .contains("cannot open /etc/unruly.conf"),
        "{dies}"
    );
    assert_eq!(
        mcp_status(&all, "unruly")["status"],
        "ready",
        "a flood of stderr is no failure"
    );
}

#[tokio::test]
async fn bad_configuration_is_reported_with_its_place_and_the_run_goes_on() {
    let cove = Cove::new(Wire::OpenAi).await;
    let dir = cove.home.path().join("config/cove");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("mcp.json"),
        "{\"mcpServers\": {\n  \"a\": {\"command\": \"x\",}\n}}",
    )
    .unwrap();
    let out = cove.run(&["mcp", "doctor"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", explain(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("mcp.json:2:"), "{text}");
    assert!(text.contains("not valid JSON"), "{text}");

    cove.llm
        .push(Turn::text("").call("complete", json!({"text": "ran"})));
    let out = cove.start_task("Go on", "native").await;
    assert!(out.status.success(), "{}", explain(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.is_empty() || !stderr.contains("panicked"),
        "{stderr}"
    );
    let all = events(&out);
    assert!(all.iter().any(|e| e["type"] == "complete"));
}

#[tokio::test]
async fn a_slow_server_never_holds_up_the_first_call_and_joins_when_it_is_up() {
    let cove = Cove::new(Wire::OpenAi).await;
    // The SDK server takes about a second to start; the first call waits 0.2 s by default.
    cove.mcp_servers(json!({ "catalog": mcp_servers::catalog(3).unwrap() }));
    cove.llm.push_fn(|request| {
        let tools = offered(request);
        let text = request.all_text();
        if tools.iter().any(|t| t.starts_with("catalog__")) {
            return Turn::text("").call("complete", json!({"text": "ALREADY THERE"}));
        }
        if !tools.iter().any(|t| t == "mcp_search_tools")
            || !text.contains("still starting: catalog")
        {
            return Turn::text("").call(
                "complete",
                json!({"text": format!("NO WAY TO WAIT: {tools:?}")}),
            );
        }
        Turn::text("").call("mcp_search_tools", json!({"query": "capitals"}))
    });
    cove.llm.push_fn(|request| {
        let tools = offered(request);
        if !request.last_message_text().contains("catalog__shout")
            || !tools.iter().any(|t| t == "catalog__shout")
        {
            return Turn::text("").call(
                "complete",
                json!({"text": format!("NOT JOINED: {tools:?}")}),
            );
        }
        Turn::text("").call("catalog__shout", json!({"text": "joined"}))
    });
    cove.llm.push_fn(|request| {
        let verdict = if request.last_message_text().contains("JOINED") {
            "joined"
        } else {
            "NOT CALLED"
        };
        Turn::text("").call("complete", json!({ "text": verdict }))
    });
    let out = cove.run_yolo("Shout").await;
    assert!(out.status.success(), "{}", explain(&out));
    let all = events(&out);
    let complete = all.iter().find(|e| e["type"] == "complete").unwrap();
    assert_eq!(complete["text"], "joined", "{}", explain(&out));
    // Announced when it came up, after the run began.
    let status = mcp_status(&all, "catalog");
    assert_eq!(status["status"], "ready");
    let first_call = all
        .iter()
        .position(|e| e["type"] == "assistant_response_start")
        .unwrap();
    let announced = all.iter().position(|e| e["type"] == "mcp_status").unwrap();
    assert!(announced > first_call, "{:?}", kinds(&all));
}

#[tokio::test]
async fn a_call_to_a_server_still_starting_waits_for_it_then_says_its_real_state() {
    let cove = Cove::new(Wire::OpenAi).await;
    // The first call waits for no server, as when a resumed thread's model calls at once a
    // tool it saw in an earlier run.
    cove.cove_toml("mcp_first_call_wait = 0\n");
    cove.mcp_servers(json!({
        "time": mcp_servers::time_stdio().unwrap(),
        "broken": {"command": "/nonexistent/mcp-server"},
    }));
    cove.llm.push(
        Turn::text("")
            .call("time__get_current_time", json!({"timezone": "UTC"}))
            .call("time__no_such_tool", json!({}))
            .call("broken__anything", json!({})),
    );
    cove.llm.push_fn(|request| {
        let text = request.all_text();
        let verdict = if !text.contains("\"timezone\": \"UTC\"") {
            format!("TIME NOT RUN: {text}")
        } else if !text.contains("MCP server time has no tool named \"time__no_such_tool\"; its tools: time__get_current_time") {
            "NO TOOL LIST".to_string()
        } else if !text.contains("MCP server broken could not start") {
            "NO START FAILURE".to_string()
        } else {
            "ok".to_string()
        };
        Turn::text("").call("complete", json!({ "text": verdict }))
    });
    let out = cove.run_yolo("What time is it?").await;
    assert!(out.status.success(), "{}", explain(&out));
    let all = events(&out);
    let complete = all.iter().find(|e| e["type"] == "complete").unwrap();
    assert_eq!(complete["text"], "ok", "{}", explain(&out));
    let first_call = all
        .iter()
        .position(|e| e["type"] == "assistant_response_start")
        .unwrap();
    let time_up = all
        .iter()
        .position(|e| e["type"] == "mcp_status" && e["server"] == "time")
        .unwrap();
    assert!(
        time_up > first_call,
        "the server was still starting: {:?}",
        kinds(&all)
    );
}
