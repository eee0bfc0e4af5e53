//! File tools: the workspace's files, paths relative to its root.

use cove_protocol::files::{
    CreateRequest, DeleteQuery, FileMode, ListQuery, ReadRequest, RewriteRequest, StrReplaceRequest,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::{SandboxEnv, ToolDef, ToolResult, tool, workspace_path};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CreateFile {
    /// Path of the new file, relative to the workspace (e.g. src/main.py). Folders are made.
    file_path: String,
    /// The whole content of the file.
    file_contents: String,
    /// Octal permissions such as "755" for scripts (default 644).
    permissions: Option<String>,
}

async fn create_file(env: &SandboxEnv, a: CreateFile) -> ToolResult {
    let mode = match a
        .permissions
        .as_deref()
        .map(|p| u32::from_str_radix(p.trim().trim_start_matches("0o"), 8))
    {
        None => None,
        Some(Ok(m)) if m <= 0o7777 => Some(FileMode(m)),
        Some(_) => {
            return ToolResult::error("permissions must be octal, such as \"644\" or \"755\"");
        }
    };
    let request = CreateRequest {
        path: workspace_path(&a.file_path),
        content: a.file_contents,
        mode,
    };
    match env.sandbox.create(&request).await {
        Ok(done) => ToolResult::ok(format!("Created {} ({} bytes).", done.path, done.bytes)),
        Err(e) => ToolResult::from_client(&e),
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReadFile {
    /// Path of the file, relative to the workspace.
    file_path: String,
    /// First line to read (from 1).
    start_line: Option<u64>,
    /// Last line to read (inclusive).
    end_line: Option<u64>,
}

async fn read_file(env: &SandboxEnv, a: ReadFile) -> ToolResult {
    let request = ReadRequest {
        path: workspace_path(&a.file_path),
        start_line: a.start_line,
        end_line: a.end_line,
    };
    match env.sandbox.read(&request).await {
        Ok(file) => {
            let range = match (a.start_line, a.end_line) {
                (None, None) => String::new(),
                (s, e) => format!(
                    ", lines {}-{}",
                    s.unwrap_or(1),
                    e.map_or_else(
                        || file.total_lines.to_string(),
                        |e| e.min(file.total_lines).to_string()
                    )
                ),
            };
            ToolResult::ok(format!(
                "{} ({} lines{range}):\n{}",
                file.path, file.total_lines, file.content
            ))
        }
        Err(e) => ToolResult::from_client(&e),
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct FullFileRewrite {
    /// Path of the existing file, relative to the workspace.
    file_path: String,
    /// The new, whole content.
    file_contents: String,
}

async fn full_file_rewrite(env: &SandboxEnv, a: FullFileRewrite) -> ToolResult {
    let request = RewriteRequest {
        path: workspace_path(&a.file_path),
        content: a.file_contents,
    };
    match env.sandbox.rewrite(&request).await {
        Ok(done) => ToolResult::ok(format!("Rewrote {} ({} bytes).", done.path, done.bytes)),
        Err(e) => ToolResult::from_client(&e),
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct StrReplace {
    /// Path of the file, relative to the workspace.
    file_path: String,
    /// Text that occurs exactly once in the file, whitespace included.
    old_str: String,
    /// Text to put in its place.
    new_str: String,
}

async fn str_replace(env: &SandboxEnv, a: StrReplace) -> ToolResult {
    let request = StrReplaceRequest {
        path: workspace_path(&a.file_path),
        old_str: a.old_str,
        new_str: a.new_str,
    };
    match env.sandbox.str_replace(&request).await {
        Ok(done) => ToolResult::ok(format!(
            "Replaced in {} at line {}. It now reads (from line {}):\n{}",
            done.path, done.replaced_at_line, done.snippet_start_line, done.snippet
        )),
        Err(e) => ToolResult::from_client(&e),
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DeleteFile {
    /// Path of the file (or folder) to delete, relative to the workspace.
    file_path: String,
}

async fn delete_file(env: &SandboxEnv, a: DeleteFile) -> ToolResult {
    let query = DeleteQuery {
        path: workspace_path(&a.file_path),
        recursive: true,
    };
    match env.sandbox.delete(&query).await {
        Ok(done) => ToolResult::ok(format!("Deleted {}.", done.path)),
        Err(e) => ToolResult::from_client(&e),
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListFiles {
    /// Folder to list, relative to the workspace (default: the workspace itself).
    path: Option<String>,
    /// How many levels to descend (default 1, at most 5).
    depth: Option<u32>,
}

async fn list_files(env: &SandboxEnv, a: ListFiles) -> ToolResult {
    let query = ListQuery {
        path: workspace_path(a.path.as_deref().unwrap_or(".")),
        depth: a.depth.unwrap_or(1).clamp(1, 5),
    };
    match env.sandbox.list(&query).await {
        Ok(list) if list.entries.is_empty() => ToolResult::ok(format!("{} is empty.", query.path)),
        Ok(list) => {
            let mut lines: Vec<String> = list
                .entries
                .iter()
                .map(|e| {
                    if e.is_dir {
                        format!("{}/", e.path)
                    } else if e.is_symlink {
                        format!("{} (link)", e.path)
                    } else {
                        format!("{} ({} bytes)", e.path, e.size)
                    }
                })
                .collect();
            if list.truncated {
                lines.push("... (more entries; list a subfolder)".into());
            }
            ToolResult::ok(lines.join("\n"))
        }
        Err(e) => ToolResult::from_client(&e),
    }
}

/// The file tools.
pub fn tools() -> Vec<ToolDef> {
    vec![
        tool! {
            name: "create_file",
            args: CreateFile,
            summary: Some("file_path"),
            raw: &["file_contents"],
            description: "Create a new file with the given content (folders are made as needed). Fails if the file exists: change existing files with str_replace or full_file_rewrite.",
            example: json!({"file_path": "src/app.py", "file_contents": "print(\"hello\")\n"}),
            run: create_file,
        },
        tool! {
            name: "read_file",
            args: ReadFile,
            summary: Some("file_path"),
            raw: &[],
            description: "Read a text file, or a range of its lines.",
            example: json!({"file_path": "src/app.py", "start_line": 1, "end_line": 40}),
            run: read_file,
        },
        tool! {
            name: "full_file_rewrite",
            args: FullFileRewrite,
            summary: Some("file_path"),
            raw: &["file_contents"],
            description: "Replace the whole content of an existing file.",
            example: json!({"file_path": "todo.md", "file_contents": "# Plan\n- [x] Read the brief\n- [ ] Build the page\n"}),
            run: full_file_rewrite,
        },
        tool! {
            name: "str_replace",
            args: StrReplace,
            summary: Some("file_path"),
            raw: &["old_str", "new_str"],
            description: "Replace one exact piece of text in a file. old_str must occur exactly once; include enough surrounding lines to make it unique.",
            example: json!({"file_path": "todo.md", "old_str": "- [ ] Build the page", "new_str": "- [x] Build the page"}),
            run: str_replace,
        },
        tool! {
            name: "delete_file",
            args: DeleteFile,
            summary: Some("file_path"),
            raw: &[],
            description: "Delete a file or a folder with everything in it.",
            example: json!({"file_path": "build/tmp.log"}),
            run: delete_file,
        },
        tool! {
            name: "list_files",
            args: ListFiles,
            summary: Some("path"),
            raw: &[],
            description: "List the files of a folder of the workspace.",
            example: json!({"path": ".", "depth": 2}),
            run: list_files,
        },
    ]
}
