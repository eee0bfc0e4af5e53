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
/// It starts with the page's own heading: readability drops a first heading that repeats the
/// title, and the title it keeps is not in the content a model reads.
pub fn extract(html: &str, url: &str, format: FetchFormat) -> Extracted {
    let mut out = article_or_page(html, url, format);
    if let Some(heading) = first_heading(html) {
        let start: String = out.content.chars().take(heading.len() + 400).collect();
        if !squeezed(&start).contains(&squeezed(&heading)) {
            out.content = match format {
                FetchFormat::Markdown => format!("# {heading}\n\n{}", out.content),
                FetchFormat::Text => format!("{heading}\n\n{}", out.content),
                FetchFormat::Html => format!("<h1>{}</h1>\n{}", escape(&heading), out.content),
            };
        }
    }
    out
}

/// The text of the page's first `<h1>`, without a permalink mark (`¶`); only that element is
/// parsed.
fn first_heading(html: &str) -> Option<String> {
    let lower = html.to_ascii_lowercase();
    let start = lower.find("<h1")?;
    let end = start + lower[start..].find("</h1>")? + "</h1>".len();
    let text = Document::from(html.get(start..end)?).select("h1").text();
    let heading = squeezed(&text.replace(['¶', '#'], " "));
    (!heading.is_empty() && heading.len() <= 300).then_some(heading)
}

/// Runs of whitespace as one space, trimmed.
fn squeezed(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn article_or_page(html: &str, url: &str, format: FetchFormat) -> Extracted {
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
    let marked = marked_main(html);
    match article {
        Ok(article)
            if !article.text_content.trim().is_empty()
                && marked.as_ref().is_none_or(|(_, words)| {
                    kept(words, &article.text_content) * 10 >= total(words) * KEPT_OF_MARKED
                }) =>
        {
            Extracted {
                title: article.title.trim().to_string(),
                content: match format {
                    FetchFormat::Html => article.content.to_string(),
                    _ => tidy(&article.text_content),
                },
            }
        }
        // Readability threw away most of what the page itself marks as its content (a
        // page of links, an index): the page knows better.
        Ok(article) if marked.is_some() => {
            let mut out = whole_of(html, url, format, marked.map(|(selector, _)| selector));
            if !article.title.trim().is_empty() {
                out.title = article.title.trim().to_string();
            }
            out
        }
        _ => whole(html, url, format),
    }
}

/// Tenths of the words of the page's marked content readability's pick must hold to be
/// trusted.
const KEPT_OF_MARKED: usize = 6;

/// Words (lower-cased runs of letters and digits) and how often each occurs.
type Words = std::collections::HashMap<String, usize>;

fn words(text: &str) -> Words {
    let mut counts = Words::new();
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        *counts.entry(word.to_lowercase()).or_insert(0) += 1;
    }
    counts
}

fn total(words: &Words) -> usize {
    words.values().sum()
}

/// How many of `words` (with repeats) `text` holds.
fn kept(words: &Words, text: &str) -> usize {
    let got = self::words(text);
    words
        .iter()
        .map(|(w, n)| (*n).min(got.get(w).copied().unwrap_or(0)))
        .sum()
}

/// The element the page marks as its content (`<main>`, `role="main"`, one `<article>`),
/// when it has text, and its words.
fn marked_main(html: &str) -> Option<(&'static str, Words)> {
    let doc = Document::from(html);
    for selector in ["main", "[role=main]", "article"] {
        let found = doc.select(selector);
        if found.length() != 1 {
            continue;
        }
        found.select("script, style, noscript, template").remove();
        let words = words(&found.text());
        if total(&words) >= 30 {
            return Some((selector, words));
        }
    }
    None
}

/// The page less what is never content, for pages readability finds no article in.
fn whole(html: &str, url: &str, format: FetchFormat) -> Extracted {
    whole_of(html, url, format, None)
}

/// The element `selector` picks (the body when none), less what is never content.
fn whole_of(html: &str, url: &str, format: FetchFormat, selector: Option<&str>) -> Extracted {
    let doc = Document::from(html);
    let title = doc.select("title").text().trim().to_string();
    let body = doc.select(selector.unwrap_or("body"));
    body.select(&NOT_CONTENT.join(", ")).remove();
    // Links the agent can follow from anywhere, as readability leaves them.
    if let Ok(base) = url::Url::parse(url) {
        for (selector, attr) in [("a[href]", "href"), ("img[src]", "src")] {
            for node in body.select(selector).nodes() {
                if let Some(joined) = node.attr(attr).and_then(|v| base.join(&v).ok()) {
                    node.set_attr(attr, joined.as_str());
                }
            }
        }
    }
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
        let html = "<html><head><title>T</title></head><body><nav><a href=\"/\">Home</a></nav><p>Just a line. <a href=\"b.html\">Next</a></p></body></html>";
        let out = whole(html, "http://x/a/index.html", FetchFormat::Markdown);
        assert!(
            out.content
                .contains("Just a line. [Next](http://x/a/b.html)"),
            "{out:?}"
        );
        assert!(!out.content.contains("Home"), "{out:?}");
    }

    #[test]
    fn a_page_of_links_the_page_marks_as_its_content_is_kept() {
        let links: String = (0..40)
            .map(|i| format!("<li><a href=\"m{i}.html\">Module number {i} reference</a></li>"))
            .collect();
        let footer =
            "Copyright notice and licence terms of the foundation that publishes these pages. "
                .repeat(4);
        let html = format!(
            "<html><head><title>Index</title></head><body><div role=\"main\"><h1>Modules</h1><ul>{links}</ul></div><div class=\"footer\"><p>{footer}</p></div></body></html>"
        );
        let out = extract(&html, "http://x/lib/index.html", FetchFormat::Markdown);
        assert!(
            out.content
                .contains("[Module number 39 reference](http://x/lib/m39.html)"),
            "{out:?}"
        );
        assert!(!out.content.contains("Copyright notice"), "{out:?}");
    }
}
