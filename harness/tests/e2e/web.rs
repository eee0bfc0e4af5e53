//! The web tools through the `cove` binary: a keyless search read by the sandbox's browser
//! from the fake engine, a page read with `web_fetch` (and Suna's `scrape_webpage`), a report
//! written from it; a keyed provider (Tavily's wire format) whose key never reaches the
//! sandbox; images made and edited through a scripted OpenAI images API.

use std::process::Output;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::post;
use base64::Engine;
use cove_harness::Turn;
use cove_harness::llm::Wire;
use cove_harness::web_site::WebSite;
use serde_json::{Value, json};

use super::{Cove, events, explain};

impl Cove {
    /// `cove run TASK` with extra environment, every call allowed, as JSON events.
    async fn run_with_env(&self, task: &str, mode: &str, env: &[(&str, String)]) -> Output {
        self.start_task_with(task, mode, &["--permissions", "yolo"], env)
            .await
    }
}

fn completed(out: &Output) -> String {
    let all = events(out);
    all.iter()
        .find(|e| e["type"] == "complete")
        .and_then(|e| e["text"].as_str())
        .unwrap_or_else(|| panic!("no complete: {}", explain(out)))
        .to_string()
}

/// A step that checks what the model was just told before going on (or ends the run
/// saying what was missing).
fn expect(
    wanted: &'static [&'static str],
    then: Turn,
) -> impl Fn(&cove_harness::llm::Received) -> Turn + Send + Sync + 'static {
    move |request| {
        let text = request.last_message_text();
        match wanted.iter().find(|w| !text.contains(*w)) {
            None => then.clone(),
            Some(missing) => Turn::text("").call(
                "complete",
                json!({"text": format!("MISSING {missing:?} in: {text}")}),
            ),
        }
    }
}

#[tokio::test]
async fn the_agent_searches_without_a_key_reads_a_page_and_writes_a_report() {
    let site = WebSite::start().await.unwrap();
    let article = site.url("article.html");
    for (wire, mode) in [(Wire::Anthropic, "native"), (Wire::OpenAi, "xml")] {
        let cove = Cove::new(wire).await;
        cove.share_port(site.port());
        cove.llm.push_fn(|request| {
            if !request.all_text().contains("## The web") {
                return Turn::text("").call("complete", json!({"text": "NO WEB GUIDANCE"}));
            }
            Turn::text("").call(
                "web_search",
                json!({"query": "tidal power Fundy", "num_results": 3}),
            )
        });
        let fetch = if mode == "xml" {
            // A Suna prompt's name and parameter.
            Turn::text("").call("scrape_webpage", json!({ "urls": article }))
        } else {
            Turn::text("").call("web_fetch", json!({ "url": article }))
        };
        cove.llm.push_fn(move |request| {
            let text = request.last_message_text();
            let wanted = [
                "from duckduckgo (keyless",
                "1. Tidal Power in the Bay of Fundy | Coastline Weekly",
                "https://en.wikipedia.org/wiki/Tidal_power",
            ];
            match wanted.iter().find(|w| !text.contains(*w)) {
                None => fetch.clone(),
                Some(missing) => Turn::text("").call(
                    "complete",
                    json!({"text": format!("MISSING {missing:?} in: {text}")}),
                ),
            }
        });
        cove.llm.push_fn(expect(
            &["the highest tides in the world", "Saved in full: .cove/web/", "| December |"],
            Turn::text("").call(
                "create_file",
                json!({"file_path": "report.md", "file_contents": format!("# Tidal power\n\nFundy's turbines made 4.2 GWh in a winter ({article}).\n")}),
            ),
        ));
        cove.llm.push_fn(expect(
            &["Created report.md"],
            Turn::text("").call("complete", json!({"text": "reported"})),
        ));
        let out = cove
            .run_with_env(
                "Research tidal power and write report.md",
                mode,
                &[("COVED_SEARCH_URL", site.search_url())],
            )
            .await;
        assert!(out.status.success(), "{}", explain(&out));
        assert_eq!(completed(&out), "reported", "{mode}: {}", explain(&out));
        let report = std::fs::read_to_string(cove.workspace.join("report.md")).unwrap();
        assert!(report.contains(&article));
        let saved: Vec<_> = std::fs::read_dir(cove.workspace.join(".cove/web"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(saved.len(), 1, "{saved:?}");
        assert!(
            std::fs::read_to_string(&saved[0])
                .unwrap()
                .contains("public hearings")
        );
        assert!(
            cove.llm.violations().is_empty(),
            "{:?}",
            cove.llm.violations()
        );
    }
}

/// A scripted Tavily: `POST /search` with the bearer key, answering in its documented shape.
async fn fake_tavily(seen: Arc<Mutex<Vec<Value>>>) -> String {
    let app = Router::new().route(
        "/search",
        post(move |headers: HeaderMap, body: Bytes| {
            let seen = seen.clone();
            async move {
                let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                seen.lock().unwrap().push(json!({
                    "auth": headers.get("authorization").and_then(|v| v.to_str().ok()),
                    "body": body,
                }));
                if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some("Bearer tvly-test") {
                    return (StatusCode::UNAUTHORIZED, "{\"detail\":{\"error\":\"Unauthorized: missing or invalid API key.\"}}").into_response();
                }
                axum::Json(json!({
                    "query": body["query"],
                    "results": [
                        {"title": "Tidal Lagoon Report", "url": "https://tidal.example/report", "content": "Lagoons store the tide behind a wall.", "score": 0.93},
                        {"title": "Fundy Force", "url": "https://fundyforce.example/", "content": "A test centre for tidal turbines.", "score": 0.81}
                    ],
                    "response_time": 0.4
                }))
                .into_response()
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}")
}

#[tokio::test]
async fn a_keyed_provider_answers_and_its_key_stays_out_of_the_sandbox() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let tavily = fake_tavily(seen.clone()).await;
    let cove = Cove::new(Wire::OpenAi).await;
    cove.llm.push(Turn::text("").call(
        "web_search",
        json!({"query": "tidal lagoons", "num_results": 2}),
    ));
    cove.llm.push_fn(expect(
        &["from Tavily", "1. Tidal Lagoon Report", "https://tidal.example/report", "Lagoons store the tide"],
        Turn::text("").call(
            "execute_command",
            json!({"command": "env | grep -c -E 'TAVILY_API_KEY|OPENAI_API_KEY|ANTHROPIC_API_KEY|tvly-test' || true"}),
        ),
    ));
    cove.llm.push_fn(|request| {
        let text = request.last_message_text();
        let verdict = if text.lines().any(|l| l.trim() == "0") {
            "clean"
        } else {
            "LEAKED"
        };
        Turn::text("").call("complete", json!({ "text": format!("{verdict}: {text}") }))
    });
    let out = cove
        .run_with_env(
            "Search",
            "native",
            &[
                ("TAVILY_API_KEY", "tvly-test".into()),
                ("TAVILY_BASE_URL", tavily.clone()),
            ],
        )
        .await;
    assert!(out.status.success(), "{}", explain(&out));
    assert!(completed(&out).starts_with("clean"), "{}", explain(&out));
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0]["auth"], "Bearer tvly-test");
    assert_eq!(seen[0]["body"]["query"], "tidal lagoons");
    assert_eq!(seen[0]["body"]["max_results"], 2);

    // A bad key is a tool error naming the variable to fix; the run goes on.
    let cove = Cove::new(Wire::OpenAi).await;
    cove.llm
        .push(Turn::text("").call("web_search", json!({"query": "x"})));
    cove.llm.push_fn(|request| {
        Turn::text("").call("complete", json!({ "text": request.last_message_text() }))
    });
    let out = cove
        .run_with_env(
            "Search",
            "native",
            &[
                ("TAVILY_API_KEY", "wrong".into()),
                ("TAVILY_BASE_URL", tavily),
            ],
        )
        .await;
    let said = completed(&out);
    assert!(
        said.contains("refused the key (401)") && said.contains("TAVILY_API_KEY"),
        "{said}"
    );
}

/// A scripted OpenAI images API: generations answer `first`, edits answer `second`; a
/// prompt with "refuse" is refused as OpenAI's safety system does.
async fn fake_images(first: Vec<u8>, second: Vec<u8>, seen: Arc<Mutex<Vec<Value>>>) -> String {
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let (one, two) = (b64(&first), b64(&second));
    let seen_gen = seen.clone();
    let app = Router::new()
        .route(
            "/v1/images/generations",
            post(move |headers: HeaderMap, body: Bytes| {
                let seen = seen_gen.clone();
                let one = one.clone();
                async move {
                    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    seen.lock().unwrap().push(json!({
                        "route": "generations",
                        "auth": headers.get("authorization").and_then(|v| v.to_str().ok()),
                        "body": body,
                    }));
                    if body["prompt"].as_str().unwrap_or("").contains("busy") {
                        return (
                            StatusCode::TOO_MANY_REQUESTS,
                            [("retry-after", "7")],
                            axum::Json(json!({"error": {"message": "Rate limit reached for images per minute.", "type": "requests"}})),
                        )
                            .into_response();
                    }
                    if body["prompt"].as_str().unwrap_or("").contains("refuse") {
                        return (
                            StatusCode::BAD_REQUEST,
                            axum::Json(json!({"error": {"message": "Your request was rejected as a result of our safety system.", "type": "image_generation_user_error", "code": "moderation_blocked"}})),
                        )
                            .into_response();
                    }
                    axum::Json(json!({"created": 1, "data": [{"b64_json": one}], "usage": {"total_tokens": 100}})).into_response()
                }
            }),
        )
        .route(
            "/v1/images/edits",
            post(move |headers: HeaderMap, body: Bytes| {
                let seen = seen.clone();
                let two = two.clone();
                async move {
                    seen.lock().unwrap().push(json!({
                        "route": "edits",
                        "content_type": headers.get("content-type").and_then(|v| v.to_str().ok()),
                        "has_first_image": body.windows(first.len()).any(|w| w == first.as_slice()),
                        "prompt_part": String::from_utf8_lossy(&body).contains("name=\"prompt\"\r\n\r\nmake it night"),
                        "model_part": String::from_utf8_lossy(&body).contains("name=\"model\"\r\n\r\ngpt-image-1"),
                    }));
                    axum::Json(json!({"created": 2, "data": [{"b64_json": two}]}))
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}/v1")
}

#[tokio::test]
async fn images_are_made_and_edited_through_an_openai_images_api() {
    let dir = tempfile::tempdir().unwrap();
    cove_harness::images::blank_png(&dir.path().join("a.png"), 40, 30).unwrap();
    cove_harness::images::blank_png(&dir.path().join("b.png"), 20, 10).unwrap();
    let first = std::fs::read(dir.path().join("a.png")).unwrap();
    let second = std::fs::read(dir.path().join("b.png")).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let api = fake_images(first.clone(), second.clone(), seen.clone()).await;
    let cove = Cove::new(Wire::OpenAi).await;
    cove.llm.push_fn(|request| {
        let offered = request.body["tools"].to_string();
        if !offered.contains("generate_image") || !request.all_text().contains("## Images") {
            return Turn::text("").call("complete", json!({"text": "NOT OFFERED"}));
        }
        Turn::text("").call(
            "generate_image",
            json!({"prompt": "A lighthouse at dusk", "size": "1024x1024"}),
        )
    });
    cove.llm.push_fn(|request| {
        let text = request.all_text();
        if !text.contains("Made images/a-lighthouse-at-dusk.png (") || request.image_count() != 1 {
            return Turn::text("").call(
                "complete",
                json!({"text": format!("NOT SHOWN ({} images): {text}", request.image_count())}),
            );
        }
        Turn::text("").call(
            "edit_image",
            json!({"path": "images/a-lighthouse-at-dusk.png", "prompt": "make it night"}),
        )
    });
    cove.llm.push_fn(|request| {
        let text = request.all_text();
        if !text.contains(
            "Edited images/a-lighthouse-at-dusk.png into images/a-lighthouse-at-dusk-edited.png",
        ) {
            return Turn::text("").call(
                "complete",
                json!({"text": format!("NOT EDITED: {}", request.last_message_text())}),
            );
        }
        Turn::text("").call(
            "generate_image",
            json!({"prompt": "busy now", "path": "busy.png"}),
        )
    });
    cove.llm.push_fn(expect(
        &["rate limiting (retry after 7 s)"],
        Turn::text("").call(
            "generate_image",
            json!({"prompt": "refuse this one", "path": "refused.png"}),
        ),
    ));
    cove.llm.push_fn(|request| {
        Turn::text("").call("complete", json!({ "text": request.last_message_text() }))
    });
    let out = cove
        .run_with_env(
            "Draw",
            "native",
            &[
                ("COVE_IMAGES_API_KEY", "img-key".into()),
                ("COVE_IMAGES_BASE_URL", api),
            ],
        )
        .await;
    assert!(out.status.success(), "{}", explain(&out));
    let said = completed(&out);
    assert!(
        said.contains("safety system") && said.contains("(400)"),
        "{said}\n{}",
        explain(&out)
    );
    let images = cove.workspace.join("images");
    assert_eq!(
        std::fs::read(images.join("a-lighthouse-at-dusk.png")).unwrap(),
        first
    );
    assert_eq!(
        std::fs::read(images.join("a-lighthouse-at-dusk-edited.png")).unwrap(),
        second
    );
    assert!(!cove.workspace.join("refused.png").exists());
    assert!(!cove.workspace.join("busy.png").exists());
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert_eq!(seen[0]["auth"], "Bearer img-key");
    assert_eq!(seen[0]["body"]["model"], "gpt-image-1");
    assert_eq!(seen[0]["body"]["size"], "1024x1024");
    assert!(
        seen[0]["body"].get("response_format").is_none(),
        "gpt-image-1 refuses it"
    );
    assert!(
        seen[1]["content_type"]
            .as_str()
            .unwrap()
            .starts_with("multipart/form-data")
    );
    assert_eq!(seen[1]["has_first_image"], true);
    assert_eq!(seen[1]["prompt_part"], true);
    assert_eq!(seen[1]["model_part"], true);
}
