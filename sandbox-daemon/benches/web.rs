//! `cargo bench -p coved --bench web`: `web_fetch` over every page of Python's documentation
//! as Debian ships it (`python3-doc`, ~530 pages), served over local HTTP, printed as JSON.
//!
//! Per page: the HTML's bytes, the Markdown's bytes and the time of the fetch (HTTP,
//! readability, Markdown, the saved copy). How much of the page's main text is kept is
//! measured against Sphinx's own marking of it, `<div role="main">`: the share of its words
//! (lower-cased runs of letters and digits, counted with repeats) that appear in the
//! Markdown (`main_text_kept`), and the share of the Markdown's words that are not in it
//! (`words_from_outside_main`: navigation or footers let through). Link targets are not
//! words of the page and are left out of the Markdown's count.
//!
//! Needs what `harness/install-test-deps.sh` installs (Python's docs).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a bench binary may panic on failure

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use cove_harness::DaemonBuilder;
use cove_harness::real_site::real_site;
use cove_harness::stats::{ms, summary};
use cove_protocol::web::{FetchFormat, FetchRequest, MAX_MAX_CHARS};
use serde_json::json;

const BIN: &str = env!("CARGO_BIN_EXE_coved");
const DOCS: &str = "/usr/share/doc/python3/html";

fn pages(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if !name.starts_with('_') {
                pages(&path, out);
            }
        } else if name.ends_with(".html") {
            out.push(path);
        }
    }
}

/// Markdown without its link and image targets (`](...)`), which are not the page's words.
fn without_targets(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut rest = markdown;
    while let Some(at) = rest.find("](") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        rest = match after.find(')') {
            Some(end) => &after[end + 1..],
            None => "",
        };
    }
    out.push_str(rest);
    out
}

fn words(text: &str) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        *counts.entry(word.to_lowercase()).or_insert(0) += 1;
    }
    counts
}

/// Words of `a` (with repeats) also in `b`.
fn common(a: &HashMap<String, usize>, b: &HashMap<String, usize>) -> usize {
    a.iter()
        .map(|(w, n)| (*n).min(b.get(w).copied().unwrap_or(0)))
        .sum()
}

fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[tokio::main]
async fn main() {
    let site = real_site().await;
    let daemon = DaemonBuilder::new(BIN).spawn().await.unwrap();
    let root = std::fs::canonicalize(DOCS).unwrap();
    let mut files = Vec::new();
    pages(&root, &mut files);
    let mut times = Vec::new();
    let mut kept = Vec::new();
    let mut outside = Vec::new();
    let mut size_ratio = Vec::new();
    let (mut html_total, mut md_total) = (0usize, 0usize);
    let mut worst = Vec::new();
    for file in &files {
        let rel = file
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let html = std::fs::read_to_string(file).unwrap();
        let main = dom_query::Document::from(html.as_str())
            .select("div[role=main]")
            .text()
            .to_string();
        let reference = words(&main);
        let reference_words: usize = reference.values().sum();
        let started = Instant::now();
        let page = daemon
            .client
            .web_fetch(&FetchRequest {
                url: site.url(&format!("python/{rel}")),
                format: FetchFormat::Markdown,
                max_chars: Some(MAX_MAX_CHARS),
                page: None,
            })
            .await
            .unwrap_or_else(|e| panic!("{rel}: {e}"));
        times.push(ms(started.elapsed()));
        let markdown = std::fs::read_to_string(daemon.path(&page.saved_path)).unwrap();
        html_total += html.len();
        md_total += markdown.len();
        size_ratio.push(markdown.len() as f64 / html.len() as f64);
        // Pages whose main part is a few words (an index of links) say little about either.
        if reference_words >= 50 {
            let got = words(&without_targets(&markdown));
            let got_words: usize = got.values().sum();
            let share = common(&reference, &got) as f64 / reference_words as f64;
            kept.push(share);
            outside.push(1.0 - common(&got, &reference) as f64 / got_words.max(1) as f64);
            worst.push((share, rel.clone()));
        }
    }
    worst.sort_by(|a, b| a.0.total_cmp(&b.0));
    let scaled = |v: &[f64]| summary(v.iter().map(|x| x * 100.0).collect());
    let report = json!({
        "pages": files.len(),
        "html_bytes": html_total,
        "markdown_bytes": md_total,
        "markdown_to_html_bytes": round(md_total as f64 / html_total as f64),
        "markdown_to_html_per_page_percent": scaled(&size_ratio),
        "fetch_ms": summary(times),
        "main_text_kept_percent": scaled(&kept),
        "words_from_outside_main_percent": scaled(&outside),
        "pages_measured_for_text": kept.len(),
        "least_kept": worst.iter().take(5).map(|(s, p)| json!({"page": p, "kept_percent": round(s * 100.0)})).collect::<Vec<_>>(),
    });
    println!("{}", serde_json::to_string_pretty(&report).unwrap());
}
