//! Where a fetched page's whole content is kept in the workspace, and how it is cut into
//! pages for the model.

use cove_protocol::web::{FetchFormat, SAVED_DIR};

/// The workspace path a URL's content is saved at: readable (host and path) and unique to
/// the URL (a hash of it), so fetching it again replaces the copy.
pub fn path_for(url: &str, format: FetchFormat) -> String {
    let parsed = url::Url::parse(url).ok();
    let host = parsed
        .as_ref()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_default();
    let path = parsed
        .as_ref()
        .map(|u| u.path().to_string())
        .unwrap_or_default();
    let mut slug = String::new();
    for c in format!("{host}{path}").chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.ends_with('-') && !slug.is_empty() {
            slug.push('-');
        }
        if slug.len() >= 80 {
            break;
        }
    }
    let slug = slug.trim_end_matches('-');
    format!(
        "{SAVED_DIR}/{slug}-{:08x}.{}",
        fnv1a(url.as_bytes()) as u32,
        format.extension()
    )
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, b| {
        (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Page `page` (from 1) of `content` cut into pages of about `max_chars` characters, each
/// ending at a line break where one falls in its second half; with the number of pages.
pub fn page_of(content: &str, max_chars: usize, page: usize) -> (String, usize) {
    let max_chars = max_chars.max(1);
    let mut pages = Vec::new();
    let mut rest = content;
    while !rest.is_empty() {
        let cut = match rest.char_indices().nth(max_chars) {
            None => rest.len(),
            Some((end, _)) => {
                let window = &rest[..end];
                let half = window
                    .char_indices()
                    .nth(max_chars / 2)
                    .map_or(0, |(i, _)| i);
                match window.rfind('\n') {
                    Some(nl) if nl >= half => nl + 1,
                    _ => end,
                }
            }
        };
        pages.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    let count = pages.len().max(1);
    let text = pages.get(page.saturating_sub(1)).copied().unwrap_or("");
    (text.to_string(), count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_names_are_readable_and_unique_per_url() {
        let a = path_for(
            "https://docs.python.org/3/tutorial/index.html",
            FetchFormat::Markdown,
        );
        assert!(
            a.starts_with(".cove/web/docs-python-org-3-tutorial-index-html-"),
            "{a}"
        );
        assert!(a.ends_with(".md"));
        let b = path_for(
            "https://docs.python.org/3/tutorial/index.html?x=1",
            FetchFormat::Markdown,
        );
        assert_ne!(a, b);
    }

    #[test]
    fn pages_cover_the_content_once_and_prefer_line_breaks() {
        let content: String = (0..100)
            .map(|i| format!("line {i} of the page\n"))
            .collect();
        let (first, pages) = page_of(&content, 200, 1);
        assert!(first.ends_with('\n'), "{first:?}");
        let mut joined = String::new();
        for p in 1..=pages {
            let (text, n) = page_of(&content, 200, p);
            assert_eq!(n, pages);
            assert!(text.chars().count() <= 200);
            joined.push_str(&text);
        }
        assert_eq!(joined, content);
        assert_eq!(page_of(&content, 200, pages + 1).0, "");
        assert_eq!(page_of("", 10, 1), (String::new(), 1));
    }
}
