//! Bounds on a page's shape, checked on its text before any DOM is built: how many elements
//! it has (past the cap the rest is cut) and how deep they nest (past the cap tags are
//! dropped and their text kept, as browsers do past 512 levels). Readability and the
//! Markdown writer walk the tree by recursion and every node costs memory, so a page of
//! 5,000 nested `<blockquote>`s or four million `<p>`s must never reach them whole.
//!
//! The scan follows the parser's rules only as far as depth needs: void elements, raw text
//! (`<script>`, `<style>`…), comments, quoted attributes, and the end tags HTML leaves
//! implied (`<p>`, `<li>`, table cells). Where it is unsure it counts deeper, never
//! shallower, so a real page is at worst flattened a little more than needed.

use std::borrow::Cow;

/// Deepest nesting kept (Chromium's and Firefox's parsers stop nesting at 512).
pub const MAX_DEPTH: usize = 512;
/// Most elements read; a page past it is cut there (real pages have a few thousand).
pub const MAX_ELEMENTS: usize = 150_000;

/// A page within the bounds, and what had to change to get there.
#[derive(Debug)]
pub struct Bounded<'a> {
    pub html: Cow<'a, str>,
    /// Tags dropped for nesting too deep (start and end tags both counted once).
    pub flattened: usize,
    /// Whether the page was cut at [`MAX_ELEMENTS`].
    pub cut: bool,
}

const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "keygen", "link", "meta", "param",
    "source", "track", "wbr", "basefont", "bgsound", "frame",
];
/// Elements whose content is text up to their end tag.
const RAW_TEXT: &[&str] = &[
    "script",
    "style",
    "textarea",
    "title",
    "xmp",
    "iframe",
    "noembed",
    "noframes",
    "plaintext",
];
/// Start tags that close an open `<p>`.
const CLOSES_P: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "center",
    "details",
    "dialog",
    "dir",
    "div",
    "dl",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hgroup",
    "hr",
    "main",
    "menu",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "summary",
    "table",
    "ul",
    "li",
    "dd",
    "dt",
];

#[derive(Debug)]
struct Open {
    name: String,
    /// Dropped for depth: its end tag goes too.
    dropped: bool,
}

/// `html` within [`MAX_DEPTH`] and [`MAX_ELEMENTS`].
pub fn bound_html(html: &str) -> Bounded<'_> {
    bound_with(html, MAX_DEPTH, MAX_ELEMENTS)
}

fn bound_with(html: &str, max_depth: usize, max_elements: usize) -> Bounded<'_> {
    let bytes = html.as_bytes();
    let mut stack: Vec<Open> = Vec::new();
    let mut depth = 0usize;
    let mut elements = 0usize;
    // Byte ranges left out of the output, in order.
    let mut skips: Vec<(usize, usize)> = Vec::new();
    let mut cut_at = None;
    let mut i = 0;
    while let Some(found) = memchr::memchr(b'<', &bytes[i..]) {
        let start = i + found;
        let rest = &bytes[start..];
        if rest.starts_with(b"<!--") {
            i = find(bytes, start + 4, b"-->").map_or(bytes.len(), |e| e + 3);
            continue;
        }
        if rest.starts_with(b"<!") || rest.starts_with(b"<?") {
            i = memchr::memchr(b'>', &bytes[start..]).map_or(bytes.len(), |e| start + e + 1);
            continue;
        }
        let closing = rest.get(1) == Some(&b'/');
        let name_start = start + 1 + usize::from(closing);
        let name_len = bytes[name_start..]
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b':' | b'_'))
            .count();
        if name_len == 0 || !bytes[name_start].is_ascii_alphabetic() {
            // A `<` that starts no tag is text.
            i = start + 1;
            continue;
        }
        let name = html[name_start..name_start + name_len].to_ascii_lowercase();
        let end = tag_end(bytes, name_start + name_len);
        let self_closing = end >= 2 && bytes[end - 2] == b'/';
        if closing {
            if let Some(at) = stack.iter().rposition(|open| open.name == name) {
                let popped = stack.split_off(at);
                depth -= popped.iter().filter(|o| !o.dropped).count();
                if popped[0].dropped {
                    skips.push((start, end));
                }
            }
            i = end;
            continue;
        }
        elements += 1;
        if elements > max_elements {
            cut_at = Some(start);
            break;
        }
        close_implied(&name, &mut stack, &mut depth);
        let void = VOID.contains(&name.as_str()) || self_closing;
        let mut next = end;
        if RAW_TEXT.contains(&name.as_str()) && !self_closing {
            // Its text is not markup; its end tag closes it.
            let close = format!("</{name}");
            next = find_ascii_ci(bytes, end, close.as_bytes())
                .map_or(bytes.len(), |e| tag_end(bytes, e + close.len()));
        } else if !void {
            let dropped = depth >= max_depth;
            if dropped {
                skips.push((start, end));
            } else {
                depth += 1;
            }
            stack.push(Open { name, dropped });
        }
        i = next;
    }
    if skips.is_empty() && cut_at.is_none() {
        return Bounded {
            html: Cow::Borrowed(html),
            flattened: 0,
            cut: false,
        };
    }
    let keep_to = cut_at.unwrap_or(html.len());
    let mut out = String::with_capacity(keep_to);
    let mut from = 0;
    for &(s, e) in skips.iter().filter(|(s, _)| *s < keep_to) {
        out.push_str(&html[from..s]);
        from = e.min(keep_to);
    }
    out.push_str(&html[from..keep_to]);
    Bounded {
        html: Cow::Owned(out),
        flattened: skips.len(),
        cut: cut_at.is_some(),
    }
}

/// Pops what a start tag `name` closes without saying so.
fn close_implied(name: &str, stack: &mut Vec<Open>, depth: &mut usize) {
    let mut pop_to = |stack: &mut Vec<Open>, at: usize| {
        let popped = stack.split_off(at);
        *depth -= popped.iter().filter(|o| !o.dropped).count();
    };
    if CLOSES_P.contains(&name) && stack.last().is_some_and(|o| o.name == "p") {
        let at = stack.len() - 1;
        pop_to(stack, at);
    }
    // An item closes the open item of its own list (not one of an outer list).
    let (same, scope): (&[&str], &[&str]) = match name {
        "li" => (&["li"], &["ul", "ol", "menu"]),
        "dt" | "dd" => (&["dt", "dd"], &["dl"]),
        "td" | "th" => (&["td", "th"], &["tr", "table"]),
        "tr" => (&["tr", "td", "th"], &["table", "tbody", "thead", "tfoot"]),
        "option" => (&["option"], &["select", "datalist"]),
        "tbody" | "thead" | "tfoot" => (&["tbody", "thead", "tfoot", "tr", "td", "th"], &["table"]),
        _ => return,
    };
    // The outermost of them above the list, row or table that holds them (a new row
    // closes the open cell and the open row).
    let mut target = None;
    for at in (0..stack.len()).rev() {
        let open = stack[at].name.as_str();
        if scope.contains(&open) {
            break;
        }
        if same.contains(&open) {
            target = Some(at);
        }
    }
    if let Some(at) = target {
        pop_to(stack, at);
    }
}

/// Just past the `>` that ends the tag whose name ends at `from` (quotes respected).
fn tag_end(bytes: &[u8], from: usize) -> usize {
    let mut quote = None;
    for (offset, &b) in bytes[from..].iter().enumerate() {
        match (quote, b) {
            (None, b'"' | b'\'') => quote = Some(b),
            (Some(q), _) if b == q => quote = None,
            (None, b'>') => return from + offset + 1,
            _ => {}
        }
    }
    bytes.len()
}

fn find(bytes: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(&bytes[from.min(bytes.len())..], needle).map(|at| from + at)
}

fn find_ascii_ci(bytes: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    let mut at = from;
    while let Some(found) = memchr::memchr(b'<', bytes.get(at..)?) {
        let start = at + found;
        if bytes
            .get(start..start + needle.len())
            .is_some_and(|w| w.eq_ignore_ascii_case(needle))
        {
            return Some(start);
        }
        at = start + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(tag: &str, n: usize) -> String {
        format!(
            "{}x{}",
            format!("<{tag}>").repeat(n),
            format!("</{tag}>").repeat(n)
        )
    }

    #[test]
    fn an_ordinary_page_is_left_as_it_is() {
        let html = "<!doctype html><html><head><title>a < b</title><script>if (a<b && c>d) x('</div>')</script></head><body><!-- <div><div> --><ul><li>one<li>two</ul><p>para<p>another<div><table><tr><td>a<td>b<tr><td>c</table></div><img src=x><br/></body></html>";
        let bounded = bound_with(html, 6, 100);
        assert!(matches!(bounded.html, Cow::Borrowed(_)), "{bounded:?}");
        assert_eq!(bounded.flattened, 0);
    }

    #[test]
    fn nesting_past_the_cap_is_flattened_and_the_text_kept() {
        let html = nested("blockquote", 5000);
        let bounded = bound_html(&html);
        let kept = bounded.html.matches("<blockquote>").count();
        assert_eq!(kept, MAX_DEPTH);
        assert_eq!(bounded.html.matches("</blockquote>").count(), MAX_DEPTH);
        assert!(bounded.html.contains('x'));
        assert_eq!(bounded.flattened, 2 * (5000 - MAX_DEPTH));
    }

    #[test]
    fn unclosed_items_and_paragraphs_do_not_count_as_nesting() {
        let items = "<li>item".repeat(2000);
        let paragraphs = "<p>para".repeat(2000);
        let rows = "<tr><td>a<td>b".repeat(2000);
        let html = format!("<ul>{items}</ul>{paragraphs}<table>{rows}</table>");
        let bounded = bound_with(&html, 10, 100_000);
        assert_eq!(bounded.flattened, 0, "{}", &bounded.html[..200]);
    }

    #[test]
    fn a_page_past_the_element_cap_is_cut() {
        let html = format!("<body>{}</body>", "<p>a</p>".repeat(50));
        let bounded = bound_with(&html, MAX_DEPTH, 20);
        assert!(bounded.cut);
        assert_eq!(
            bounded.html.matches("<p>").count(),
            19,
            "the body is one of 20"
        );
    }

    #[test]
    fn quotes_and_raw_text_hide_markup() {
        let html = format!(
            "<div title='<div><div>'><script>{}</script><style>{}</style>ok</div>",
            "<div>".repeat(100),
            "<div>".repeat(100)
        );
        let bounded = bound_with(&html, 2, 10);
        assert!(matches!(bounded.html, Cow::Borrowed(_)), "{bounded:?}");
    }
}
