//! `send_keys` input: key names and chords (`Enter`, `Control+a`, `Shift+Tab`, `Tab Tab
//! Enter`), or plain text to type.

use chromiumoxide::keys::USKEYBOARD_LAYOUT;

/// CDP modifier bits.
pub const ALT: i64 = 1;
pub const CONTROL: i64 = 2;
pub const META: i64 = 4;
pub const SHIFT: i64 = 8;

/// One key, as CDP wants it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    pub key: String,
    pub code: String,
    pub key_code: i64,
    pub text: Option<String>,
}

/// A key pressed with modifiers held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chord {
    /// The modifier keys, pressed in order before `key`.
    pub modifiers: Vec<(Key, i64)>,
    pub key: Key,
}

/// What `send_keys` will do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyInput {
    /// Press these chords one after another.
    Chords(Vec<Chord>),
    /// Type this text.
    Text(String),
}

fn alias(name: &str) -> &str {
    match name.to_ascii_lowercase().as_str() {
        "ctrl" | "control" => "Control",
        "cmd" | "command" | "meta" | "super" | "win" => "Meta",
        "alt" | "option" => "Alt",
        "shift" => "Shift",
        "enter" | "return" => "Enter",
        "esc" | "escape" => "Escape",
        "tab" => "Tab",
        "space" => " ",
        "backspace" => "Backspace",
        "delete" | "del" => "Delete",
        "up" | "arrowup" => "ArrowUp",
        "down" | "arrowdown" => "ArrowDown",
        "left" | "arrowleft" => "ArrowLeft",
        "right" | "arrowright" => "ArrowRight",
        "pageup" => "PageUp",
        "pagedown" => "PageDown",
        "home" => "Home",
        "end" => "End",
        "insert" => "Insert",
        _ => name,
    }
}

/// The key called `name` (a key name such as `Enter` or a single character).
pub fn key(name: &str) -> Option<Key> {
    let name = alias(name);
    let def = USKEYBOARD_LAYOUT
        .iter()
        .find(|d| d.key == name)
        .or_else(|| {
            // Key names are matched without regard to case (`enter`, `ARROWDOWN`), characters are not.
            (name.chars().count() > 1)
                .then(|| {
                    USKEYBOARD_LAYOUT
                        .iter()
                        .find(|d| d.key.eq_ignore_ascii_case(name))
                })
                .flatten()
        })?;
    let text = def
        .text
        .map(str::to_string)
        .or_else(|| (def.key.chars().count() == 1).then(|| def.key.to_string()));
    Some(Key {
        key: def.key.to_string(),
        code: def.code.to_string(),
        key_code: def.key_code,
        text: if def.key == "Enter" {
            Some("\r".into())
        } else {
            text
        },
    })
}

/// The key that types `c`: its key on a US keyboard, else a key event carrying just the
/// character (as an input method sends it). A line break is Enter.
pub fn of_char(c: char) -> Key {
    let mut buf = [0u8; 4];
    let text: &str = c.encode_utf8(&mut buf);
    if c == '\n'
        && let Some(enter) = key("Enter")
    {
        return enter;
    }
    match USKEYBOARD_LAYOUT.iter().find(|d| d.key == text) {
        Some(def) => Key {
            key: def.key.to_string(),
            code: def.code.to_string(),
            key_code: def.key_code,
            text: Some(text.to_string()),
        },
        None => Key {
            key: text.to_string(),
            code: String::new(),
            key_code: 0,
            text: Some(text.to_string()),
        },
    }
}

fn modifier_bit(key: &str) -> Option<i64> {
    match key {
        "Alt" => Some(ALT),
        "Control" => Some(CONTROL),
        "Meta" => Some(META),
        "Shift" => Some(SHIFT),
        _ => None,
    }
}

fn chord(spec: &str) -> Option<Chord> {
    // "Control++" means Control and the plus key.
    let parts: Vec<&str> = if let Some(head) = spec.strip_suffix("++") {
        head.split('+').chain(std::iter::once("+")).collect()
    } else {
        spec.split('+').collect()
    };
    let (last, mods) = parts.split_last()?;
    if last.is_empty() {
        return None;
    }
    let mut modifiers = Vec::new();
    for m in mods {
        let k = key(m)?;
        let bit = modifier_bit(&k.key)?;
        modifiers.push((k, bit));
    }
    Some(Chord {
        modifiers,
        key: key(last)?,
    })
}

/// Reads a `send_keys` string: whitespace-separated chords when every word is one
/// (`Enter`, `Control+a`, `Tab Tab Enter`), otherwise text to type.
pub fn parse(keys: &str) -> Option<KeyInput> {
    if keys.is_empty() {
        return None;
    }
    let words: Vec<&str> = keys.split_whitespace().collect();
    let looks_like_keys = !words.is_empty()
        && words
            .iter()
            .all(|w| w.chars().count() > 1 || words.len() == 1 && w.contains('+'));
    if looks_like_keys
        && let Some(chords) = words.iter().map(|w| chord(w)).collect::<Option<Vec<_>>>()
    {
        return Some(KeyInput::Chords(chords));
    }
    Some(KeyInput::Text(keys.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_character_is_typed_by_its_key_or_as_text() {
        let a = of_char('a');
        assert_eq!(
            (a.code.as_str(), a.key_code, a.text.as_deref()),
            ("KeyA", 65, Some("a"))
        );
        let star = of_char('*');
        assert_eq!((star.key.as_str(), star.text.as_deref()), ("*", Some("*")));
        assert_eq!(of_char('\n').key, "Enter");
        let e = of_char('é');
        assert_eq!(
            (e.key.as_str(), e.key_code, e.text.as_deref()),
            ("é", 0, Some("é"))
        );
    }

    fn chords(input: &str) -> Vec<(Vec<String>, String)> {
        match parse(input) {
            Some(KeyInput::Chords(c)) => c
                .into_iter()
                .map(|c| {
                    (
                        c.modifiers.into_iter().map(|(k, _)| k.key).collect(),
                        c.key.key,
                    )
                })
                .collect(),
            other => panic!("{input:?} parsed as {other:?}"),
        }
    }

    #[test]
    fn key_names_and_chords() {
        assert_eq!(chords("Enter"), vec![(vec![], "Enter".to_string())]);
        assert_eq!(chords("enter"), vec![(vec![], "Enter".to_string())]);
        assert_eq!(
            chords("Control+a"),
            vec![(vec!["Control".to_string()], "a".to_string())]
        );
        assert_eq!(
            chords("ctrl+shift+Tab"),
            vec![(
                vec!["Control".to_string(), "Shift".to_string()],
                "Tab".to_string()
            )]
        );
        assert_eq!(chords("Tab Tab Enter").len(), 3);
        assert_eq!(chords("Escape"), vec![(vec![], "Escape".to_string())]);
        assert_eq!(chords("ArrowDown"), vec![(vec![], "ArrowDown".to_string())]);
    }

    #[test]
    fn anything_else_is_text() {
        assert_eq!(
            parse("hello world"),
            Some(KeyInput::Text("hello world".into()))
        );
        assert_eq!(parse("a"), Some(KeyInput::Text("a".into())));
        assert_eq!(
            parse("Enterprise"),
            Some(KeyInput::Text("Enterprise".into()))
        );
        assert_eq!(parse(""), None);
    }

    #[test]
    fn enter_types_a_carriage_return() {
        assert_eq!(key("Enter").unwrap().text.as_deref(), Some("\r"));
        assert_eq!(key("a").unwrap().text.as_deref(), Some("a"));
        assert_eq!(key("Tab").unwrap().key_code, 9);
    }
}
