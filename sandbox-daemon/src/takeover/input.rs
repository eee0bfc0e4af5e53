//! What the takeover page sends, and how it becomes browser input: coordinates mapped from
//! the size the viewer shows the frame at to the browser's viewport, keys completed from the
//! US layout the browser's own key events use.

use serde::Deserialize;

use crate::browser::keys::{self, ALT, CONTROL, META};
use crate::browser::takeover_tab::{Button, KeyKind, MouseKind, TabInput};

/// A message from the page.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum ViewerMessage {
    /// A frame was drawn; the next may come.
    Ack,
    /// Pointer input at `(x, y)` of a view `w` by `h` pixels large.
    Mouse {
        kind: PointerKind,
        x: f64,
        y: f64,
        w: f64,
        h: f64,
        /// The DOM `button`: 0 left, 1 middle, 2 right.
        #[serde(default)]
        button: u8,
        /// The DOM `buttons` bitmask.
        #[serde(default)]
        buttons: i64,
        /// The DOM `detail`: 2 on the second press of a double-click.
        #[serde(default)]
        clicks: i64,
        #[serde(default)]
        mods: i64,
    },
    Wheel {
        x: f64,
        y: f64,
        w: f64,
        h: f64,
        dx: f64,
        dy: f64,
        #[serde(default)]
        mods: i64,
    },
    Key {
        kind: KeyPhase,
        /// The DOM `key` (`a`, `A`, `Enter`, `Backspace`).
        key: String,
        /// The DOM `code` (`KeyA`, `Enter`).
        #[serde(default)]
        code: String,
        /// The DOM `keyCode`, used for keys the US layout does not know.
        #[serde(default)]
        key_code: i64,
        #[serde(default)]
        mods: i64,
    },
    /// Text to insert as one edit (a paste).
    Text {
        text: String,
    },
    Navigate {
        url: String,
    },
    Back,
    Forward,
    Reload,
    Tab {
        id: u32,
    },
    /// The answer to the page's dialog.
    Dialog {
        accept: bool,
        #[serde(default)]
        text: Option<String>,
    },
    /// "Done — hand back to the agent", with the person's note.
    Done {
        #[serde(default)]
        note: Option<String>,
    },
}

/// A pointer event's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PointerKind {
    Move,
    Down,
    Up,
}

/// A key event's phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyPhase {
    Down,
    Up,
}

/// Why a message cannot become input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(String);

/// Maps a point of a view `w`×`h` pixels large onto a viewport `vw`×`vh` CSS pixels large,
/// kept inside the viewport.
pub fn map_point(x: f64, y: f64, w: f64, h: f64, vw: f64, vh: f64) -> Result<(f64, f64), BadInput> {
    let finite = [x, y, w, h].iter().all(|v| v.is_finite());
    if !finite || w <= 0.0 || h <= 0.0 {
        return Err(BadInput(format!(
            "bad coordinates ({x}, {y}) in a {w}x{h} view"
        )));
    }
    let clamp = |v: f64, max: f64| v.clamp(0.0, (max - 1.0).max(0.0));
    Ok((clamp(x / w * vw, vw), clamp(y / h * vh, vh)))
}

fn button(dom: u8) -> Button {
    match dom {
        0 => Button::Left,
        1 => Button::Middle,
        2 => Button::Right,
        _ => Button::None,
    }
}

/// The browser input a pointer, wheel, key or text message stands for, on a viewport
/// `vw`×`vh`; `None` for messages that are not input.
pub fn to_input(message: &ViewerMessage, vw: f64, vh: f64) -> Result<Option<TabInput>, BadInput> {
    Ok(Some(match message {
        ViewerMessage::Mouse {
            kind,
            x,
            y,
            w,
            h,
            button: dom_button,
            buttons,
            clicks,
            mods,
        } => {
            let (x, y) = map_point(*x, *y, *w, *h, vw, vh)?;
            let (kind, button) = match kind {
                // A move names the button held, or no drag starts.
                PointerKind::Move => (
                    MouseKind::Move,
                    if buttons & 1 != 0 {
                        Button::Left
                    } else if buttons & 2 != 0 {
                        Button::Right
                    } else if buttons & 4 != 0 {
                        Button::Middle
                    } else {
                        Button::None
                    },
                ),
                PointerKind::Down => (MouseKind::Down, button(*dom_button)),
                PointerKind::Up => (MouseKind::Up, button(*dom_button)),
            };
            TabInput::Mouse {
                kind,
                x,
                y,
                button,
                buttons: *buttons,
                clicks: if kind == MouseKind::Move {
                    0
                } else {
                    (*clicks).clamp(1, 3)
                },
                modifiers: mods & 15,
            }
        }
        ViewerMessage::Wheel {
            x,
            y,
            w,
            h,
            dx,
            dy,
            mods,
        } => {
            let (x, y) = map_point(*x, *y, *w, *h, vw, vh)?;
            if !dx.is_finite() || !dy.is_finite() {
                return Err(BadInput("bad wheel deltas".into()));
            }
            TabInput::Wheel {
                x,
                y,
                dx: dx.clamp(-10_000.0, 10_000.0),
                dy: dy.clamp(-10_000.0, 10_000.0),
                modifiers: mods & 15,
            }
        }
        ViewerMessage::Key {
            kind,
            key,
            code,
            key_code,
            mods,
        } => {
            if key.is_empty() || key.chars().count() > 32 {
                return Err(BadInput("bad key".into()));
            }
            let modifiers = mods & 15;
            let known = keys::key(key).filter(|k| k.key == *key);
            let (code, key_code, text) = match known {
                Some(k) => (k.code, k.key_code, k.text),
                None => {
                    // A character of another layout (é, ß): it types itself.
                    let single = key.chars().count() == 1;
                    (code.clone(), *key_code, single.then(|| key.clone()))
                }
            };
            // With Control, Alt or Meta held a key is a shortcut and types nothing.
            let text = text.filter(|_| modifiers & (ALT | CONTROL | META) == 0);
            TabInput::Key {
                kind: match kind {
                    KeyPhase::Down => KeyKind::Down,
                    KeyPhase::Up => KeyKind::Up,
                },
                key: key.clone(),
                code,
                key_code,
                text,
                modifiers,
            }
        }
        ViewerMessage::Text { text } => {
            if text.is_empty() {
                return Ok(None);
            }
            TabInput::Text(text.clone())
        }
        _ => return Ok(None),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> ViewerMessage {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn points_map_from_the_view_to_the_viewport() {
        // A 640x360 view of a 1280x720 viewport: everything doubles.
        assert_eq!(
            map_point(320.0, 180.0, 640.0, 360.0, 1280.0, 720.0).unwrap(),
            (640.0, 360.0)
        );
        // A narrow phone view, 375 wide.
        let (x, y) = map_point(375.0 / 4.0, 0.0, 375.0, 210.9375, 1280.0, 720.0).unwrap();
        assert!((x - 320.0).abs() < 1e-9 && y == 0.0);
        // Outside the view is kept inside the viewport.
        assert_eq!(
            map_point(-5.0, 999.0, 640.0, 360.0, 1280.0, 720.0).unwrap(),
            (0.0, 719.0)
        );
        assert!(map_point(1.0, 1.0, 0.0, 360.0, 1280.0, 720.0).is_err());
        assert!(map_point(f64::NAN, 1.0, 10.0, 10.0, 1280.0, 720.0).is_err());
    }

    #[test]
    fn a_click_keeps_its_button_and_count() {
        let m = parse(
            r#"{"t":"mouse","kind":"down","x":100,"y":50,"w":640,"h":360,"button":0,"buttons":1,"clicks":2}"#,
        );
        assert_eq!(
            to_input(&m, 1280.0, 720.0).unwrap(),
            Some(TabInput::Mouse {
                kind: MouseKind::Down,
                x: 200.0,
                y: 100.0,
                button: Button::Left,
                buttons: 1,
                clicks: 2,
                modifiers: 0,
            })
        );
        let drag = parse(r#"{"t":"mouse","kind":"move","x":1,"y":1,"w":2,"h":2,"buttons":1}"#);
        match to_input(&drag, 100.0, 100.0).unwrap() {
            Some(TabInput::Mouse { button, clicks, .. }) => {
                assert_eq!((button, clicks), (Button::Left, 0));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn keys_type_text_unless_a_shortcut() {
        let a = parse(r#"{"t":"key","kind":"down","key":"a","code":"KeyA","key_code":65}"#);
        match to_input(&a, 10.0, 10.0).unwrap() {
            Some(TabInput::Key { text, key_code, .. }) => {
                assert_eq!((text.as_deref(), key_code), (Some("a"), 65));
            }
            other => panic!("{other:?}"),
        }
        let ctrl_a = parse(r#"{"t":"key","kind":"down","key":"a","code":"KeyA","mods":2}"#);
        match to_input(&ctrl_a, 10.0, 10.0).unwrap() {
            Some(TabInput::Key {
                text, modifiers, ..
            }) => assert_eq!((text, modifiers), (None, 2)),
            other => panic!("{other:?}"),
        }
        let enter = parse(r#"{"t":"key","kind":"down","key":"Enter","code":"Enter"}"#);
        match to_input(&enter, 10.0, 10.0).unwrap() {
            Some(TabInput::Key { text, key_code, .. }) => {
                assert_eq!((text.as_deref(), key_code), (Some("\r"), 13));
            }
            other => panic!("{other:?}"),
        }
        let backspace = parse(r#"{"t":"key","kind":"down","key":"Backspace"}"#);
        match to_input(&backspace, 10.0, 10.0).unwrap() {
            Some(TabInput::Key { text, key_code, .. }) => assert_eq!((text, key_code), (None, 8)),
            other => panic!("{other:?}"),
        }
        let e_acute = parse(r#"{"t":"key","kind":"down","key":"é","code":"Digit2","key_code":50}"#);
        match to_input(&e_acute, 10.0, 10.0).unwrap() {
            Some(TabInput::Key { text, .. }) => assert_eq!(text.as_deref(), Some("é")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn commands_are_not_input_and_junk_is_refused() {
        assert_eq!(to_input(&ViewerMessage::Reload, 1.0, 1.0).unwrap(), None);
        assert!(serde_json::from_str::<ViewerMessage>(r#"{"t":"explode"}"#).is_err());
        let bad = parse(r#"{"t":"wheel","x":1,"y":1,"w":0,"h":0,"dx":0,"dy":10}"#);
        assert!(to_input(&bad, 10.0, 10.0).is_err());
    }
}
