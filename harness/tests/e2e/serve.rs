//! `cove serve` over real HTTP with the scripted model: threads created, their events
//! streamed as SSE and resumed with `Last-Event-ID` (no gap, no duplicate), questions,
//! permission requests and plans answered through the API, the server restarted mid-run,
//! and the guards (token, login link, cookie, other origins).

use std::time::Duration;

use cove_harness::Turn;
use cove_harness::llm::Wire;
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::Cove;

/// A running `cove serve`.
pub(super) struct Server {
    child: tokio::process::Child,
    pub(super) base: String,
    pub(super) token: String,
    pub(super) login: String,
    http: reqwest::Client,
}

impl Server {
    pub(super) async fn start(cove: &Cove, extra: &[&str]) -> Server {
        let ws = cove.workspace.to_str().unwrap().to_string();
        let mut args = vec![
            "--json",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--workspace",
            &ws,
        ];
        args.extend_from_slice(extra);
        let mut child = cove.command(&args).spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let first = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .expect("cove serve printed its address")
            .unwrap()
            .expect("a first line");
        let hello: Value = serde_json::from_str(&first).unwrap();
        Server {
            child,
            base: hello["listening"].as_str().unwrap().to_string(),
            token: hello["token"].as_str().unwrap().to_string(),
            login: hello["login_url"].as_str().unwrap().to_string(),
            http: reqwest::Client::new(),
        }
    }

    pub(super) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub(super) async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let response = self
            .http
            .post(self.url(path))
            .bearer_auth(&self.token)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    pub(super) async fn get(&self, path: &str) -> (u16, Value) {
        let response = self
            .http
            .get(self.url(path))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    pub(super) async fn create(&self, body: Value) -> String {
        let (status, thread) = self.post("/v1/threads", body).await;
        assert_eq!(status, 201, "{thread}");
        thread["id"].as_str().unwrap().to_string()
    }

    /// Opens the thread's event stream after event `after`.
    pub(super) async fn stream(&self, thread: &str, after: Option<u64>) -> Sse {
        let mut request = self
            .http
            .get(self.url(&format!("/v1/threads/{thread}/events")))
            .bearer_auth(&self.token);
        if let Some(after) = after {
            request = request.header("Last-Event-ID", after.to_string());
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 200);
        assert!(
            response.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/event-stream")
        );
        Sse {
            body: Box::pin(response.bytes_stream()),
            buffer: String::new(),
        }
    }

    pub(super) async fn kill(mut self) {
        let _ = self.child.kill().await;
    }
}

/// One event of a stream: its id and its JSON.
pub(super) type Frame = (u64, Value);

pub(super) struct Sse {
    body: std::pin::Pin<
        Box<dyn futures_util::Stream<Item = reqwest::Result<axum::body::Bytes>> + Send>,
    >,
    buffer: String,
}

impl Sse {
    /// The next event (keep-alive comments skipped), within 60 s.
    pub(super) async fn next(&mut self) -> Frame {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let frame: String = self.buffer.drain(..end + 2).collect();
                let mut id = None;
                let mut data = String::new();
                for line in frame.lines() {
                    if let Some(v) = line.strip_prefix("id:") {
                        id = Some(v.trim().parse::<u64>().unwrap());
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.trim_start());
                    }
                }
                if let Some(id) = id {
                    return (id, serde_json::from_str(&data).unwrap());
                }
                continue;
            }
            let chunk = tokio::time::timeout(Duration::from_secs(60), self.body.next())
                .await
                .expect("an event within 60 s")
                .expect("the stream is open")
                .unwrap();
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// Events up to and including the first of type `kind`.
    pub(super) async fn until(&mut self, kind: &str) -> Vec<Frame> {
        let mut frames = Vec::new();
        loop {
            let frame = self.next().await;
            let done = frame.1["type"] == kind;
            frames.push(frame);
            if done {
                return frames;
            }
        }
    }
}

fn kinds(frames: &[Frame]) -> Vec<String> {
    frames
        .iter()
        .map(|(_, e)| e["type"].as_str().unwrap().to_string())
        .filter(|t| t != "assistant_text")
        .collect()
}

#[tokio::test]
async fn a_thread_is_created_streamed_asked_answered_and_resumed_without_gaps() {
    let cove = Cove::new(Wire::OpenAi).await;
    cove.llm
        .push(Turn::text("Let me ask.").call("ask", json!({"text": "Which colour?"})));
    cove.llm.push_fn(|request| {
        let said = request.last_message_text();
        let verdict = if said.contains("blue") {
            "painted blue"
        } else {
            "NO ANSWER"
        };
        Turn::text("Painting.").call("complete", json!({ "text": verdict }))
    });
    let server = Server::start(&cove, &[]).await;
    let thread = server
        .create(json!({"task": "Paint the fence", "model": "openai/scripted"}))
        .await;
    let mut sse = server.stream(&thread, None).await;
    let first = sse.until("thread_run_end").await;
    assert!(
        kinds(&first).contains(&"ask".to_string()),
        "{:?}",
        kinds(&first)
    );
    // Numbered through the thread from 1, without gaps; the JSON carries the same number.
    for (i, (id, event)) in first.iter().enumerate() {
        assert_eq!(*id, i as u64 + 1);
        assert_eq!(event["seq"], *id);
        assert_eq!(event["thread_id"], thread);
    }
    let (_, view) = server.get(&format!("/v1/threads/{thread}")).await;
    assert_eq!(view["running"], false, "{view}");
    assert_eq!(view["waiting"][0]["kind"], "ask", "{view}");

    // The answer starts the next run; the same stream goes on.
    let (status, said) = server
        .post(
            &format!("/v1/threads/{thread}/reply"),
            json!({"text": "blue"}),
        )
        .await;
    assert_eq!(status, 202, "{said}");
    let second = sse.until("thread_run_end").await;
    let complete = second
        .iter()
        .find(|(_, e)| e["type"] == "complete")
        .unwrap();
    assert_eq!(complete.1["text"], "painted blue");
    let last = second.last().unwrap().0;
    assert_eq!(second[0].0, first.last().unwrap().0 + 1);

    // A client that dropped after event k reconnects with Last-Event-ID: k and gets
    // exactly k+1..last; one starting over gets them all, the same.
    let all: Vec<Frame> = first.iter().chain(second.iter()).cloned().collect();
    for k in [0, 1, 3, last - 1] {
        let mut again = server.stream(&thread, Some(k)).await;
        let mut got = Vec::new();
        while got.len() < (last - k) as usize {
            got.push(again.next().await);
        }
        assert_eq!(got, all[k as usize..].to_vec(), "after {k}");
    }
    let (_, messages) = server.get(&format!("/v1/threads/{thread}/messages")).await;
    assert!(messages["messages"].to_string().contains("blue"));
    // The second request to the model saw the answer (the scripted step checked it).
    assert!(
        cove.llm.violations().is_empty(),
        "{:?}",
        cove.llm.violations()
    );
    server.kill().await;
}

#[tokio::test]
async fn permissions_and_plans_are_answered_through_the_api_once() {
    let cove = Cove::new(Wire::Anthropic).await;
    let marker = cove.workspace.join("allowed.txt");
    cove.llm.push(Turn::text("").call(
        "execute_command",
        json!({"command": format!("rm -rf /tmp/cove-serve-test-nothing && echo ok > {}", marker.display())}),
    ));
    cove.llm
        .push(Turn::text("").call("complete", json!({"text": "ran"})));
    let server = Server::start(&cove, &["--permissions", "ask"]).await;
    let thread = server
        .create(json!({"task": "Clean", "model": "anthropic/scripted"}))
        .await;
    let mut sse = server.stream(&thread, None).await;
    let asked = sse.until("permission_request").await.pop().unwrap().1;
    let request = asked["request_id"].as_str().unwrap().to_string();
    // The run waits on a person for a permission, not for a reply.
    let (status, said) = server
        .post(
            &format!("/v1/threads/{thread}/reply"),
            json!({"text": "hello?"}),
        )
        .await;
    assert_eq!(status, 409, "{said}");
    assert_eq!(said["error"]["code"], "not_waiting");
    let path = format!("/v1/threads/{thread}/permissions/{request}");
    let (status, said) = server.post(&path, json!({"decision": "maybe"})).await;
    assert_eq!(status, 400, "{said}");
    let (status, said) = server.post(&path, json!({"decision": "allow_once"})).await;
    assert_eq!(status, 200, "{said}");
    // A second tab answering the same request is told it was answered already.
    let (status, said) = server.post(&path, json!({"decision": "deny"})).await;
    assert_eq!(status, 409, "{said}");
    assert_eq!(said["error"]["code"], "already_answered");
    let rest = sse.until("thread_run_end").await;
    assert!(
        kinds(&rest).contains(&"permission_decided".to_string()),
        "{:?}",
        kinds(&rest)
    );
    assert_eq!(
        rest.iter()
            .find(|(_, e)| e["type"] == "complete")
            .unwrap()
            .1["text"],
        "ran"
    );
    assert!(marker.exists());

    // A plan: proposed, approved through the API, carried out.
    cove.llm.push(Turn::text("").call(
        "create_plan",
        json!({"goal": "Greet", "steps": [{"id": "1", "description": "Write hello.txt"}]}),
    ));
    cove.llm.push_fn(|request| {
        if !request
            .last_message_text()
            .contains("I approve the plan (version 1)")
        {
            return Turn::text("").call("complete", json!({"text": "NOT APPROVED"}));
        }
        Turn::text("").call("complete", json!({"text": "greeted"}))
    });
    let planned = server
        .create(json!({"task": "Greet", "model": "anthropic/scripted", "plan": true}))
        .await;
    let mut sse = server.stream(&planned, None).await;
    sse.until("plan_proposed").await;
    sse.until("thread_run_end").await;
    let (status, said) = server
        .post(
            &format!("/v1/threads/{planned}/reply"),
            json!({"text": "go"}),
        )
        .await;
    assert_eq!(status, 409, "a reply does not approve a plan: {said}");
    let (status, said) = server
        .post(&format!("/v1/threads/{planned}/approve"), json!({}))
        .await;
    assert_eq!(status, 202, "{said}");
    let (status, _) = server
        .post(&format!("/v1/threads/{planned}/approve"), json!({}))
        .await;
    assert_eq!(status, 409, "approved once");
    let done = sse.until("thread_run_end").await;
    assert_eq!(
        done.iter()
            .find(|(_, e)| e["type"] == "complete")
            .unwrap()
            .1["text"],
        "greeted"
    );
    server.kill().await;
}

#[tokio::test]
async fn a_restarted_server_marks_the_run_interrupted_and_resumes_it_on_request() {
    let cove = Cove::new(Wire::OpenAi).await;
    cove.llm.push(Turn::text("").call(
        "execute_command",
        json!({"command": "sleep 30", "timeout": 60}),
    ));
    let server = Server::start(&cove, &[]).await;
    let thread = server
        .create(json!({"task": "Wait", "model": "openai/scripted"}))
        .await;
    let mut sse = server.stream(&thread, None).await;
    let before = sse.until("tool_started").await;
    let seen = before.last().unwrap().0;
    server.kill().await;

    cove.llm.push_fn(|request| {
        let text = request.all_text();
        let verdict = if text.contains("interrupted") {
            "resumed"
        } else {
            "NOT TOLD"
        };
        Turn::text("").call("complete", json!({ "text": verdict }))
    });
    let server = Server::start(&cove, &[]).await;
    let (_, view) = server.get(&format!("/v1/threads/{thread}")).await;
    assert_eq!(view["running"], false, "{view}");
    let mut sse = server.stream(&thread, Some(seen)).await;
    let told = sse.until("error").await;
    assert!(
        told.last().unwrap().1["message"]
            .as_str()
            .unwrap()
            .contains("interrupted: the server stopped"),
        "{told:?}"
    );
    let (status, said) = server
        .post(&format!("/v1/threads/{thread}/resume"), json!({}))
        .await;
    assert_eq!(status, 202, "{said}");
    let rest = sse.until("thread_run_end").await;
    assert_eq!(
        rest.iter()
            .find(|(_, e)| e["type"] == "complete")
            .unwrap()
            .1["text"],
        "resumed"
    );
    // Numbers went on from where the first server left off.
    assert!(told[0].0 > seen);
    server.kill().await;
}

#[tokio::test]
async fn the_api_needs_the_token_or_the_login_cookie_and_refuses_other_origins() {
    let cove = Cove::new(Wire::OpenAi).await;
    let server = Server::start(&cove, &[]).await;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let threads = server.url("/v1/threads");
    let bare = http.get(&threads).send().await.unwrap();
    assert_eq!(bare.status(), 401);
    let said: Value = bare.json().await.unwrap();
    assert!(
        said["error"]["message"]
            .as_str()
            .unwrap()
            .contains("login link"),
        "{said}"
    );
    let wrong = http
        .get(&threads)
        .bearer_auth("x".repeat(64))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let right = http
        .get(&threads)
        .bearer_auth(&server.token)
        .send()
        .await
        .unwrap();
    assert_eq!(right.status(), 200);

    // The login link: once, for an HttpOnly SameSite=Strict cookie.
    let login = http.get(&server.login).send().await.unwrap();
    assert_eq!(login.status(), 303);
    let cookie = login.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let session = cookie.split(';').next().unwrap().to_string();
    let again = http.get(&server.login).send().await.unwrap();
    assert_eq!(again.status(), 401, "a login link works once");
    let with_cookie = http
        .get(&threads)
        .header("cookie", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(with_cookie.status(), 200);

    // Another site's page cannot act with the person's cookie (nor with the token).
    let forged = http
        .post(&threads)
        .header("cookie", &session)
        .header("origin", "http://evil.example")
        .json(&json!({"task": "exfiltrate"}))
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 403);
    let (_, listed) = server.get("/v1/threads").await;
    assert_eq!(
        listed["threads"].as_array().unwrap().len(),
        0,
        "nothing was created"
    );
    let own = http
        .get(&threads)
        .header("cookie", &session)
        .header("origin", &server.base)
        .send()
        .await
        .unwrap();
    assert_eq!(own.status(), 200);

    // Bad input.
    let (status, said) = server.get("/v1/threads/nope").await;
    assert_eq!(status, 404, "{said}");
    let (status, said) = server.post("/v1/threads", json!({"task": "  "})).await;
    assert_eq!(status, 400, "{said}");
    server.kill().await;
}
