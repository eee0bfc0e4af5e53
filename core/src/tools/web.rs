//! The controller's web tools: `web_search` (a keyed provider the controller holds, else the
//! sandbox's keyless search) and the image tools (an OpenAI-compatible images API).
//! `web_fetch` runs in the sandbox (cove-tools).

use cove_protocol::vision::SeeImageRequest;
use cove_protocol::web::SearchRequest;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::{Image, ToolDef, ToolEnv, ToolResult, tool, workspace_path};
use crate::web::images::{ImageError, MadeImage, image_kind};
use crate::web::search::{SearchHit, numbered};

/// The image tools' names: offered only with an images API.
pub const GENERATE_IMAGE: &str = "generate_image";
pub const EDIT_IMAGE: &str = "edit_image";
/// Results when the model does not say.
const DEFAULT_RESULTS: usize = 8;
/// Largest image `edit_image` sends.
const MAX_EDIT_BYTES: usize = 25 * 1024 * 1024;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WebSearch {
    /// What to look for, as you would type it into a search engine.
    query: String,
    /// How many results (default 8, at most 20).
    num_results: Option<usize>,
}

async fn web_search(env: &ToolEnv, a: WebSearch) -> ToolResult {
    let count = a.num_results.unwrap_or(DEFAULT_RESULTS);
    if count == 0 || count > crate::web::search::MAX_RESULTS {
        return ToolResult::error("num_results must be between 1 and 20");
    }
    if a.query.trim().is_empty() {
        return ToolResult::error("the search query is empty: say what to look for");
    }
    let (source, hits) = match &env.web.search {
        Some(provider) => match provider.search(&env.web.http, &a.query, count).await {
            Ok(hits) => (provider.name().to_string(), hits),
            Err(e) => return ToolResult::error(e.to_string()),
        },
        None => {
            let request = SearchRequest {
                query: a.query.clone(),
                num_results: Some(count),
            };
            match env.sandbox.web_search(&request).await {
                Ok(found) => (
                    format!("{} (keyless, through the sandbox's browser)", found.engine),
                    found
                        .results
                        .into_iter()
                        .map(|h| SearchHit {
                            title: h.title,
                            url: h.url,
                            snippet: h.snippet,
                        })
                        .collect(),
                ),
                Err(e) => return ToolResult::from_client(&e),
            }
        }
    };
    ToolResult::ok(format!(
        "Results for {:?} from {source}:\n\n{}",
        a.query.trim(),
        numbered(&hits)
    ))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GenerateImage {
    /// What the image shows, in detail: subject, style, composition, colours, text in it.
    prompt: String,
    /// Size as the images API takes it: 1024x1024 (default), 1536x1024, 1024x1536 or auto.
    size: Option<String>,
    /// Where to save it in the workspace (default images/<words of the prompt>.png).
    path: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EditImage {
    /// The image to change, in the workspace (PNG, JPEG or WebP).
    path: String,
    /// What to change.
    prompt: String,
    /// Where to save the result (default: beside it, as <name>-edited.<ext>).
    output_path: Option<String>,
    /// Size as the images API takes it (default: the API's).
    size: Option<String>,
}

/// A workspace path made of the prompt's first words.
fn default_path(prompt: &str, extension: &str) -> String {
    let words: Vec<String> = prompt
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(6)
        .map(str::to_lowercase)
        .collect();
    let stem = if words.is_empty() {
        "image".to_string()
    } else {
        words.join("-")
    };
    format!("images/{stem}.{extension}")
}

/// `path` with its extension made `extension` (what the bytes are).
fn with_extension(path: &str, extension: &str) -> String {
    match path.rsplit_once('.') {
        Some((stem, old)) if !old.contains('/') => {
            let same = old.eq_ignore_ascii_case(extension)
                || (extension == "jpg" && old.eq_ignore_ascii_case("jpeg"));
            if same {
                path.to_string()
            } else {
                format!("{stem}.{extension}")
            }
        }
        _ => format!("{path}.{extension}"),
    }
}

/// Writes the image into the workspace and shows it to the model (when it sees images).
async fn deliver(env: &ToolEnv, made: MadeImage, path: String, what: &str) -> ToolResult {
    let extension = image_kind(&made.bytes).unwrap_or("png");
    let path = with_extension(&workspace_path(&path), extension);
    let size = made.bytes.len();
    if let Err(e) = env.sandbox.upload(&path, made.bytes).await {
        return ToolResult::from_client(&e);
    }
    let mut text = format!("{what} {path} ({size} bytes).");
    if let Some(revised) = made.revised_prompt {
        text.push_str(&format!(" The API drew it from this prompt: {revised}"));
    }
    let mut result = ToolResult::ok(text);
    if env.vision
        && let Ok(seen) = env.sandbox.see_image(&SeeImageRequest::path(&path)).await
    {
        result.text.push_str(" It is in the next message.");
        result.image = Some(Image {
            mime: seen.mime,
            base64: seen.base64,
            caption: path,
        });
    }
    result
}

fn image_error(e: ImageError) -> ToolResult {
    ToolResult::error(e.to_string())
}

async fn generate_image(env: &ToolEnv, a: GenerateImage) -> ToolResult {
    let Some(api) = &env.web.images else {
        return ToolResult::error("no images API is configured (COVE_IMAGES_API_KEY)");
    };
    let made = match api
        .generate(&env.web.http, &a.prompt, a.size.as_deref())
        .await
    {
        Ok(made) => made,
        Err(e) => return image_error(e),
    };
    let path = a
        .path
        .filter(|p| !p.trim().is_empty())
        .unwrap_or_else(|| default_path(&a.prompt, "png"));
    deliver(env, made, path, "Made").await
}

async fn edit_image(env: &ToolEnv, a: EditImage) -> ToolResult {
    let Some(api) = &env.web.images else {
        return ToolResult::error("no images API is configured (COVE_IMAGES_API_KEY)");
    };
    let source = workspace_path(&a.path);
    let bytes = match env.sandbox.download(&source).await {
        Ok(bytes) => bytes.to_vec(),
        Err(e) => return ToolResult::from_client(&e),
    };
    let Some(extension) = image_kind(&bytes) else {
        return ToolResult::error(format!(
            "{source} is not a PNG, JPEG or WebP image; convert it first"
        ));
    };
    if bytes.len() > MAX_EDIT_BYTES {
        return ToolResult::error(format!(
            "{source} is {} bytes, over the images API's 25 MB; scale it down first",
            bytes.len()
        ));
    }
    let name = source.rsplit('/').next().unwrap_or("image").to_string();
    let made = match api
        .edit(&env.web.http, bytes, &name, &a.prompt, a.size.as_deref())
        .await
    {
        Ok(made) => made,
        Err(e) => return image_error(e),
    };
    let output = a
        .output_path
        .filter(|p| !p.trim().is_empty())
        .unwrap_or_else(|| match source.rsplit_once('.') {
            Some((stem, _)) => format!("{stem}-edited.{extension}"),
            None => format!("{source}-edited.{extension}"),
        });
    deliver(env, made, output, &format!("Edited {source} into")).await
}

/// The controller's web tools.
pub fn tools() -> Vec<ToolDef> {
    vec![
        tool! {
            name: "web_search",
            args: WebSearch,
            summary: Some("query"),
            raw: &["query"],
            description: "Search the web. Answers a numbered list of results (title, URL, snippet); read the ones that matter with web_fetch. Use it for anything you do not know or that may have changed: current facts, versions, documentation, where a page is.",
            example: json!({"query": "tidal power Bay of Fundy 2026 output", "num_results": 5}),
            run: web_search,
        },
        tool! {
            name: "generate_image",
            args: GenerateImage,
            summary: Some("prompt"),
            raw: &["prompt"],
            description: "Make an image from a description with the images API and save it in the workspace (a PNG under images/ unless you give a path).",
            example: json!({"prompt": "A watercolour of a lighthouse on a granite headland at dusk", "size": "1024x1024", "path": "images/lighthouse.png"}),
            run: generate_image,
        },
        tool! {
            name: "edit_image",
            args: EditImage,
            summary: Some("path"),
            raw: &["prompt"],
            description: "Change an image of the workspace as a prompt says, with the images API; the result is saved beside it (<name>-edited.<ext>) unless you give output_path.",
            example: json!({"path": "images/lighthouse.png", "prompt": "Make it night, with the lamp lit"}),
            run: edit_image,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_paths_follow_the_prompt_and_the_bytes() {
        assert_eq!(
            default_path("A watercolour of a lighthouse, at dusk!", "png"),
            "images/a-watercolour-of-a-lighthouse-at.png"
        );
        assert_eq!(default_path("…", "png"), "images/image.png");
        assert_eq!(with_extension("out/pic.png", "jpg"), "out/pic.jpg");
        assert_eq!(with_extension("out/pic.jpeg", "jpg"), "out/pic.jpeg");
        assert_eq!(with_extension("out/pic", "png"), "out/pic.png");
        assert_eq!(with_extension("a.b/pic", "png"), "a.b/pic.png");
    }
}
