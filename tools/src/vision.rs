//! Vision: looking at an image from the workspace or the web.

use cove_protocol::vision::SeeImageRequest;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::{Image, SandboxEnv, ToolDef, ToolResult, tool, workspace_path};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SeeImage {
    /// Path of the image in the workspace (PNG, JPEG, GIF or WebP), or an http(s) URL.
    file_path: String,
}

async fn see_image(env: &SandboxEnv, a: SeeImage) -> ToolResult {
    if !env.vision {
        return ToolResult::error(
            "this model cannot look at images; describe what you need from the image another way (read its metadata, run a tool on it)",
        );
    }
    let target = a.file_path.trim();
    let request = if target.starts_with("http://") || target.starts_with("https://") {
        SeeImageRequest::url(target)
    } else {
        SeeImageRequest::path(workspace_path(target))
    };
    match env.sandbox.see_image(&request).await {
        Ok(image) => {
            let caption = format!(
                "{target} ({}x{}, shown at {}x{})",
                image.original_width, image.original_height, image.width, image.height
            );
            let mut result =
                ToolResult::ok(format!("Loaded {caption}; it is in the next message."));
            result.image = Some(Image {
                mime: image.mime,
                base64: image.base64,
                caption,
            });
            result
        }
        Err(e) => ToolResult::from_client(&e),
    }
}

/// The vision tools.
pub fn tools() -> Vec<ToolDef> {
    vec![tool! {
        name: "see_image",
        args: SeeImage,
        summary: Some("file_path"),
        raw: &[],
        description: "Look at an image: a file of the workspace or an http(s) URL. It is shown to you in the next message.",
        example: json!({"file_path": "screenshots/chart.png"}),
        run: see_image,
    }]
}
