//! What a tool call does, as the policy and the user see it: whether it changes anything,
//! the argument rules match on, and one line saying what will happen.

use serde_json::Value;

/// Whether a tool changes anything outside the conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Reads or looks: never asks in `auto` and `ask`, allowed in `read-only`.
    Read,
    /// Runs, writes, deletes, submits, or calls something whose effects Cove cannot see.
    Change,
}

/// Tools that only read or look. Everything else (including tools Cove does not know, such
/// as MCP tools) counts as a change.
const READS: &[&str] = &[
    "read_file",
    "list_files",
    "check_command_output",
    "list_commands",
    "see_image",
    "expand_message",
    "ask",
    "complete",
    "web_browser_takeover",
    "create_plan",
    "update_plan",
    "browser_navigate_to",
    "browser_go_back",
    "browser_wait",
    "browser_switch_tab",
    "browser_close_tab",
    "browser_scroll_down",
    "browser_scroll_up",
    "browser_scroll_to_text",
    "browser_read_page",
    "browser_hover_element",
    "browser_get_dropdown_options",
    "web_search",
    "web_fetch",
    "scrape_webpage",
    // Waiting changes nothing; a sub-agent's own calls pass the gate one by one.
    "watch",
    "unwatch",
    "wait_for_events",
    "spawn_agents",
];

/// Whether `tool` changes anything, whatever its arguments.
pub fn effect(tool: &str) -> Effect {
    if READS.contains(&tool) {
        Effect::Read
    } else {
        Effect::Change
    }
}

/// Whether this call of `tool` changes anything: a navigation is a read only to an http(s)
/// address; a `data:` or `javascript:` page is code the agent wrote, free to submit forms
/// with the browser's logins.
pub fn effect_of(tool: &str, args: &Value) -> Effect {
    if tool == "browser_navigate_to" {
        let url = args.get("url").and_then(Value::as_str).unwrap_or("").trim();
        let scheme = url.split_once(':').map(|(s, _)| s.to_ascii_lowercase());
        // A bare host (`example.com`) is opened as https.
        let web = match scheme.as_deref() {
            Some("http" | "https") => true,
            Some(s) => s.chars().all(|c| c.is_ascii_digit()) || url.starts_with("localhost:"),
            None => true,
        };
        if !web {
            return Effect::Change;
        }
    }
    effect(tool)
}

/// The argument a rule's `match` is tried on: the command, the path, the URL, or for an MCP
/// tool (`mcp:SERVER:TOOL`) its server.
pub fn key_argument(tool: &str, args: &Value) -> Option<String> {
    if let Some(rest) = tool.strip_prefix("mcp:") {
        return Some(rest.split(':').next().unwrap_or(rest).to_string());
    }
    let field = match tool {
        "execute_command" => "command",
        "send_command_input" => "text",
        "create_file" | "read_file" | "full_file_rewrite" | "str_replace" | "delete_file" => {
            "file_path"
        }
        "list_files" => "path",
        "browser_navigate_to" | "web_fetch" => "url",
        "see_image" if args.get("url").is_some() => "url",
        "see_image" => "file_path",
        "browser_input_text" => "text",
        "web_search" => "query",
        "scrape_webpage" => "urls",
        "generate_image" => "prompt",
        "edit_image" => "path",
        _ => return None,
    };
    args.get(field).and_then(Value::as_str).map(str::to_string)
}

/// What makes two calls the same request: the tool and its key argument (the same command,
/// the same file, the same URL), or all its arguments when it has none. One
/// `allow_for_thread` covers every call with the same fingerprint.
pub fn fingerprint(tool: &str, args: &Value) -> String {
    match key_argument(tool, args) {
        Some(key) => format!("{tool}\n{key}"),
        // serde_json's maps keep their keys sorted: equal arguments print the same.
        None => format!("{tool}\n{args}"),
    }
}

/// Longest a quoted argument runs in a summary line.
const QUOTE_CHARS: usize = 160;

fn clip(text: &str) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c == '\n' { '⏎' } else { c })
        .collect();
    match flat.char_indices().nth(QUOTE_CHARS) {
        Some((at, _)) => format!("{}…", &flat[..at]),
        None => flat,
    }
}

/// `text` in full, its line breaks shown as ⏎.
fn whole(text: &str) -> String {
    text.chars()
        .map(|c| if c == '\n' { '⏎' } else { c })
        .collect()
}

fn lines(text: &str) -> usize {
    if text.is_empty() {
        0
    } else {
        text.lines().count()
    }
}

fn plural(n: usize, one: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {one}s")
    }
}

/// One line saying what the call will do, for the person asked to allow it.
pub fn summary(tool: &str, args: &Value) -> String {
    let text = |field: &str| args.get(field).and_then(Value::as_str).unwrap_or("");
    let index = |field: &str| args.get(field).map(Value::to_string).unwrap_or_default();
    match tool {
        // What runs is shown whole: allowing a part would allow what was cut off too.
        "execute_command" => {
            let folder = text("folder");
            if folder.is_empty() {
                format!("run `{}`", whole(text("command")))
            } else {
                format!("run `{}` in {}", whole(text("command")), clip(folder))
            }
        }
        "send_command_input" => format!(
            "type \"{}\" into shell session {}",
            whole(text("text")),
            clip(text("session_name"))
        ),
        "terminate_command" => format!("stop shell session {}", clip(text("session_name"))),
        "create_file" => format!(
            "create {} ({})",
            clip(text("file_path")),
            plural(lines(text("file_contents")), "line")
        ),
        "full_file_rewrite" => format!(
            "rewrite {} ({})",
            clip(text("file_path")),
            plural(lines(text("file_contents")), "line")
        ),
        "str_replace" => format!(
            "edit {}: -{} +{}",
            clip(text("file_path")),
            plural(lines(text("old_str")), "line"),
            plural(lines(text("new_str")), "line")
        ),
        "delete_file" => format!("delete {}", clip(text("file_path"))),
        "browser_navigate_to" => format!("open {}", clip(text("url"))),
        "browser_click_element" => format!("click element [{}] of the page", index("index")),
        "browser_click_coordinates" => {
            format!("click the page at ({}, {})", index("x"), index("y"))
        }
        "browser_input_text" => format!(
            "type \"{}\" into element [{}] of the page",
            clip(text("text")),
            index("index")
        ),
        "browser_send_keys" => format!("press {} on the page", clip(text("keys"))),
        "browser_select_dropdown_option" => format!(
            "choose \"{}\" in element [{}] of the page",
            clip(text("text")),
            index("index")
        ),
        "browser_drag_drop" => "drag and drop on the page".to_string(),
        "expose_port" => format!("share port {} of the sandbox", index("port")),
        "web_search" => format!("search the web for \"{}\"", clip(text("query"))),
        "web_fetch" => format!("read {}", clip(text("url"))),
        "generate_image" => format!(
            "make an image with the images API (paid): \"{}\"",
            clip(text("prompt"))
        ),
        "edit_image" => format!(
            "edit {} with the images API (paid): \"{}\"",
            clip(text("path")),
            clip(text("prompt"))
        ),
        _ => {
            let shown = if args.as_object().is_some_and(|o| o.is_empty()) {
                String::new()
            } else {
                format!(" {}", clip(&args.to_string()))
            };
            format!("call {tool}{shown}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_summary_is_one_line_saying_what_will_happen() {
        assert_eq!(
            summary(
                "execute_command",
                &json!({"command": "rm -rf /etc\nls", "folder": "app"})
            ),
            "run `rm -rf /etc⏎ls` in app"
        );
        assert_eq!(
            summary(
                "str_replace",
                &json!({"file_path": "a.py", "old_str": "x = 1", "new_str": "x = 2\ny = 3"})
            ),
            "edit a.py: -1 line +2 lines"
        );
        assert_eq!(
            summary(
                "create_file",
                &json!({"file_path": "n.txt", "file_contents": ""})
            ),
            "create n.txt (0 lines)"
        );
        assert_eq!(
            summary(
                "browser_navigate_to",
                &json!({"url": "https://example.org/"})
            ),
            "open https://example.org/"
        );
        assert_eq!(
            summary("generate_image", &json!({"prompt": "a lighthouse"})),
            "make an image with the images API (paid): \"a lighthouse\""
        );
        assert_eq!(effect("web_fetch"), Effect::Read);
        assert_eq!(effect("generate_image"), Effect::Change);
        assert_eq!(
            summary("mcp:github:create_issue", &json!({"title": "Bug"})),
            "call mcp:github:create_issue {\"title\":\"Bug\"}"
        );
        // What runs is never cut: allowing a prefix would allow the rest.
        let long = format!("{} && rm -rf /srv", "x".repeat(500));
        let line = summary("execute_command", &json!({ "command": long }));
        assert_eq!(line, format!("run `{long}`"));
        let file = summary(
            "create_file",
            &json!({"file_path": "x".repeat(500), "file_contents": ""}),
        );
        assert!(file.chars().count() < 200 && file.contains('…'), "{file}");
    }

    #[test]
    fn key_arguments() {
        assert_eq!(
            key_argument("execute_command", &json!({"command": "ls"})).as_deref(),
            Some("ls")
        );
        assert_eq!(
            key_argument("delete_file", &json!({"file_path": "a"})).as_deref(),
            Some("a")
        );
        assert_eq!(
            key_argument("mcp:github:create_issue", &json!({})).as_deref(),
            Some("github")
        );
        assert_eq!(
            key_argument("browser_click_element", &json!({"index": 3})),
            None
        );
        assert_eq!(
            fingerprint("execute_command", &json!({"command": "ls", "timeout": 5})),
            fingerprint("execute_command", &json!({"command": "ls"}))
        );
        assert_eq!(
            fingerprint(
                "browser_click_element",
                &json!({"snapshot_id": 1, "index": 3})
            ),
            fingerprint(
                "browser_click_element",
                &json!({"index": 3, "snapshot_id": 1})
            )
        );
        assert_ne!(
            fingerprint("browser_click_element", &json!({"index": 3})),
            fingerprint("browser_click_element", &json!({"index": 4}))
        );
        assert_eq!(effect("read_file"), Effect::Read);
        assert_eq!(effect("execute_command"), Effect::Change);
        assert_eq!(effect("mcp:fs:read"), Effect::Change);
    }
}
