//! `web_fetch` and the keyless `web_search` against the web fixture: an article among
//! navigation and ads, a client-rendered app, a PDF printed by Chromium, redirects, old
//! charsets, compression, pages too big, binaries and error statuses; and a fake engine
//! with DuckDuckGo's markup, read in a background tab.

use cove_harness::web_site::{PDF_SENTENCE, WebSite};
use cove_harness::{DaemonBuilder, DaemonProcess};
use cove_protocol::ErrorCode;
use cove_protocol::browser::{NavigateTo, StateQuery};
use cove_protocol::client::ClientError;
use cove_protocol::web::{FetchFormat, FetchRequest, FetchResponse, SearchRequest};

async fn setup() -> (DaemonProcess, WebSite) {
    let site = WebSite::start().await.unwrap();
    let daemon = DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .arg("--search-url")
        .arg(site.search_url())
        .arg("--fetch-timeout-secs")
        .arg("2")
        .spawn()
        .await
        .unwrap();
    (daemon, site)
}

fn request(url: String) -> FetchRequest {
    FetchRequest {
        url,
        format: FetchFormat::Markdown,
        max_chars: None,
        page: None,
    }
}

async fn fetch(d: &DaemonProcess, url: String) -> FetchResponse {
    d.client
        .web_fetch(&request(url.clone()))
        .await
        .unwrap_or_else(|e| panic!("fetching {url}: {e}"))
}

async fn refused(d: &DaemonProcess, url: String) -> (ErrorCode, String) {
    match d.client.web_fetch(&request(url.clone())).await {
        Err(ClientError::Api { code, message, .. }) => (code, message),
        other => panic!("{url} should be refused, got {other:?}"),
    }
}

/// The agent's own tab, which background work must leave as it is.
async fn open_article_in_the_agents_tab(d: &DaemonProcess, site: &WebSite) {
    d.client
        .browser(
            &NavigateTo {
                url: site.url("article.html"),
            },
            StateQuery::lean(),
        )
        .await
        .unwrap();
}

/// The agent's tab still shows the article, and is the only tab.
async fn agents_tab_untouched(d: &DaemonProcess) {
    let state = d.client.browser_state(StateQuery::lean()).await.unwrap();
    assert_eq!(state.tabs.len(), 1, "{:?}", state.tabs);
    assert!(state.url.ends_with("/article.html"), "{}", state.url);
}

fn saved_files(d: &DaemonProcess) -> Vec<String> {
    std::fs::read_dir(d.path(".cove/web"))
        .map(|dir| {
            dir.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn an_article_comes_back_as_markdown_without_the_page_around_it() {
    let (d, site) = setup().await;
    let page = fetch(&d, site.url("article.html")).await;
    let md = &page.content;
    assert!(
        page.title.contains("Tidal Power in the Bay of Fundy"),
        "{page:?}"
    );
    assert!(md.contains("the highest tides in the world"), "{md}");
    assert!(md.contains("public hearings"), "the last paragraph: {md}");
    // Links and tables are kept as Markdown.
    assert!(
        md.contains("[Fundy Ocean Research Centre](https://www.fundyforce.ca/research)"),
        "{md}"
    );
    let row = md
        .lines()
        .find(|l| l.contains("December"))
        .unwrap_or_else(|| panic!("no table row: {md}"));
    assert!(
        row.starts_with('|') && row.contains("1,080") && row.contains("98%"),
        "{row}"
    );
    assert!(md.contains("## What changed"), "{md}");
    // What surrounds the article is left out.
    for noise in [
        "ADVERTISEMENT",
        "SPONSORED",
        "Subscribe now",
        "Related stories",
        "Privacy policy",
        "First!",
    ] {
        assert!(!md.contains(noise), "{noise:?} kept in:\n{md}");
    }
    assert!(!page.rendered);
    assert_eq!((page.page, page.pages), (1, 1));
    assert!(page.content_type.starts_with("text/html"));
    // The whole is saved in the workspace.
    assert!(page.saved_path.starts_with(".cove/web/") && page.saved_path.ends_with(".md"));
    let saved = std::fs::read_to_string(d.path(&page.saved_path)).unwrap();
    assert_eq!(&saved, md);

    // Text and HTML on request.
    let mut text = request(site.url("article.html"));
    text.format = FetchFormat::Text;
    let text = d.client.web_fetch(&text).await.unwrap();
    assert!(text.content.contains("the highest tides in the world"));
    assert!(!text.content.contains("](https://"), "{}", text.content);
    assert!(text.saved_path.ends_with(".txt"));
    let mut html = request(site.url("article.html"));
    html.format = FetchFormat::Html;
    let html = d.client.web_fetch(&html).await.unwrap();
    assert!(html.content.contains("<table"), "{}", html.content);
    assert!(!html.content.contains("ADVERTISEMENT"));
}

#[tokio::test]
async fn a_long_result_comes_in_pages_read_from_the_saved_copy() {
    let (d, site) = setup().await;
    let mut ask = request(site.url("article.html"));
    ask.max_chars = Some(600);
    let first = d.client.web_fetch(&ask).await.unwrap();
    assert!(first.pages >= 3, "{first:?}");
    assert!(first.content.chars().count() <= 600);
    let saved = std::fs::read_to_string(d.path(&first.saved_path)).unwrap();
    assert_eq!(saved.chars().count(), first.total_chars);
    // Later pages come from the saved copy: change it and the change shows.
    std::fs::write(
        d.path(&first.saved_path),
        saved.replace("Parrsboro", "PARRSBORO"),
    )
    .unwrap();
    let mut whole = first.content.clone();
    for n in 2..=first.pages {
        ask.page = Some(n);
        let page = d.client.web_fetch(&ask).await.unwrap();
        assert_eq!((page.page, page.pages), (n, first.pages));
        whole.push_str(&page.content);
    }
    assert_eq!(whole.replace("PARRSBORO", "Parrsboro"), saved);
    assert!(
        whole.contains("PARRSBORO"),
        "later pages were fetched again"
    );
    ask.page = Some(first.pages + 1);
    assert_eq!(d.client.web_fetch(&ask).await.unwrap().content, "");
    ask.page = Some(0);
    assert_eq!(
        d.client.web_fetch(&ask).await.unwrap_err().code(),
        Some(&ErrorCode::InvalidRequest)
    );
}

#[tokio::test]
async fn a_client_rendered_page_is_rendered_in_a_tab_the_agent_never_sees() {
    let (d, site) = setup().await;
    open_article_in_the_agents_tab(&d, &site).await;
    let page = fetch(&d, site.url("app.html")).await;
    assert!(page.rendered, "{page:?}");
    assert!(
        page.content.contains("Carrick Point, was built in 1809"),
        "{page:?}"
    );
    assert!(
        page.title.contains("Lighthouses of the Northern Coast"),
        "{page:?}"
    );
    agents_tab_untouched(&d).await;
}

#[tokio::test]
async fn pdfs_redirects_charsets_and_compression() {
    let (d, site) = setup().await;
    let pdf = fetch(&d, site.url("report.pdf")).await;
    assert!(pdf.content.contains(PDF_SENTENCE), "{pdf:?}");
    assert!(pdf.content.contains("north channel"), "{pdf:?}");
    assert_eq!(pdf.content_type, "application/pdf");

    let hopped = fetch(&d, site.url("hop/3")).await;
    assert_eq!(hopped.url, site.url("article.html"));
    assert!(hopped.content.contains("highest tides"));

    let latin1 = fetch(&d, site.url("latin1.html")).await;
    assert!(
        latin1
            .content
            .contains("Crème brûlée, crêpes and a naïve gâteau"),
        "{latin1:?}"
    );
    let koi8 = fetch(&d, site.url("koi8.html")).await;
    assert!(koi8.content.contains("Привет, мир"), "{koi8:?}");
    let gzip = fetch(&d, site.url("gzip.html")).await;
    assert!(gzip.content.contains("highest tides"), "{gzip:?}");
    let plain = fetch(&d, site.url("plain.txt")).await;
    assert_eq!(plain.content, "just text\nsecond line\n");
}

#[tokio::test]
async fn what_cannot_be_read_is_a_clear_error_and_leaves_no_file() {
    let (d, site) = setup().await;
    let (code, message) = refused(&d, site.url("huge.html")).await;
    assert_eq!(code, ErrorCode::PageTooLarge, "{message}");
    assert!(message.contains("32 MB"), "{message}");
    let started = std::time::Instant::now();
    let (code, message) = refused(&d, site.url("declared-huge.bin")).await;
    assert_eq!(code, ErrorCode::PageTooLarge, "{message}");
    assert!(message.contains("10737418240 bytes"), "{message}");
    assert!(
        started.elapsed().as_secs() < 5,
        "the declared length was not believed"
    );
    let (code, message) = refused(&d, site.url("picture.png")).await;
    assert_eq!(code, ErrorCode::NotAPage, "{message}");
    assert!(message.contains("image/png"), "{message}");
    let (code, message) = refused(&d, site.url("missing.html")).await;
    assert_eq!(code, ErrorCode::FetchFailed);
    assert!(message.contains("HTTP 404"), "{message}");
    let (code, message) = refused(&d, site.url("broken.html")).await;
    assert_eq!(code, ErrorCode::FetchFailed);
    assert!(message.contains("HTTP 500"), "{message}");
    let (code, message) = refused(&d, site.url("loop")).await;
    assert_eq!(code, ErrorCode::FetchFailed);
    assert!(message.contains("redirects too many times"), "{message}");
    let started = std::time::Instant::now();
    let (code, message) = refused(&d, site.url("stuck.html")).await;
    assert_eq!(code, ErrorCode::Timeout, "{message}");
    assert!(message.contains("within 2 s"), "{message}");
    assert!(started.elapsed().as_secs() < 10);
    let closed = cove_harness::ClosedPort::new().unwrap();
    let port = closed.port();
    let (code, message) = refused(&d, format!("http://127.0.0.1:{port}/")).await;
    assert_eq!(code, ErrorCode::FetchFailed);
    assert!(message.contains("cannot fetch"), "{message}");
    for bad in ["ftp://example.com/file", "not a url", ""] {
        let (code, message) = refused(&d, bad.to_string()).await;
        assert_eq!(code, ErrorCode::InvalidRequest, "{bad:?}: {message}");
    }
    assert!(saved_files(&d).is_empty(), "{:?}", saved_files(&d));
}

#[tokio::test]
async fn a_keyless_search_reads_the_engines_results_in_the_background() {
    let (d, site) = setup().await;
    let c = &d.client;
    open_article_in_the_agents_tab(&d, &site).await;
    let found = c
        .web_search(&SearchRequest {
            query: "tidal power & tides".into(),
            num_results: None,
        })
        .await
        .unwrap();
    assert_eq!(found.engine, "duckduckgo");
    let urls: Vec<&str> = found.results.iter().map(|r| r.url.as_str()).collect();
    // The ad is left out; the engine's redirect links are unwrapped.
    assert_eq!(
        urls,
        [
            site.url("article.html").as_str(),
            "https://en.wikipedia.org/wiki/Tidal_power",
            "https://www.energy.example/tidal?ref=ddg"
        ]
    );
    assert_eq!(
        found.results[0].title,
        "Tidal Power in the Bay of Fundy | Coastline Weekly"
    );
    assert!(
        found.results[0]
            .snippet
            .contains("highest tides in the world")
    );
    // The query reached the engine whole.
    let fewer = c
        .web_search(&SearchRequest {
            query: "tides".into(),
            num_results: Some(2),
        })
        .await
        .unwrap();
    assert_eq!(fewer.results.len(), 2);
    // The agent's tab was left alone.
    agents_tab_untouched(&d).await;

    let nothing = c
        .web_search(&SearchRequest {
            query: "nothing".into(),
            num_results: None,
        })
        .await
        .unwrap();
    assert!(nothing.results.is_empty());
    for (query, says) in [
        ("captcha", "Unfortunately, bots use DuckDuckGo too."),
        ("consent", "Before you continue"),
    ] {
        let e = c
            .web_search(&SearchRequest {
                query: query.into(),
                num_results: None,
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Some(&ErrorCode::SearchBlocked), "{e}");
        let message = e.to_string();
        assert!(message.contains(says), "{message}");
        assert!(message.contains("web_browser_takeover"), "{message}");
        assert!(message.contains("TAVILY_API_KEY"), "{message}");
    }
    for (query, n) in [("  ", None), ("x", Some(0)), ("x", Some(21))] {
        let e = c
            .web_search(&SearchRequest {
                query: query.into(),
                num_results: n,
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Some(&ErrorCode::InvalidRequest), "{e}");
    }
}

#[tokio::test]
async fn pythons_documentation_reads_as_markdown_without_its_sidebar() {
    let site = cove_harness::real_site::real_site().await;
    let d = DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .spawn()
        .await
        .unwrap();
    let page = fetch(&d, site.url("python/tutorial/controlflow.html")).await;
    let md = &page.content;
    assert!(page.title.contains("More Control Flow Tools"), "{page:?}");
    assert!(md.contains("## 4.1. `if` Statements"), "{md}");
    assert!(
        md.contains("```\n>>> x = int(input(\"Please enter an integer: \"))"),
        "{md}"
    );
    assert!(
        md.contains(&format!(
            "[if]({})",
            site.url("python/reference/compound_stmts.html#if")
        )),
        "{md}"
    );
    for sidebar in [
        "Previous topic",
        "Next topic",
        "Show Source",
        "Report a Bug",
        "Navigation",
    ] {
        assert!(!md.contains(sidebar), "{sidebar:?} kept");
    }
    // The page's heading, which readability drops as a copy of the title, comes first.
    let os = fetch(&d, site.url("python/library/os.html")).await;
    assert!(
        os.content
            .starts_with("# os — Miscellaneous operating system interfaces\n"),
        "{}",
        &os.content[..os.content.len().min(600)]
    );
    // A page that is mostly links: what the page marks as its content is kept.
    let index = fetch(&d, site.url("python/library/mm.html")).await;
    assert!(
        index.content.contains(&format!(
            "[wave — Read and write WAV files]({})",
            site.url("python/library/wave.html")
        )),
        "{}",
        index.content
    );
    assert!(
        !index.content.contains("Python Software Foundation"),
        "{}",
        index.content
    );
}
