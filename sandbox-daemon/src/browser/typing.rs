//! Keys to the page: `send_keys` chords and text, and typing key by key into editors that
//! only listen to keys.

use std::time::Duration;

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::input::DispatchKeyEventType;

use super::keys::{self, KeyInput};
use super::{BrowserError, cdp};

pub(super) async fn press(
    page: &Page,
    input: &KeyInput,
    limit: Duration,
) -> Result<(), BrowserError> {
    match input {
        KeyInput::Text(text) => cdp::insert_text(page, text, limit).await,
        KeyInput::Chords(chords) => {
            for chord in chords {
                let mut held = 0;
                for (key, bit) in &chord.modifiers {
                    held |= bit;
                    cdp::key_event(page, DispatchKeyEventType::RawKeyDown, key, held, limit)
                        .await?;
                }
                cdp::key_event(page, DispatchKeyEventType::KeyDown, &chord.key, held, limit)
                    .await?;
                cdp::key_event(page, DispatchKeyEventType::KeyUp, &chord.key, held, limit).await?;
                for (key, bit) in chord.modifiers.iter().rev() {
                    held &= !bit;
                    cdp::key_event(page, DispatchKeyEventType::KeyUp, key, held, limit).await?;
                }
            }
            Ok(())
        }
    }
}

/// Types `text` key by key into the focused element, replacing its selection: editors that
/// keep their own document (code editors in a `contenteditable`) only see key events.
pub(super) async fn type_keys(
    page: &Page,
    text: &str,
    limit: Duration,
) -> Result<(), BrowserError> {
    if let Some(delete) = keys::key("Delete") {
        cdp::key_event(page, DispatchKeyEventType::KeyDown, &delete, 0, limit).await?;
        cdp::key_event(page, DispatchKeyEventType::KeyUp, &delete, 0, limit).await?;
    }
    for c in text.chars().filter(|c| *c != '\r') {
        let key = keys::of_char(c);
        cdp::key_event(page, DispatchKeyEventType::KeyDown, &key, 0, limit).await?;
        cdp::key_event(page, DispatchKeyEventType::KeyUp, &key, 0, limit).await?;
    }
    Ok(())
}

/// What `input_text` says it did: typed, and, when the element does not show the text
/// (the page ignored or rewrote it), what it shows instead.
pub(super) fn typed_report(text: &str, index: u32, value: Option<&str>, desc: &str) -> String {
    let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let Some(value) = value.filter(|v| !words(v).contains(&words(text))) else {
        return format!("Typed {text:?} into [{index}] {desc}");
    };
    let shows: String = words(value).chars().take(300).collect();
    format!(
        "Typed {text:?} into [{index}] {desc}, but it shows {shows:?}: the page did not take the text as typed (click the element, then send_keys)"
    )
}
