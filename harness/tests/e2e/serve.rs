//! `cove serve` over real HTTP with the scripted model: threads created, their events
//! streamed as SSE and resumed with `Last-Event-ID` (no gap, no duplicate), questions,
//! permission requests and plans answered through the API, the server restarted mid-run.
//! Its guards are in `serve_guards.rs`.

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
        let mut args = vec!["--workspace", ws.as_str()];
        args.extend_from_slice(extra);
        Server::start_with(cove, &args).await
    }

    /// A server whose threads each get a workspace of their own.
    pub(super) async fn start_with(cove: &Cove, extra: &[&str]) -> Server {
        let mut args = vec!["--json", "serve", "--listen", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        Server::from_child(cove.command(&args).spawn().unwrap()).await
    }

    /// A server already spawned (stdout piped), once it says where it listens.
    pub(super) async fn from_child(mut child: tokio::process::Child) -> Server {
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
            token: hello["token"].as_str().unwrap_or_default().to_string(),
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
    // Killed during the command: once the answer that started it is stored (a call starts
    // while its answer still streams, and a call never stored cannot be told of).
    for _ in 0..200 {
        let (_, messages) = server.get(&format!("/v1/threads/{thread}/messages")).await;
        let stored = messages["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["kind"] == "assistant" && m.to_string().contains("sleep 30"));
        if stored {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
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

impl Server {
    /// A raw request with the token.
    pub(super) async fn raw(&self, method: reqwest::Method, path: &str) -> reqwest::Response {
        self.http
            .request(method, self.url(path))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap()
    }

    /// `POST /v1/uploads?name=NAME` with `body`.
    pub(super) async fn upload(&self, name: &str, body: &'static [u8]) -> (u16, Value) {
        let response = self
            .http
            .post(self.url("/v1/uploads"))
            .query(&[("name", name)])
            .bearer_auth(&self.token)
            .body(body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }
}

#[tokio::test]
async fn a_question_is_answered_once_and_the_api_is_described_by_a_valid_openapi_document() {
    let cove = Cove::new(Wire::OpenAi).await;
    cove.llm
        .push(Turn::text("").call("ask", json!({"text": "Which one?"})));
    cove.llm.push(Turn::text("").call(
        "execute_command",
        json!({"command": "sleep 2", "timeout": 30}),
    ));
    cove.llm
        .push(Turn::text("").call("complete", json!({"text": "ok"})));
    let server = Server::start(&cove, &[]).await;
    let thread = server
        .create(json!({"task": "Pick", "model": "openai/scripted"}))
        .await;
    let mut sse = server.stream(&thread, None).await;
    sse.until("thread_run_end").await;
    let (_, view) = server.get(&format!("/v1/threads/{thread}")).await;
    let question = view["waiting"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(view["waiting"][0]["kind"], "ask");
    let reply = json!({"text": "the first", "answers": question});
    let (status, said) = server
        .post(&format!("/v1/threads/{thread}/reply"), reply.clone())
        .await;
    assert_eq!(status, 202, "{said}");
    // The second tab's answer to the same question: refused, no second run.
    let (status, said) = server
        .post(&format!("/v1/threads/{thread}/reply"), reply.clone())
        .await;
    assert_eq!(status, 409, "{said}");
    assert_eq!(said["error"]["code"], "already_answered");
    sse.until("thread_run_end").await;
    let (status, said) = server
        .post(&format!("/v1/threads/{thread}/reply"), reply)
        .await;
    assert_eq!(status, 409, "after the run too: {said}");
    // A body that does not fit is said in the API's envelope.
    let (status, said) = server
        .post(&format!("/v1/threads/{thread}/reply"), json!({"txt": "x"}))
        .await;
    assert_eq!(status, 400);
    assert_eq!(said["error"]["code"], "invalid_request", "{said}");

    let (status, doc) = server.get("/v1/openapi.json").await;
    assert_eq!(status, 200);
    for path in [
        "/v1/threads",
        "/v1/threads/{id}/events",
        "/v1/threads/{id}/files/content",
        "/v1/uploads",
    ] {
        assert!(doc["paths"][path].is_object(), "{path}");
    }
    // Checked by a validator no one here wrote (openapi-spec-validator, from PyPI).
    cove_harness::openapi::validate(&doc).unwrap();
    server.kill().await;
}

#[tokio::test]
async fn runs_work_at_once_in_their_own_sandboxes_while_a_client_reads_nothing() {
    let cove = Cove::new(Wire::OpenAi).await;
    // Each thread writes its own name; the first also answers with thousands of events,
    // more than a client that reads nothing can be sent ahead.
    for _ in 0..6 {
        cove.llm.push_fn(|request| {
            let text = request.all_text();
            let name = ["first", "second", "third"]
                .into_iter()
                .find(|n| text.contains(&format!("Write {n}")))
                .unwrap_or("NONE");
            let answered = request.body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["role"] == "assistant");
            if answered {
                return Turn::text("").call("complete", json!({"text": "written"}));
            }
            let said = if name == "first" {
                "All work and no play makes a long answer. ".repeat(5_000)
            } else {
                String::new()
            };
            Turn::text(said).call(
                "create_file",
                json!({"file_path": "mine.txt", "file_contents": name}),
            )
        });
    }
    let server = Server::start_with(&cove, &[]).await;
    let first = server
        .create(json!({"task": "Write first", "model": "openai/scripted"}))
        .await;
    // A client that connects and never reads.
    let stalled = server
        .raw(reqwest::Method::GET, &format!("/v1/threads/{first}/events"))
        .await;
    let second = server
        .create(json!({"task": "Write second", "model": "openai/scripted"}))
        .await;
    let third = server
        .create(json!({"task": "Write third", "model": "openai/scripted"}))
        .await;
    let mut written = Vec::new();
    for thread in [&first, &second, &third] {
        let mut sse = server.stream(thread, None).await;
        let events = sse.until("thread_run_end").await;
        assert_eq!(events.last().unwrap().1["status"], "completed");
        let (_, view) = server.get(&format!("/v1/threads/{thread}")).await;
        let workspace = view["sandbox"]
            .as_str()
            .unwrap()
            .strip_prefix("local:")
            .unwrap()
            .to_string();
        assert!(workspace.ends_with(thread.as_str()), "{workspace}");
        written.push(std::fs::read_to_string(format!("{workspace}/mine.txt")).unwrap());
    }
    written.sort();
    assert_eq!(
        written,
        ["first", "second", "third"],
        "each in its own workspace"
    );
    let (_, view) = server.get(&format!("/v1/threads/{first}")).await;
    assert!(view["last_event"].as_u64().unwrap() > 20_000, "{view}");
    drop(stalled);
    server.kill().await;
}

#[tokio::test]
async fn ctrl_c_stops_the_server_while_pages_watch_and_a_run_works() {
    let cove = Cove::new(Wire::OpenAi).await;
    cove.llm.push(Turn::text("").call(
        "execute_command",
        json!({"command": "sleep 30", "timeout": 60}),
    ));
    let mut server = Server::start(&cove, &[]).await;
    let thread = server
        .create(json!({"task": "Wait", "model": "openai/scripted"}))
        .await;
    let mut watching = server.stream(&thread, None).await;
    watching.until("tool_started").await;
    let _idle = server.stream(&thread, None).await;
    let pid = rustix::process::Pid::from_raw(server.child.id().unwrap() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let status = tokio::time::timeout(Duration::from_secs(20), server.child.wait())
        .await
        .expect("cove serve ends within 20 s of Ctrl-C, streams open or not")
        .unwrap();
    assert!(status.success(), "{status}");
    // The run was recorded as stopped, and the stream said so before it ended.
    let rest = watching.until("thread_run_end").await;
    assert_eq!(rest.last().unwrap().1["status"], "stopped");
}

#[tokio::test]
async fn a_run_stopped_while_it_starts_never_begins() {
    let cove = Cove::new(Wire::OpenAi).await;
    cove.llm
        .push(Turn::text("").call("complete", json!({"text": "SHOULD NOT RUN"})));
    let server = Server::start(&cove, &[]).await;
    let thread = server
        .create(json!({"task": "Wait", "model": "openai/scripted"}))
        .await;
    // At once: the run is still opening its sandbox.
    let (status, said) = server
        .post(&format!("/v1/threads/{thread}/stop"), json!({}))
        .await;
    assert_eq!(status, 202, "{said}");
    let mut sse = server.stream(&thread, None).await;
    loop {
        let (_, event) = sse.next().await;
        assert_ne!(
            event["type"], "complete",
            "the stopped run went on: {event}"
        );
        let stopped_early = event["type"] == "error"
            && event["message"]
                .as_str()
                .unwrap()
                .contains("stopped before it began");
        let stopped = event["type"] == "thread_run_end" && event["status"] == "stopped";
        if stopped_early || stopped {
            break;
        }
    }
    let (_, view) = server.get(&format!("/v1/threads/{thread}")).await;
    assert_eq!(view["running"], false, "{view}");
    let (status, _) = server
        .post(&format!("/v1/threads/{thread}/stop"), json!({}))
        .await;
    assert_eq!(status, 409, "nothing left to stop");
    server.kill().await;
}

#[tokio::test]
async fn the_servers_model_is_used_when_a_client_names_none() {
    let cove = Cove::new(Wire::Anthropic).await;
    cove.llm
        .push(Turn::text("").call("complete", json!({"text": "done"})));
    let server = Server::start(&cove, &["--model", "anthropic/scripted"]).await;
    let thread = server.create(json!({"task": "Do it"})).await;
    let mut sse = server.stream(&thread, None).await;
    let events = sse.until("thread_run_end").await;
    assert_eq!(events.last().unwrap().1["status"], "completed");
    let (_, view) = server.get(&format!("/v1/threads/{thread}")).await;
    assert_eq!(view["model"], "anthropic/scripted", "{view}");
    assert_eq!(cove.llm.received().len(), 1);
    server.kill().await;

    // COVE_MODEL does the same; a wrong one stops the server at its start, said at once.
    let mut cmd = cove.command(&["serve", "--listen", "127.0.0.1:0"]);
    cmd.env("COVE_MODEL", "anthropic/");
    let out = tokio::time::timeout(Duration::from_secs(30), cmd.output())
        .await
        .expect("the server stopped at once")
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", crate::explain(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("names no model"),
        "{}",
        crate::explain(&out)
    );
}

#[tokio::test]
async fn every_event_reaches_every_client_once_wherever_it_joins() {
    let cove = Cove::new(Wire::OpenAi).await;
    // Two runs of some hundreds of events each, streamed over about a second: clients join
    // at the start, mid-run (served from the tail), behind the tail (from the store), between
    // the runs and after the end.
    cove.llm
        .set_chunking(cove_harness::Chunking::Paced(Duration::from_millis(3)));
    for _ in 0..2 {
        cove.llm
            .push(Turn::text("word ".repeat(400)).call("complete", json!({"text": "done"})));
    }
    let server = std::sync::Arc::new(Server::start(&cove, &[]).await);
    let thread = server.create(json!({"task": "Talk a while"})).await;
    let mut readers = Vec::new();
    for i in 0..14u64 {
        let server = server.clone();
        let thread = thread.clone();
        readers.push(tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(i * 130)).await;
            // Some start from the beginning, some from a little before where the thread is.
            let after = if i % 3 == 0 {
                0
            } else {
                let (_, view) = server.get(&format!("/v1/threads/{thread}")).await;
                view["last_event"]
                    .as_u64()
                    .unwrap_or(0)
                    .saturating_sub(i * 7)
            };
            let mut sse = server.stream(&thread, Some(after)).await;
            let mut seqs = Vec::new();
            let (mut replied, mut ends) = (false, 0);
            // Until the second run's end, or (for a client that joined past an end) until the
            // thread has been quiet for a long while: both runs are over.
            while ends < 2 {
                let Ok((id, event)) =
                    tokio::time::timeout(Duration::from_secs(15), sse.next()).await
                else {
                    break;
                };
                seqs.push(id);
                if event["type"] == "thread_run_end" {
                    ends += 1;
                }
                if i == 0 && !replied && event["type"] == "thread_run_end" {
                    replied = true;
                    // The person writes again: a second run follows.
                    let (status, answer) = server
                        .post(
                            &format!("/v1/threads/{thread}/reply"),
                            json!({"text": "Once more"}),
                        )
                        .await;
                    assert!(status < 300, "{answer}");
                }
            }
            (after, seqs)
        }));
    }
    let mut results = Vec::new();
    for reader in readers {
        results.push(reader.await.unwrap());
    }
    let (_, view) = server.get(&format!("/v1/threads/{thread}")).await;
    let last = view["last_event"].as_u64().unwrap();
    assert!(last > 400, "two long runs: {last} events");
    for (after, seqs) in results {
        let expected: Vec<u64> = (after + 1..=last).collect();
        assert!(
            seqs == expected,
            "a client from {after} saw gaps or repeats: {} events, first {:?}, last {:?} (of {last})",
            seqs.len(),
            seqs.first(),
            seqs.last()
        );
    }
    std::sync::Arc::try_unwrap(server)
        .ok()
        .expect("the readers are done")
        .kill()
        .await;
}

#[tokio::test]
async fn a_running_thread_is_not_deleted_and_a_finished_one_is_gone_for_good() {
    let cove = Cove::new(Wire::OpenAi).await;
    cove.llm.push(Turn::text("").call(
        "execute_command",
        json!({"command": "sleep 2", "timeout": 30}),
    ));
    cove.llm
        .push(Turn::text("").call("complete", json!({"text": "slept"})));
    let server = Server::start(&cove, &[]).await;
    let thread = server.create(json!({"task": "Sleep a little"})).await;
    let refused = server
        .raw(reqwest::Method::DELETE, &format!("/v1/threads/{thread}"))
        .await;
    assert_eq!(refused.status(), 409);
    let said: Value = refused.json().await.unwrap();
    assert_eq!(said["error"]["code"], "running", "{said}");
    // Once it has finished, it goes, with its events.
    let mut sse = server.stream(&thread, None).await;
    loop {
        let (_, event) = sse.next().await;
        if event["type"] == "thread_run_end" {
            break;
        }
    }
    let mut deleted = server
        .raw(reqwest::Method::DELETE, &format!("/v1/threads/{thread}"))
        .await;
    // The run's end is told a moment before the server lets the thread go.
    for _ in 0..50 {
        if deleted.status() != 409 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        deleted = server
            .raw(reqwest::Method::DELETE, &format!("/v1/threads/{thread}"))
            .await;
    }
    assert_eq!(deleted.status(), 200);
    let (status, _) = server.get(&format!("/v1/threads/{thread}")).await;
    assert_eq!(status, 404);
    let (_, listed) = server.get("/v1/threads").await;
    assert_eq!(listed["threads"], json!([]));
    let again = server
        .raw(reqwest::Method::DELETE, &format!("/v1/threads/{thread}"))
        .await;
    assert_eq!(again.status(), 404);
    server.kill().await;
}
