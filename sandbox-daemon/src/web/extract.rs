//! A page's main content: readability (dom_smoothie, a port of Firefox's Readability.js)
//! picks the article out of the navigation, ads and footers around it, and gives it back as
//! Markdown (links and tables kept), text or cleaned HTML. A page readability finds no
//! article in is given whole, less its navigation, scripts and styles.

use cove_protocol::web::FetchFormat;
use dom_query::Document;
use dom_smoothie::{Config, Readability, TextMode};

/// Below this many characters of text, a page with scripts is taken to be drawn by them.
const SCRIPT_SHELL_CHARS: usize = 200;
/// Elements readability scores at most; past it the page is given whole (a huge page stays
/// fast).
const MAX_ELEMENTS: usize = 60_000;
/// Tags left out of a page given whole.
const NOT_CONTENT: &[&str] = &[
    "script", "style", "noscript", "template", "nav", "header", "footer", "aside", "form",
    "iframe", "svg", "button",
];

/// A page's main content in the asked format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extracted {
    pub title: String,
    pub content: String,
}

/// Whether the page needs scripts to show its content: next to no text, and scripts that
/// would draw it (an app shell like `<div id="root"></div>`).
pub fn needs_scripts(html: &str) -> bool {
    let doc = Document::from(html);
    if !doc.select("script").exists() {
        return false;
    }
    let body = doc.select("body");
    body.select("script, style, noscript, template").remove();
    body.text().split_whitespace().map(str::len).sum::<usize>() < SCRIPT_SHELL_CHARS
}

/// The main content of `html` (fetched from `url`) in `format`; relative links made absolute.
pub fn extract(html: &str, url: &str, format: FetchFormat) -> Extracted {
    let config = Config {
        max_elements_to_parse: MAX_ELEMENTS,
        text_mode: match format {
            FetchFormat::Markdown | FetchFormat::Html => TextMode::Markdown,
            FetchFormat::Text => TextMode::Formatted,
        },
        ..Config::default()
    };
    let article = Readability::new(html, Some(url), Some(config.clone()))
        .or_else(|_| Readability::new(html, None, Some(config)))
        .and_then(|mut r| r.parse());
    match article {
        Ok(article) if !article.text_content.trim().is_empty() => Extracted {
            title: article.title.trim().to_string(),
            content: match format {
                FetchFormat::Html => article.content.to_string(),
                _ => tidy(&article.text_content),
            },
        },
        _ => whole(html, format),
    }
}

/// The page less what is never content, for pages readability finds no article in.
fn whole(html: &str, format: FetchFormat) -> Extracted {
    let doc = Document::from(html);
    let title = doc.select("title").text().trim().to_string();
    let body = doc.select("body");
    body.select(&NOT_CONTENT.join(", ")).remove();
    let content = match format {
        FetchFormat::Markdown => tidy(
            &body
                .nodes()
                .first()
                .map(|node| node.md(None).to_string())
                .unwrap_or_default(),
        ),
        FetchFormat::Text => tidy(&body.formatted_text()),
        FetchFormat::Html => body.inner_html().to_string(),
    };
    Extracted { title, content }
}

/// Trailing spaces and runs of blank lines taken out.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            if blank > 1 || out.is_empty() {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_app_shell_needs_scripts_and_an_article_does_not() {
        assert!(needs_scripts(
            "<html><body><div id=\"root\"></div><script src=\"/app.js\"></script></body></html>"
        ));
        let article = format!(
            "<html><body><p>{}</p><script>track()</script></body></html>",
            "words of an article ".repeat(30)
        );
        assert!(!needs_scripts(&article));
        assert!(!needs_scripts(
            "<html><body><p>short, no scripts</p></body></html>"
        ));
    }

    #[test]
    fn a_page_without_an_article_is_given_whole_less_its_navigation() {
        let html = "<html><head><title>T</title></head><body><nav><a href=\"/\">Home</a></nav><p>Just a line of text</p></body></html>";
        let out = whole(html, FetchFormat::Markdown);
        assert!(out.content.contains("Just a line of text"), "{out:?}");
        assert!(!out.content.contains("Home"), "{out:?}");
    }
}
