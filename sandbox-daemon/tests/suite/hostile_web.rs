//! Pages written to hurt the reader cost their own fetch and nothing else: the daemon, its
//! shell sessions and its memory come through every one (security review H1, M1).

use std::time::{Duration, Instant};

use cove_harness::web_site::WebSite;
use cove_harness::{DaemonBuilder, DaemonProcess};
use cove_protocol::ErrorCode;
use cove_protocol::client::ClientError;
use cove_protocol::shell::ExecRequest;
use cove_protocol::web::{FetchFormat, FetchRequest, FetchResponse};

async fn setup() -> (DaemonProcess, WebSite) {
    let site = WebSite::start().await.unwrap();
    let daemon = DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .spawn()
        .await
        .unwrap();
    // A shell session with a process in it, which must outlive every page.
    daemon
        .client
        .exec(&ExecRequest::new("export KEPT=still-here"))
        .await
        .unwrap();
    (daemon, site)
}

async fn fetch(d: &DaemonProcess, url: String) -> Result<FetchResponse, ClientError> {
    d.client
        .web_fetch(&FetchRequest {
            url,
            format: FetchFormat::Markdown,
            max_chars: Some(2000),
            page: None,
        })
        .await
}

/// The daemon answers, and its shell session is the one it was.
async fn still_whole(d: &DaemonProcess) {
    let out = d
        .client
        .exec(&ExecRequest::new("echo $KEPT"))
        .await
        .unwrap_or_else(|e| panic!("the daemon is gone: {e}\n{}", d.stderr()));
    assert_eq!(out.output.trim(), "still-here");
}

/// The daemon's own peak resident memory, in MB.
fn peak_mb(d: &DaemonProcess) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", d.pid())).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<u64>()
        .unwrap()
        / 1024
}

/// How many page readers (`coved read-page`) the daemon `pid` has running now.
fn readers_of(pid: i32) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|entry| {
            let dir = entry.path();
            let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
            // The parent's pid is the second field after the name in parentheses.
            let parent = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|p| p.parse::<i32>().ok());
            parent == Some(pid)
                && std::fs::read(dir.join("cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains("read-page"))
        })
        .count()
}

#[tokio::test]
async fn elements_nested_thousands_deep_are_read_and_the_daemon_lives() {
    let (d, site) = setup().await;
    for (tag, n) in [("blockquote", 5000), ("div", 40_000), ("span", 60_000)] {
        let page = fetch(&d, site.url(&format!("hostile/deep/{tag}/{n}")))
            .await
            .unwrap_or_else(|e| panic!("{tag} x {n}: {e}"));
        assert!(
            page.content.contains("The deep end."),
            "{tag} x {n}: {}",
            page.content
        );
        still_whole(&d).await;
    }
}

#[tokio::test]
async fn four_pages_of_millions_of_elements_at_once_stay_out_of_the_daemon() {
    let (d, site) = setup().await;
    let started = Instant::now();
    let fetches: Vec<_> = (0..4)
        .map(|_| fetch(&d, site.url("hostile/flat")))
        .collect();
    let mut most_readers = 0;
    let health = async {
        // The daemon keeps answering while the pages are read, by two readers at most.
        while started.elapsed() < Duration::from_secs(3) {
            d.client.health().await.unwrap();
            most_readers = most_readers.max(readers_of(d.pid()));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let (pages, ()) = tokio::join!(futures_util::future::join_all(fetches), health);
    assert!(
        (1..=2).contains(&most_readers),
        "{most_readers} page readers at once"
    );
    for page in pages {
        let page = page.unwrap();
        assert!(page.total_chars > 0);
        let saved = std::fs::read_to_string(d.path(&page.saved_path)).unwrap();
        assert!(
            saved.ends_with("elements of a page]"),
            "the cut is said: {}",
            &saved[saved.len().saturating_sub(200)..]
        );
    }
    still_whole(&d).await;
    let peak = peak_mb(&d);
    assert!(
        peak < 300,
        "the pages were read outside the daemon, yet it peaked at {peak} MB"
    );
}

#[tokio::test]
async fn a_pdf_page_that_inflates_to_megabytes_is_skipped_not_read() {
    let (d, site) = setup().await;
    let page = fetch(&d, site.url("hostile/pdf-page/20")).await.unwrap();
    assert!(
        page.content.contains("[page 1: its drawing inflates past"),
        "{}",
        page.content
    );
    still_whole(&d).await;
    assert!(peak_mb(&d) < 300, "{} MB", peak_mb(&d));
}

#[tokio::test]
async fn a_pdf_whose_form_blows_up_fails_its_fetch_and_nothing_else() {
    let (d, site) = setup().await;
    match fetch(&d, site.url("hostile/pdf-form/40")).await {
        Err(ClientError::Api { code, message, .. }) => {
            assert_eq!(code, ErrorCode::FetchFailed, "{message}");
            assert!(message.contains("cannot be read as a page"), "{message}");
            assert!(
                message.contains("curl -o"),
                "the remedy is given: {message}"
            );
        }
        other => panic!("the blown-up PDF should fail its fetch, got {other:?}"),
    }
    still_whole(&d).await;
    assert!(peak_mb(&d) < 300, "{} MB", peak_mb(&d));
    // A good page right after is read as ever.
    let article = fetch(&d, site.url("article.html")).await.unwrap();
    assert!(!article.content.is_empty());
}
