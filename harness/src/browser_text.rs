//! Reading the browser state's `elements` text as a model does: every control is `[N]<tag
//! attrs>name`, alone on its line or inside a sentence (then closed by `</tag>`).

/// Every control in `elements`, in order: its index and its description (the `<tag …>name`
/// after the index, up to the closing tag, the next control or the end of the line).
pub fn controls(elements: &str) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    for line in elements.lines() {
        let starts: Vec<(usize, usize, u32)> = index_marks(line);
        for (i, &(_, desc_start, index)) in starts.iter().enumerate() {
            let end = starts.get(i + 1).map_or(line.len(), |next| next.0);
            let mut desc = &line[desc_start..end];
            if let Some(tag) = desc
                .strip_prefix('<')
                .and_then(|d| d.split([' ', '>']).next())
                && let Some(close) = desc.find(&format!("</{tag}>"))
            {
                desc = &desc[..close];
            }
            found.push((index, desc.to_string()));
        }
    }
    found
}

/// The index of the first control whose description holds `needle`.
pub fn index_of(elements: &str, needle: &str) -> Option<u32> {
    controls(elements)
        .into_iter()
        .find_map(|(index, desc)| desc.contains(needle).then_some(index))
}

/// (start of `[`, start of the description, index) of each `[N]<` in `line`.
fn index_marks(line: &str) -> Vec<(usize, usize, u32)> {
    let mut marks = Vec::new();
    let bytes = line.as_bytes();
    let mut at = 0;
    while let Some(open) = line[at..].find('[').map(|o| o + at) {
        let digits = bytes[open + 1..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        let close = open + 1 + digits;
        if digits > 0 && bytes.get(close) == Some(&b']') && bytes.get(close + 1) == Some(&b'<') {
            if let Ok(index) = line[open + 1..close].parse() {
                marks.push((open, close + 1, index));
            }
            at = close + 1;
        } else {
            at = open + 1;
        }
    }
    marks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_found_alone_and_inside_sentences() {
        let text = "[1]<a href=\"/x\">Home\nSee [2]<a>the docs</a>, or [3]<button>Save</button> now.\n[4]<input type=\"radio\" name=\"c\" checked>Blue";
        assert_eq!(
            controls(text),
            vec![
                (1, "<a href=\"/x\">Home".to_string()),
                (2, "<a>the docs".to_string()),
                (3, "<button>Save".to_string()),
                (
                    4,
                    "<input type=\"radio\" name=\"c\" checked>Blue".to_string()
                ),
            ]
        );
    }
}
