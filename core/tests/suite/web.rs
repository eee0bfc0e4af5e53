//! The keyed search providers over real HTTP, each against a server speaking its documented
//! wire format: what Cove sends (key, query, count) and how each failure reads.

use axum::Router;
use axum::extract::{Json, Query};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use cove_core::web::search::{SearchError, SearchProvider};
use serde_json::{Value, json};
use std::collections::HashMap;

async fn serve(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    format!("http://{addr}")
}

fn env(pairs: Vec<(&'static str, String)>) -> impl Fn(&str) -> Option<String> {
    move |name| {
        pairs
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.clone())
    }
}

#[tokio::test]
async fn tavily_brave_and_searxng_are_asked_as_they_document_and_read() {
    let tavily = serve(Router::new().route(
        "/search",
        post(|headers: HeaderMap, Json(body): Json<Value>| async move {
            if headers["authorization"] != "Bearer tvly-good" {
                return (StatusCode::UNAUTHORIZED, Json(json!({"detail": {"error": "Unauthorized: missing or invalid API key."}}))).into_response();
            }
            assert_eq!(body["query"], "rust async");
            assert_eq!(body["max_results"], 2);
            Json(json!({"query": "rust async", "response_time": 0.5, "results": [
                {"title": "Async Book", "url": "https://rust-lang.github.io/async-book/", "content": "Asynchronous Programming in Rust", "score": 0.9},
                {"title": "Tokio", "url": "https://tokio.rs/", "content": "An asynchronous runtime", "score": 0.8},
                {"title": "Third", "url": "https://example.org/", "content": "cut by the count", "score": 0.1}
            ]})).into_response()
        }),
    ))
    .await;
    let brave = serve(Router::new().route(
        "/res/v1/web/search",
        get(|headers: HeaderMap, Query(q): Query<HashMap<String, String>>| async move {
            if q.get("q").map(String::as_str) == Some("busy") {
                return (StatusCode::TOO_MANY_REQUESTS, [("retry-after", "7")], "{}").into_response();
            }
            assert_eq!(headers["x-subscription-token"], "brave-key");
            assert_eq!(q["count"], "5");
            Json(json!({"type": "search", "web": {"type": "search", "results": [
                {"title": "<strong>Tokio</strong>", "url": "https://tokio.rs/", "description": "runtime"}
            ]}})).into_response()
        }),
    ))
    .await;
    let searx = serve(Router::new().route(
        "/search",
        get(|Query(q): Query<HashMap<String, String>>| async move {
            if q.get("format").map(String::as_str) != Some("json") {
                return (StatusCode::FORBIDDEN, "Forbidden").into_response();
            }
            Json(json!({"query": q["q"], "results": [
                {"url": "https://searx.example/a", "title": "A", "content": "first", "engine": "bing"}
            ], "answers": [], "unresponsive_engines": []})).into_response()
        }),
    ))
    .await;
    let http = reqwest::Client::new();

    let provider = SearchProvider::from_env(&env(vec![
        ("TAVILY_API_KEY", "tvly-good".into()),
        ("TAVILY_BASE_URL", tavily.clone()),
    ]))
    .unwrap();
    let hits = provider.search(&http, " rust async ", 2).await.unwrap();
    assert_eq!(hits.len(), 2);
    assert_eq!(hits[1].url, "https://tokio.rs/");
    let bad = SearchProvider::from_env(&env(vec![
        ("TAVILY_API_KEY", "tvly-bad".into()),
        ("TAVILY_BASE_URL", tavily),
    ]))
    .unwrap();
    let refused = bad.search(&http, "rust", 2).await.unwrap_err();
    assert!(matches!(
        refused,
        SearchError::Unauthorized { status: 401, .. }
    ));
    assert!(refused.to_string().contains("TAVILY_API_KEY"), "{refused}");
    assert!(matches!(
        bad.search(&http, "  ", 2).await,
        Err(SearchError::EmptyQuery)
    ));

    let provider = SearchProvider::from_env(&env(vec![
        ("BRAVE_API_KEY", "brave-key".into()),
        ("BRAVE_BASE_URL", brave),
    ]))
    .unwrap();
    let hits = provider.search(&http, "tokio", 5).await.unwrap();
    assert_eq!(hits[0].title, "Tokio");
    let busy = provider.search(&http, "busy", 5).await.unwrap_err();
    assert!(
        matches!(
            busy,
            SearchError::RateLimited {
                retry_after: Some(7),
                ..
            }
        ),
        "{busy}"
    );

    let provider =
        SearchProvider::from_env(&env(vec![("SEARXNG_URL", format!("{searx}/"))])).unwrap();
    let hits = provider.search(&http, "anything", 10).await.unwrap();
    assert_eq!(hits[0].snippet, "first");

    // An instance with JSON switched off answers 403 to format=json too.
    let closed = serve(Router::new().route(
        "/search",
        get(|| async { (StatusCode::FORBIDDEN, "Forbidden") }),
    ))
    .await;
    let provider = SearchProvider::from_env(&env(vec![("SEARXNG_URL", closed)])).unwrap();
    let off = provider.search(&http, "x", 3).await.unwrap_err();
    assert!(off.to_string().contains("settings.yml"), "{off}");

    let nowhere =
        SearchProvider::from_env(&env(vec![("SEARXNG_URL", "http://127.0.0.1:9".into())])).unwrap();
    assert!(matches!(
        nowhere.search(&http, "x", 3).await,
        Err(SearchError::Unreachable { .. })
    ));
}
