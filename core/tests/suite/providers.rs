//! Both providers against the scripted model over real HTTP, chunked awkwardly.

use std::time::Duration;

use cove_core::llm::anthropic::Anthropic;
use cove_core::llm::openai::OpenAi;
use cove_core::llm::{
    ChatMessage, ChatProvider, ChatRequest, ContentPart, LlmError, StopReason, StreamEvent,
    ToolSpec,
};
use cove_harness::{Fault, ScriptedLlm, Turn};
use futures_util::StreamExt;
use serde_json::json;

fn providers(llm: &ScriptedLlm) -> Vec<Box<dyn ChatProvider>> {
    let http = reqwest::Client::new();
    vec![
        Box::new(OpenAi::new(
            http.clone(),
            &llm.openai_base_url(),
            Some("k".into()),
            "openai",
        )),
        Box::new(Anthropic::new(http, &llm.anthropic_base_url(), "k".into())),
    ]
}

fn request(tools: bool) -> ChatRequest {
    ChatRequest {
        model: "scripted".into(),
        system: "You are scripted.".into(),
        messages: vec![ChatMessage {
            content: vec![
                ContentPart::Text {
                    text: "What is in this picture?".into(),
                },
                ContentPart::Image {
                    mime: "image/png".into(),
                    data: "iVBORw0KGgo=".into(),
                },
            ],
            ..ChatMessage::user("")
        }],
        tools: if tools {
            vec![ToolSpec {
                name: "create_file".into(),
                description: "Create a file".into(),
                parameters: json!({"type": "object", "properties": {"file_path": {"type": "string"}}}),
            }]
        } else {
            Vec::new()
        },
        stable_messages: usize::MAX,
        cache_key: None,
        max_tokens: 256,
    }
}

/// The text, the calls (name, arguments) and the finish of a whole answer.
async fn collect(
    provider: &dyn ChatProvider,
    request: &ChatRequest,
) -> Result<(String, Vec<(String, serde_json::Value)>, StopReason), LlmError> {
    let mut stream = provider.stream(request).await?;
    let mut text = String::new();
    let mut calls: Vec<(String, String)> = Vec::new();
    let mut finish = None;
    while let Some(event) = stream.next().await {
        match event? {
            StreamEvent::TextDelta(t) => text.push_str(&t),
            StreamEvent::ToolCallStart { index, name, .. } => {
                assert_eq!(index, calls.len());
                calls.push((name, String::new()));
            }
            StreamEvent::ToolCallDelta { index, arguments } => calls[index].1.push_str(&arguments),
            StreamEvent::ToolCallEnd { .. } | StreamEvent::Usage(_) => {}
            StreamEvent::Finish(reason) => finish = Some(reason),
        }
    }
    let calls = calls
        .into_iter()
        .map(|(n, a)| (n, serde_json::from_str(&a).unwrap()))
        .collect();
    Ok((text, calls, finish.expect("every complete stream finishes")))
}

#[tokio::test]
async fn text_and_native_tool_calls_survive_awkward_chunking() {
    let llm = ScriptedLlm::start().await.unwrap();
    let html = "<!doctype html>\n<p>Ünïcødé & \"quotes\" — 😀</p>\n";
    for provider in providers(&llm) {
        llm.push(Turn::text("Writing the page… ").call(
            "create_file",
            json!({"file_path": "index.html", "file_contents": html}),
        ));
        let (text, calls, finish) = collect(provider.as_ref(), &request(true)).await.unwrap();
        assert_eq!(text, "Writing the page… ", "{}", provider.name());
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].0, "create_file");
        assert_eq!(calls[0].1["file_contents"], html);
        assert_eq!(finish, StopReason::ToolCalls);
    }
    let received = llm.received();
    assert_eq!(received.len(), 2);
    for r in &received {
        assert_eq!(r.image_count(), 1, "the image went over the wire");
        assert!(r.native_tools());
    }
    assert_eq!(received[1].headers["anthropic-version"], "2023-06-01");
    assert_eq!(received[1].headers["x-api-key"], "k");
    assert_eq!(received[0].headers["authorization"], "Bearer k");
}

#[tokio::test]
async fn without_native_tools_calls_arrive_as_xml_text() {
    let llm = ScriptedLlm::start().await.unwrap();
    for provider in providers(&llm) {
        llm.push(Turn::text("ok").call("create_file", json!({"file_path": "a.txt"})));
        let (text, calls, finish) = collect(provider.as_ref(), &request(false)).await.unwrap();
        assert!(calls.is_empty());
        assert!(text.contains("<invoke name=\"create_file\">"), "{text}");
        assert!(text.contains("<parameter name=\"file_path\">a.txt</parameter>"));
        assert_eq!(finish, StopReason::Stop);
    }
}

#[tokio::test]
async fn lengths_rate_limits_and_cut_streams_are_reported() {
    let llm = ScriptedLlm::start().await.unwrap();
    for provider in providers(&llm) {
        llm.push(Turn::text("half of it").finish("length"));
        let (_, _, finish) = collect(provider.as_ref(), &request(false)).await.unwrap();
        assert_eq!(finish, StopReason::Length, "{}", provider.name());

        llm.push(Turn::text("later").failing(Fault::RateLimited {
            retry_after_secs: 2,
        }));
        let err = collect(provider.as_ref(), &request(false))
            .await
            .unwrap_err();
        assert!(err.is_retryable(), "{err}");
        assert_eq!(err.retry_after(), Some(Duration::from_secs(2)));
        let (text, _, _) = collect(provider.as_ref(), &request(false)).await.unwrap();
        assert_eq!(text, "later", "the step is served once the fault passed");

        llm.push(Turn::text("whole answer").failing(Fault::CutAfter(120)));
        let err = collect(provider.as_ref(), &request(false))
            .await
            .unwrap_err();
        assert!(err.is_retryable(), "{}: {err}", provider.name());
        let (text, _, _) = collect(provider.as_ref(), &request(false)).await.unwrap();
        assert_eq!(text, "whole answer");

        llm.push(Turn::text("x").failing(Fault::ServerError));
        let err = collect(provider.as_ref(), &request(false))
            .await
            .unwrap_err();
        assert!(err.is_retryable());
        collect(provider.as_ref(), &request(false)).await.unwrap();
    }
}

#[tokio::test]
async fn unreachable_servers_are_transport_errors() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let p = OpenAi::new(
        reqwest::Client::new(),
        &format!("http://{closed}/v1"),
        None,
        "openai",
    );
    let err = match p.stream(&request(false)).await {
        Err(e) => e,
        Ok(_) => panic!("nothing listens there"),
    };
    assert!(matches!(err, LlmError::Transport { .. }), "{err}");
    assert!(err.is_retryable());
}
