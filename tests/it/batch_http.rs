//! `run --batch submit|collect` against loopback fakes of both provider batch APIs
//! (OpenAI Batch, Anthropic Message Batches): rounds until every episode is recorded,
//! replies cached and replayed byte-identically, per-request errors as episode errors,
//! a budget that stops between rounds, and the named errors (a rejected batch, a reply
//! for an unknown request, an expired batch) that write nothing and leave the round
//! repeatable.

use crate::fake_llm::{PlanFollower, banking, paths, read_jsonl, run_args};
use serde_json::{Value, json};
use sieve_bench::commands::CliError;
use sieve_bench::commands::run::args::RunArgs;
use sieve_bench::commands::run::batch::{BatchApi, Mode};
use sieve_bench::model::config::ModelOptions;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use wiremock::matchers::any;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// How the fake misbehaves.
#[derive(Clone, Copy, Default, PartialEq)]
enum Fault {
    #[default]
    None,
    /// The batch is refused when it is created (a bad batch file).
    Reject,
    /// The results carry one line for a request nobody sent.
    UnknownReply,
    /// The batch expires.
    Expire,
    /// The first request of each batch fails on its own.
    OneRequestFails,
}

#[derive(Default)]
struct State {
    /// Batch id → its requests (custom_id, OpenAI chat body).
    batches: BTreeMap<String, Vec<(String, Value)>>,
    /// Uploaded file id → its JSONL.
    files: BTreeMap<String, String>,
    /// Polls per batch (the first says "in progress").
    polls: BTreeMap<String, usize>,
    /// Every reply body served, by custom_id (OpenAI shape).
    served: BTreeMap<String, Value>,
}

#[derive(Clone)]
struct FakeBatch {
    llm: PlanFollower,
    fault: Fault,
    state: Arc<Mutex<State>>,
    base: String,
}

impl FakeBatch {
    fn submitted(&self) -> usize {
        self.state.lock().unwrap().batches.len()
    }

    /// Every request's reply (OpenAI shape): (custom_id, status, body).
    fn results(&self, id: &str) -> Vec<(String, u16, Value)> {
        let reqs = self.state.lock().unwrap().batches[id].clone();
        let mut out: Vec<(String, u16, Value)> = reqs
            .iter()
            .enumerate()
            .map(|(i, (cid, body))| {
                if self.fault == Fault::OneRequestFails && i == 0 {
                    return (
                        cid.clone(),
                        400,
                        json!({"error": {"message": "this request was refused by the provider"}}),
                    );
                }
                let (status, reply) = self.llm.reply(None, body.to_string().as_bytes());
                self.state
                    .lock()
                    .unwrap()
                    .served
                    .insert(cid.clone(), reply.clone());
                (cid.clone(), status, reply)
            })
            .collect();
        if self.fault == Fault::UnknownReply {
            out.push(("f".repeat(64), 200, out[0].2.clone()));
        }
        out
    }

    fn poll_state(&self, id: &str) -> &'static str {
        let mut s = self.state.lock().unwrap();
        let n = s.polls.entry(id.to_string()).or_default();
        *n += 1;
        match (*n, self.fault) {
            (1, _) => "running",
            (_, Fault::Expire) => "expired",
            _ => "done",
        }
    }
}

impl Respond for FakeBatch {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let p = req.url.path().to_string();
        let get = req.method.as_str() == "GET";
        let ok = |v: Value| ResponseTemplate::new(200).set_body_json(v);
        // OpenAI Batch.
        if p == "/v1/files" && !get {
            let body = String::from_utf8_lossy(&req.body).to_string();
            let start = body.find("application/jsonl\r\n\r\n").unwrap() + 21;
            let end = body.rfind("\r\n--").unwrap();
            let mut s = self.state.lock().unwrap();
            let id = format!("file-{}", s.files.len() + 1);
            s.files.insert(id.clone(), body[start..end].to_string());
            return ok(json!({"id": id}));
        }
        if p == "/v1/batches" && !get {
            let b: Value = serde_json::from_slice(&req.body).unwrap();
            let mut s = self.state.lock().unwrap();
            let id = format!("batch_{}", s.batches.len() + 1);
            if self.fault == Fault::Reject {
                return ok(json!({"id": id, "status": "failed",
                    "errors": {"data": [{"code": "invalid_request", "message": "line 1: bad body"}]}}));
            }
            let file = &s.files[b["input_file_id"].as_str().unwrap()];
            let reqs = file
                .lines()
                .map(|l| {
                    let l: Value = serde_json::from_str(l).unwrap();
                    assert_eq!(l["url"], "/v1/chat/completions");
                    (
                        l["custom_id"].as_str().unwrap().to_string(),
                        l["body"].clone(),
                    )
                })
                .collect();
            s.batches.insert(id.clone(), reqs);
            return ok(json!({"id": id, "status": "validating"}));
        }
        if let Some(id) = p.strip_prefix("/v1/batches/") {
            let status = match self.poll_state(id) {
                "running" => "in_progress",
                "expired" => "expired",
                _ => "completed",
            };
            return ok(
                json!({"id": id, "status": status, "output_file_id": format!("out-{id}"),
                "request_counts": {"total": 1}}),
            );
        }
        if let Some(id) = p
            .strip_prefix("/v1/files/out-")
            .and_then(|r| r.strip_suffix("/content"))
        {
            let lines: String = self
                .results(id)
                .into_iter()
                .map(|(cid, status, body)| {
                    format!(
                        "{}\n",
                        json!({"custom_id": cid, "response": {"status_code": status, "body": body}, "error": null})
                    )
                })
                .collect();
            return ResponseTemplate::new(200).set_body_string(lines);
        }
        // Anthropic Message Batches.
        if p == "/v1/messages/batches" && !get {
            assert_eq!(req.headers.get("anthropic-version").unwrap(), "2023-06-01");
            if self.fault == Fault::Reject {
                return ResponseTemplate::new(400).set_body_json(
                    json!({"type": "error", "error": {"type": "invalid_request_error", "message": "requests.0: bad params"}}),
                );
            }
            let b: Value = serde_json::from_slice(&req.body).unwrap();
            let reqs = b["requests"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    (
                        r["custom_id"].as_str().unwrap().to_string(),
                        openai_of(&r["params"]),
                    )
                })
                .collect();
            let mut s = self.state.lock().unwrap();
            let id = format!("msgbatch_{}", s.batches.len() + 1);
            s.batches.insert(id.clone(), reqs);
            return ok(json!({"id": id, "processing_status": "in_progress"}));
        }
        if let Some(id) = p.strip_prefix("/v1/messages/batches/") {
            if let Some(id) = id.strip_suffix("/results") {
                let expired = self.fault == Fault::Expire;
                let lines: String = self
                    .results(id)
                    .into_iter()
                    .map(|(cid, status, body)| {
                        let result = if expired {
                            json!({"type": "expired"})
                        } else if status == 200 {
                            json!({"type": "succeeded", "message": anthropic_of(&body)})
                        } else {
                            json!({"type": "errored", "error": {"type": "error", "error": body["error"]}})
                        };
                        format!("{}\n", json!({"custom_id": cid, "result": result}))
                    })
                    .collect();
                return ResponseTemplate::new(200).set_body_string(lines);
            }
            let status = match self.poll_state(id) {
                "running" => "in_progress",
                _ => "ended",
            };
            return ok(json!({"id": id, "processing_status": status,
                "results_url": format!("{}/v1/messages/batches/{id}/results", self.base)}));
        }
        ResponseTemplate::new(404)
            .set_body_json(json!({"error": {"message": format!("no route {p}")}}))
    }
}

/// What a provider would do: read Messages parameters (as an OpenAI chat request, for
/// the scripted follower).
fn openai_of(p: &Value) -> Value {
    let mut msgs = Vec::new();
    if let Some(s) = p["system"].as_str() {
        msgs.push(json!({"role": "system", "content": s}));
    }
    for m in p["messages"].as_array().unwrap() {
        let mut text = String::new();
        let mut calls = Vec::new();
        for b in m["content"].as_array().unwrap() {
            match b["type"].as_str().unwrap() {
                "text" => text.push_str(b["text"].as_str().unwrap()),
                "tool_use" => calls.push(json!({"id": b["id"], "type": "function",
                    "function": {"name": b["name"], "arguments": b["input"].to_string()}})),
                "tool_result" => msgs.push(json!({"role": "tool", "tool_call_id": b["tool_use_id"], "content": b["content"]})),
                other => panic!("unexpected block {other}"),
            }
        }
        if m["role"] == "assistant" {
            msgs.push(json!({"role": "assistant", "content": text, "tool_calls": calls}));
        } else if !text.is_empty() {
            msgs.push(json!({"role": "user", "content": text}));
        }
    }
    let tools: Vec<Value> = p["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|t| json!({"type": "function", "function": {"name": t["name"], "description": t["description"], "parameters": t["input_schema"]}}))
        .collect();
    json!({"model": p["model"], "messages": msgs, "tools": tools, "max_tokens": p["max_tokens"]})
}

/// An OpenAI chat completion as a Messages reply.
fn anthropic_of(b: &Value) -> Value {
    let m = &b["choices"][0]["message"];
    let mut content = Vec::new();
    if let Some(t) = m["content"].as_str().filter(|t| !t.is_empty()) {
        content.push(json!({"type": "text", "text": t}));
    }
    for c in m["tool_calls"].as_array().into_iter().flatten() {
        let input: Value =
            serde_json::from_str(c["function"]["arguments"].as_str().unwrap()).unwrap();
        content.push(json!({"type": "tool_use", "id": c["id"], "name": c["function"]["name"], "input": input}));
    }
    json!({"id": "msg", "model": b["model"], "content": content,
        "stop_reason": if m["tool_calls"].is_array() { "tool_use" } else { "end_turn" },
        "usage": {"input_tokens": b["usage"]["prompt_tokens"], "output_tokens": b["usage"]["completion_tokens"]}})
}

async fn fake(fault: Fault) -> (MockServer, FakeBatch) {
    let server = MockServer::start().await;
    let fake = FakeBatch {
        llm: PlanFollower::new(vec![banking()]),
        fault,
        state: Arc::default(),
        base: server.uri(),
    };
    Mock::given(any())
        .respond_with(fake.clone())
        .mount(&server)
        .await;
    (server, fake)
}

fn args(out: &Path, cache: &Path, server: &MockServer, api: BatchApi, mode: Mode) -> RunArgs {
    let mut a = run_args(
        out,
        &format!("{}/v1", server.uri()),
        ModelOptions {
            cache: Some(cache.to_path_buf()),
            ..ModelOptions::default()
        },
    );
    a.user_tasks = Some(vec!["user_task_0".into(), "user_task_1".into()]);
    a.injection_tasks = Some(vec!["injection_task_0".into()]);
    a.batch.batch = Some(mode);
    a.batch.batch_api = api;
    a.batch.batch_url = Some(format!("{}/v1", server.uri()));
    a.batch.batch_key_env = Some("SIEVE_BENCH_TEST_UNSET_KEY".into());
    a
}

async fn step(a: &RunArgs) -> Result<sieve_bench::commands::run::summary::RunReport, CliError> {
    sieve_bench::commands::run::batch::batch(&paths(), a.clone()).await
}

fn pending(r: Result<impl Sized, CliError>) -> String {
    match r {
        Err(e) => {
            assert_eq!(e.exit_code(), 8, "{e}");
            e.to_string()
        }
        Ok(_) => panic!("the run finished; a round was expected to be out"),
    }
}

/// Submits and collects until the run is complete; returns the rounds it took.
async fn rounds(dir: &Path, server: &MockServer, api: BatchApi) -> usize {
    let (out, cache) = (dir.join("run"), dir.join("cache"));
    let mut n = 0;
    loop {
        let sub = step(&args(&out, &cache, server, api, Mode::Submit)).await;
        match sub {
            Ok(_) => return n,
            Err(e) => assert_eq!(e.exit_code(), 8, "{e}"),
        }
        n += 1;
        assert!(n < 30, "no end to the rounds");
        // The first poll finds the batch running.
        let first = pending(step(&args(&out, &cache, server, api, Mode::Collect)).await);
        assert!(first.contains("still running"), "{first}");
        match step(&args(&out, &cache, server, api, Mode::Collect)).await {
            Ok(_) => return n,
            Err(e) => assert!(e.to_string().contains("run --batch submit"), "{e}"),
        }
    }
}

async fn round_trip(api: BatchApi) {
    let (server, fake) = fake(Fault::None).await;
    let dir = tempfile::tempdir().unwrap();
    let n = rounds(dir.path(), &server, api).await;
    let recs = read_jsonl(&dir.path().join("run/episodes.jsonl"));
    assert_eq!(recs.len(), 4, "two clean and two attacked episodes");
    assert!(recs.iter().all(|r| r["error"].is_null()), "{recs:?}");
    let clean0 = recs
        .iter()
        .find(|r| r["user_task"] == "user_task_0" && r["injection_task"].is_null())
        .unwrap();
    assert_eq!(clean0["utility"], true, "{clean0}");
    // One round per model call of the longest episode: more than one, and never more
    // than the step limit.
    let longest = recs
        .iter()
        .map(|r| r["steps"].as_u64().unwrap())
        .max()
        .unwrap() as usize;
    assert!(
        n >= 2 && n <= longest + 1,
        "{n} rounds, longest episode {longest} steps"
    );
    assert_eq!(fake.submitted(), n);
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("run/batch.json")).unwrap())
            .unwrap();
    assert_eq!(state["rounds"].as_array().unwrap().len(), n);
    // Every reply is in the cache exactly as the provider's result carried it (OpenAI
    // shape; an Anthropic reply as its translation).
    let served = fake.state.lock().unwrap().served.clone();
    for (key, body) in &served {
        let entry: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join(format!("cache/{}/{key}.json", &key[..2])))
                .unwrap(),
        )
        .unwrap();
        if api == BatchApi::Openai {
            assert_eq!(&entry["response"], body);
        } else {
            assert_eq!(
                entry["response"]["choices"][0]["message"]["tool_calls"]
                    .as_array()
                    .map(Vec::len),
                body["choices"][0]["message"]["tool_calls"]
                    .as_array()
                    .map(Vec::len)
            );
        }
    }
    // A replay of the cache sends nothing and repeats every episode.
    let replay_out = dir.path().join("replay");
    let mut r = args(
        &replay_out,
        &dir.path().join("cache"),
        &server,
        api,
        Mode::Submit,
    );
    r.batch.batch = None;
    r.model_options.replay = true;
    let before = fake.llm.calls.load(std::sync::atomic::Ordering::SeqCst);
    sieve_bench::commands::run::run(&paths(), r).await.unwrap();
    assert_eq!(
        fake.llm.calls.load(std::sync::atomic::Ordering::SeqCst),
        before
    );
    let strip = |v: &[Value]| {
        let mut v: Vec<String> = v
            .iter()
            .map(|r| {
                format!(
                    "{} {} {} {} {} {}",
                    r["key"],
                    r["utility"],
                    r["attack_success"],
                    r["steps"],
                    r["cost"],
                    r["blocked"]
                )
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        strip(&recs),
        strip(&read_jsonl(&replay_out.join("episodes.jsonl")))
    );
}

#[tokio::test]
async fn openai_batch_rounds_run_every_episode_and_replay_identically() {
    round_trip(BatchApi::Openai).await;
}

#[tokio::test]
async fn anthropic_batch_rounds_run_every_episode_and_replay_identically() {
    round_trip(BatchApi::Anthropic).await;
}

#[tokio::test]
async fn a_request_the_provider_refuses_errors_its_episode() {
    let (server, _fake) = fake(Fault::OneRequestFails).await;
    let dir = tempfile::tempdir().unwrap();
    rounds(dir.path(), &server, BatchApi::Openai).await;
    let recs = read_jsonl(&dir.path().join("run/episodes.jsonl"));
    assert_eq!(recs.len(), 4);
    let errors: Vec<&str> = recs.iter().filter_map(|r| r["error"].as_str()).collect();
    assert!(!errors.is_empty());
    assert!(
        errors
            .iter()
            .all(|e| e.contains("this request was refused by the provider")),
        "{errors:?}"
    );
}

/// The named errors write nothing into the cache and leave the round to be sent again.
#[tokio::test]
async fn a_rejected_expired_or_unknown_batch_writes_nothing_and_the_round_repeats() {
    for (fault, api, needle) in [
        (Fault::Reject, BatchApi::Openai, "rejected batch"),
        (Fault::Reject, BatchApi::Anthropic, "rejected batch"),
        (Fault::Expire, BatchApi::Openai, "expired"),
        (Fault::Expire, BatchApi::Anthropic, "expired"),
        (
            Fault::UnknownReply,
            BatchApi::Openai,
            "which the round did not send",
        ),
    ] {
        let (server, fake) = fake(fault).await;
        let dir = tempfile::tempdir().unwrap();
        let (out, cache) = (dir.path().join("run"), dir.path().join("cache"));
        let a = |m| args(&out, &cache, &server, api, m);
        let e = match step(&a(Mode::Submit)).await {
            Err(e) if fault == Fault::Reject => e,
            other => {
                pending(other);
                pending(step(&a(Mode::Collect)).await);
                step(&a(Mode::Collect)).await.err().expect("a named error")
            }
        };
        assert_eq!(e.exit_code(), 2, "{e}");
        assert!(e.to_string().contains(needle), "{e}");
        let cached = std::fs::read_dir(&cache).map_or(0, |d| d.count());
        assert_eq!(cached, 0, "nothing was cached");
        // The round can be sent again (to a provider that now accepts it).
        if fault != Fault::Reject {
            let before = fake.submitted();
            pending(step(&a(Mode::Submit)).await);
            assert_eq!(
                fake.submitted(),
                before + 1,
                "the same round went out again"
            );
        }
    }
}

/// A dollar cap holds between rounds: the next round is not submitted once what it could
/// cost at batch prices would pass the cap.
#[tokio::test]
async fn a_budget_stops_between_rounds() {
    let (server, fake) = fake(Fault::None).await;
    let dir = tempfile::tempdir().unwrap();
    let (out, cache) = (dir.path().join("run"), dir.path().join("cache"));
    let a = |m, cap: Option<f64>| {
        let mut a = args(&out, &cache, &server, BatchApi::Openai, m);
        a.model_options.price_per_mtok = Some((1000.0, 1000.0));
        a.budget_usd = cap;
        a
    };
    pending(step(&a(Mode::Submit, None)).await);
    pending(step(&a(Mode::Collect, None)).await);
    pending(step(&a(Mode::Collect, None)).await);
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("batch.json")).unwrap()).unwrap();
    let spent = state["rounds"][0]["usd"].as_f64().unwrap();
    let tokens = state["rounds"][0]["prompt_tokens"].as_u64().unwrap()
        + state["rounds"][0]["completion_tokens"].as_u64().unwrap();
    assert!(spent > 0.0 && tokens > 0, "{state}");
    // Charged at batch prices: half of the synchronous price of the tokens.
    assert!(
        (spent - tokens as f64 * 1000.0 / 1e6 * 0.5).abs() < 1e-9,
        "{state}"
    );
    let e = step(&a(Mode::Submit, Some(spent + 0.01)))
        .await
        .err()
        .expect("stopped by the budget");
    assert_eq!(e.exit_code(), 6, "{e}");
    assert!(e.to_string().contains("nothing was submitted"), "{e}");
    assert_eq!(fake.submitted(), 1, "the second round was not sent");
}

/// `--dry-run --batch` estimates the rounds and prices them at batch prices, sending and
/// writing nothing.
#[test]
fn dry_run_with_batch_estimates_rounds_at_half_price() {
    let dir = tempfile::tempdir().unwrap();
    let run = |batch: bool| {
        let mut c = crate::common::bench(dir.path());
        c.args([
            "run",
            "--suite",
            "banking",
            "--model",
            "openai:m",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--price-per-mtok",
            "1,1",
            "--dry-run",
            "--out",
        ])
        .arg(dir.path().join("never"));
        if batch {
            c.args(["--batch", "submit", "--cache"])
                .arg(dir.path().join("cache"));
        }
        String::from_utf8(c.assert().success().get_output().stdout.clone()).unwrap()
    };
    let with = run(true);
    assert!(with.contains("batch:"), "{with}");
    assert!(with.contains("round"), "{with}");
    assert!(!dir.path().join("never").exists());
    assert!(!run(false).contains("batch:"));
}
