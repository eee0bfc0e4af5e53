//! `cargo bench -p coved --bench security`: what the attacks of the November 2026 review
//! cost the daemon now, printed as JSON.
//!
//! - `image_bombs`: for each image, a fresh daemon prepares it (`see_image`) and reports its
//!   answer, its time and the daemon's peak resident memory (`VmHWM`): the review's tiny GIF
//!   of an 11000x11000 screen and 13000x13000 blank PNG (refused from their headers), a
//!   24-megapixel and a 40-megapixel image (prepared), and four 24-megapixel ones fetched at
//!   once (the review saw 700 MB for the GIF and 2.9 GB for four large PNGs)
//! - `idle_connections`: resident memory and open descriptors of a daemon before, while
//!   1,000 connections sit with half a request sent, and after the idle timeout closed them,
//!   with the time `/health` took while they were open

#![allow(clippy::unwrap_used, clippy::expect_used)] // a bench binary may panic on failure

use std::time::{Duration, Instant};

use cove_harness::images::gif_bomb;
use cove_harness::stats::{ms, round};
use cove_harness::{DaemonBuilder, DaemonProcess, FixtureSite, procs};
use cove_protocol::vision::SeeImageRequest;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

const BIN: &str = env!("CARGO_BIN_EXE_coved");

/// A blank PNG of `width` x `height` pixels.
fn blank_png(dir: &std::path::Path, width: u32, height: u32) -> Vec<u8> {
    let out = dir.join(format!("blank-{width}x{height}.png"));
    cove_harness::images::blank_png(&out, width, height).unwrap();
    std::fs::read(out).unwrap()
}

async fn daemon() -> DaemonProcess {
    DaemonBuilder::new(BIN)
        .env("COVED_LOG", "warn")
        .spawn()
        .await
        .unwrap()
}

/// One image through a fresh daemon: the answer, the time, the daemon's peak memory.
async fn one_bomb(name: &str, bytes: &[u8], copies: usize, site: &FixtureSite) -> Value {
    let d = daemon().await;
    d.client.info().await.unwrap();
    let before = procs::status_kib(d.pid(), "VmHWM").unwrap();
    site.put_file(name, "application/octet-stream", bytes.to_vec());
    let started = Instant::now();
    let mut calls = Vec::new();
    for i in 0..copies {
        let c = d.client.clone();
        let request = if copies == 1 {
            std::fs::write(d.path(name), bytes).unwrap();
            SeeImageRequest {
                path: Some(name.into()),
                url: None,
            }
        } else {
            SeeImageRequest {
                path: None,
                url: Some(format!("{}?{i}", site.url(&format!("files/{name}")))),
            }
        };
        calls.push(tokio::spawn(async move { c.see_image(&request).await }));
    }
    let mut answers = Vec::new();
    for call in calls {
        answers.push(match call.await.unwrap() {
            Ok(seen) => format!("prepared {}x{}", seen.width, seen.height),
            Err(e) => e.to_string().chars().take(90).collect(),
        });
    }
    let took = started.elapsed();
    let peak = procs::status_kib(d.pid(), "VmHWM").unwrap();
    json!({
        "image": name,
        "input_bytes": bytes.len(),
        "at_once": copies,
        "answer": answers[0],
        "ms": round(ms(took)),
        "peak_rss_mib_before": round(before as f64 / 1024.0),
        "peak_rss_mib": round(peak as f64 / 1024.0),
    })
}

async fn image_bombs() -> Value {
    let dir = tempfile::tempdir().unwrap();
    let site = FixtureSite::start().await.unwrap();
    let photo = blank_png(dir.path(), 6000, 4000);
    let cases: Vec<(&str, Vec<u8>, usize)> = vec![
        ("gif-11000x11000-screen.gif", gif_bomb(), 1),
        (
            "png-13000x13000.png",
            blank_png(dir.path(), 13000, 13000),
            1,
        ),
        ("png-6000x4000.png", photo.clone(), 1),
        ("png-8000x5000.png", blank_png(dir.path(), 8000, 5000), 1),
        ("png-6000x4000-x4.png", photo, 4),
    ];
    let mut out = Vec::new();
    for (name, bytes, copies) in cases {
        out.push(one_bomb(name, &bytes, copies, &site).await);
    }
    Value::Array(out)
}

fn open_fds(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

async fn idle_connections() -> Value {
    let d = DaemonBuilder::new(BIN)
        .env("COVED_LOG", "warn")
        .arg("--idle-timeout-secs")
        .arg("5")
        .spawn()
        .await
        .unwrap();
    d.client.info().await.unwrap();
    let addr = d.url.strip_prefix("http://").unwrap().to_string();
    let rss = |d: &DaemonProcess| procs::status_kib(d.pid(), "VmRSS").unwrap();
    let before = (rss(&d), open_fds(d.pid()));
    let mut sockets = Vec::new();
    for _ in 0..1000 {
        let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
        s.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        sockets.push(s);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let during = (rss(&d), open_fds(d.pid()));
    let http = reqwest::Client::new();
    let t = Instant::now();
    let health = http.get(format!("{}/health", d.url)).send().await;
    let health_ms = round(ms(t.elapsed()));
    let health_ok = matches!(health, Ok(r) if r.status() == 200);
    tokio::time::sleep(Duration::from_secs(7)).await;
    let after = (rss(&d), open_fds(d.pid()));
    drop(sockets);
    json!({
        "connections": 1000,
        "idle_timeout_secs": 5,
        "rss_mib_before": round(before.0 as f64 / 1024.0),
        "rss_mib_with_1000_idle": round(during.0 as f64 / 1024.0),
        "rss_mib_after_timeout": round(after.0 as f64 / 1024.0),
        "fds_before": before.1,
        "fds_with_1000_idle": during.1,
        "fds_after_timeout": after.1,
        "health_while_idle_ms": health_ms,
        "health_while_idle_ok": health_ok,
    })
}

#[tokio::main]
async fn main() {
    let report = json!({
        "bench": "coved-security",
        "version": env!("CARGO_PKG_VERSION"),
        "image_bombs": image_bombs().await,
        "idle_connections": idle_connections().await,
    });
    println!("{}", serde_json::to_string_pretty(&report).unwrap());
}
