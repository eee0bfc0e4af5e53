//! What runs cost, from the command line: the last line of a run, `cove threads` and
//! `cove show` per run, a price given in cove.toml, and `--max-cost`.

use cove_harness::Turn;
use cove_harness::llm::Wire;
use serde_json::json;

use super::{Cove, events, explain};

#[tokio::test]
async fn runs_tell_their_tokens_and_cost_and_a_cost_limit_stops_one() {
    let cove = Cove::new(Wire::OpenAi).await;
    let ws = cove.workspace.to_str().unwrap().to_string();
    // A price for the scripted model, as for any model Cove does not know: $100 per million
    // tokens in and out, so a call of some 5,000 prompt tokens costs about half a dollar.
    let config = cove.home.path().join("config/cove");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("cove.toml"),
        "[prices.scripted]\ninput = 100.0\noutput = 100.0\n",
    )
    .unwrap();
    let run_args = |task: &'static str, extra: &[&'static str]| {
        let mut args = vec![
            "run",
            task,
            "--model",
            "openai/scripted",
            "--workspace",
            ws.as_str(),
            "--no-prompt",
            "--max-tokens",
            "1000",
        ];
        args.extend_from_slice(extra);
        args.into_iter().map(str::to_string).collect::<Vec<_>>()
    };

    // A run ends with one line of what it took and cost.
    cove.llm
        .push(Turn::text("").call("complete", json!({"text": "Said."})));
    let args = run_args("Say hi.", &[]);
    let out = cove
        .run(&args.iter().map(String::as_str).collect::<Vec<_>>())
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", explain(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout
        .lines()
        .find(|l| l.starts_with("run ") && l.contains(" completed"))
        .unwrap_or_else(|| panic!("no end line:\n{stdout}"));
    assert!(
        last.contains("1 call · ") && last.contains("tokens in") && last.contains(" out · $"),
        "{last}"
    );
    let billed = cove.llm.billed()[0];
    let expected = (billed.prompt as f64 * 100.0 + 5.0 * 100.0) / 1e6;
    assert!(
        last.contains(&format!("${expected:.4}")),
        "{last} (expected ${expected:.4})"
    );

    // `cove threads` and `cove show` have it per run.
    let threads = events(&cove.run(&["--json", "threads"]).await);
    let runs = threads[0]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["calls"], 1);
    assert_eq!(runs[0]["input_tokens"], billed.prompt as u64);
    assert!((runs[0]["cost"].as_f64().unwrap() - expected).abs() < 1e-9);
    let listed = String::from_utf8_lossy(&cove.run(&["threads"]).await.stdout).to_string();
    assert!(listed.contains("[1 run · 1 call · "), "{listed}");
    let thread = threads[0]["id"].as_str().unwrap().to_string();
    let shown = cove.run(&["show", &thread]).await;
    let shown = String::from_utf8_lossy(&shown.stdout).to_string();
    assert!(
        shown.contains(&format!(
            "run {} · completed · 1 call · ",
            runs[0]["id"].as_str().unwrap()
        )),
        "{shown}"
    );

    // --max-cost $1.30: each call costs about $0.55 and its worst case (prompt as Cove counts
    // it, plus 1,000 tokens of answer) about $0.70 or more, so one or two calls are made
    // before the next could pass the limit: the run stops, says why and how to go on, exit
    // code 4, having spent no more than the limit.
    for _ in 0..3 {
        cove.llm
            .push(Turn::text("Looking.").call("execute_command", json!({"command": "echo hi"})));
    }
    cove.llm
        .push(Turn::text("").call("complete", json!({"text": "Looked."})));
    let before = cove.llm.request_count();
    let args = run_args("Look around.", &["--max-cost", "1.3"]);
    let out = cove
        .run(&args.iter().map(String::as_str).collect::<Vec<_>>())
        .await;
    assert_eq!(out.status.code(), Some(4), "{}", explain(&out));
    let made = cove.llm.request_count() - before;
    assert!((1..=2).contains(&made), "{made} calls made");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("past its limit of $1.3000") && said.contains("cove resume"),
        "{said}"
    );
    let threads = events(&cove.run(&["--json", "threads"]).await);
    let stopped = threads
        .iter()
        .find(|t| {
            t["title"]
                .as_str()
                .unwrap_or_default()
                .contains("Look around")
        })
        .unwrap();
    let thread = stopped["id"].as_str().unwrap().to_string();
    let spent = stopped["runs"][0]["cost"].as_f64().unwrap();
    assert!(spent <= 1.3, "{spent}");
    let billed = cove.llm.billed();
    let last = billed[billed.len() - 1];
    assert!(
        spent + (last.prompt as f64 + 1_000.0) * 100.0 / 1e6 > 1.3,
        "another call like the last would have fitted: {spent}"
    );

    // Resumed with a higher limit, it goes on to the end.
    let out = cove
        .run(&[
            "resume",
            &thread,
            "--no-prompt",
            "--max-tokens",
            "1000",
            "--max-cost",
            "5",
        ])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", explain(&out));
    assert_eq!(cove.llm.request_count() - before, 4);

    // A bad limit, and a limit on a model without a price, are refused before any call.
    let args = run_args("Nothing.", &["--max-cost", "-1"]);
    let out = cove
        .run(&args.iter().map(String::as_str).collect::<Vec<_>>())
        .await;
    assert_eq!(out.status.code(), Some(2), "{}", explain(&out));
    std::fs::remove_file(config.join("cove.toml")).unwrap();
    let args = run_args("Nothing.", &["--max-cost", "1"]);
    let out = cove
        .run(&args.iter().map(String::as_str).collect::<Vec<_>>())
        .await;
    assert_eq!(out.status.code(), Some(2), "{}", explain(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("[prices.\"scripted\"]"),
        "{}",
        explain(&out)
    );
    assert_eq!(cove.llm.request_count() - before, 4, "no call was made");
}
