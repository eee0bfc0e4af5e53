//! What the model is sent besides the stored history: the temporary message that carries the
//! latest browser state and any requested image for one call only, so they never pile up.

use cove_protocol::browser::BrowserState;

use crate::llm::{ChatMessage, ContentPart};
use crate::tools::Image;

/// The message shown to the model for its next call only, if there is anything to show.
pub fn temporary_message(
    state: Option<&BrowserState>,
    images: &[Image],
    vision: bool,
) -> Option<ChatMessage> {
    if state.is_none() && images.is_empty() {
        return None;
    }
    let mut parts = Vec::new();
    if let Some(state) = state {
        let text = format!(
            "[The browser as it is now. This message is shown for this step only.]\n{}",
            cove_tools::state_text(state)
        );
        parts.push(ContentPart::Text { text });
        if vision && let Some(shot) = &state.screenshot {
            parts.push(ContentPart::Text {
                text: "Screenshot of the viewport:".into(),
            });
            parts.push(ContentPart::Image {
                mime: shot.mime.clone(),
                data: shot.base64.clone(),
            });
        }
    }
    for image in images {
        parts.push(ContentPart::Text {
            text: format!("Image {}:", image.caption),
        });
        parts.push(ContentPart::Image {
            mime: image.mime.clone(),
            data: image.base64.clone(),
        });
    }
    Some(ChatMessage {
        content: parts,
        ..ChatMessage::user("")
    })
}
