//! An MCP tool's result as the model reads it: text blocks as they are, the first image
//! shown (when the model sees images), resources by their text or a line that says what
//! they are, `isError` as a failed call.

use base64::Engine;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

use super::{Image, ToolResult};

/// Images larger than this (decoded) are described, not shown: providers refuse big ones.
const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;

/// The tool result of `result`, from `tool`; `vision` says whether the model sees images.
pub(super) fn tool_result(tool: &str, result: CallToolResult, vision: bool) -> ToolResult {
    let mut parts: Vec<String> = Vec::new();
    let mut image: Option<Image> = None;
    for block in result.content {
        match block {
            ContentBlock::Text(text) => parts.push(text.text),
            ContentBlock::Image(img) => {
                let size = base64::engine::general_purpose::STANDARD
                    .decode(img.data.as_bytes())
                    .map(|bytes| bytes.len());
                match size {
                    Ok(bytes) if vision && image.is_none() && bytes <= MAX_IMAGE_BYTES => {
                        parts.push(format!(
                            "[image ({}, {bytes} bytes): shown in the next message]",
                            img.mime_type
                        ));
                        image = Some(Image {
                            mime: img.mime_type,
                            base64: img.data,
                            caption: format!("image from {tool}"),
                        });
                    }
                    Ok(bytes) => parts.push(format!(
                        "[image ({}, {bytes} bytes): not shown{}]",
                        img.mime_type,
                        if vision {
                            ""
                        } else {
                            "; this model cannot see images"
                        }
                    )),
                    Err(_) => parts.push(format!(
                        "[image ({}): the server sent data that is not base64]",
                        img.mime_type
                    )),
                }
            }
            ContentBlock::Audio(audio) => {
                parts.push(format!("[audio ({}): not shown]", audio.mime_type))
            }
            ContentBlock::Resource(embedded) => match embedded.resource {
                ResourceContents::TextResourceContents { uri, text, .. } => {
                    parts.push(format!("[resource {uri}]\n{text}"))
                }
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => parts.push(format!(
                    "[resource {uri} ({}, {} bytes of base64): binary, not shown]",
                    mime_type.as_deref().unwrap_or("binary"),
                    blob.len()
                )),
                _ => parts.push("[a resource of a kind Cove does not know: not shown]".into()),
            },
            ContentBlock::ResourceLink(link) => {
                // Read through JSON so the line names what the server gave, whatever fields
                // this version of the model types has.
                let value = serde_json::to_value(&link).unwrap_or_default();
                let uri = value["uri"].as_str().unwrap_or_default();
                let name = value["name"].as_str().unwrap_or(uri);
                let about = value["description"]
                    .as_str()
                    .map(|d| format!(": {d}"))
                    .unwrap_or_default();
                parts.push(format!("[resource link {name} <{uri}>{about}]"));
            }
            _ => parts.push("[content of a kind Cove does not know: not shown]".into()),
        }
    }
    if parts.is_empty()
        && let Some(structured) = result.structured_content
    {
        parts.push(structured.to_string());
    }
    let text = if parts.is_empty() {
        "(the tool returned nothing)".to_string()
    } else {
        parts.join("\n")
    };
    let mut out = if result.is_error.unwrap_or(false) {
        ToolResult::error(text)
    } else {
        ToolResult::ok(text)
    };
    out.image = image;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(value: serde_json::Value) -> CallToolResult {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn text_images_resources_and_errors_map_to_what_the_model_reads() {
        let png = base64::engine::general_purpose::STANDARD.encode([137u8, 80, 78, 71]);
        let r = tool_result(
            "srv__t",
            result(json!({"content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": png, "mimeType": "image/png"},
                {"type": "image", "data": png, "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "inside"}},
                {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AAAA", "mimeType": "application/zip"}},
                {"type": "resource_link", "uri": "file:///c", "name": "c", "description": "a file"}
            ]})),
            true,
        );
        assert!(r.ok);
        assert_eq!(
            r.text,
            "hello\n[image (image/png, 4 bytes): shown in the next message]\n[image (image/png, 4 bytes): not shown]\n[resource file:///a.txt]\ninside\n[resource file:///b.bin (application/zip, 4 bytes of base64): binary, not shown]\n[resource link c <file:///c>: a file]"
        );
        assert_eq!(r.image.as_ref().map(|i| i.mime.as_str()), Some("image/png"));

        let blind = tool_result(
            "srv__t",
            result(json!({"content": [{"type": "image", "data": png, "mimeType": "image/png"}]})),
            false,
        );
        assert!(blind.image.is_none());
        assert!(blind.text.contains("cannot see images"), "{}", blind.text);

        let failed = tool_result(
            "srv__t",
            result(json!({"content": [{"type": "text", "text": "no such repo"}], "isError": true})),
            true,
        );
        assert!(!failed.ok);
        assert_eq!(failed.text, "no such repo");

        let structured = tool_result(
            "srv__t",
            result(json!({"content": [], "structuredContent": {"sum": 3}})),
            true,
        );
        assert_eq!(structured.text, "{\"sum\":3}");
        let empty = tool_result("srv__t", result(json!({"content": []})), true);
        assert_eq!(empty.text, "(the tool returned nothing)");
    }
}
