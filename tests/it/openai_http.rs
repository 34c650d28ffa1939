//! The `openai:` backend against a loopback OpenAI-compatible server (wiremock): whole
//! episodes through the real agent loop and runner, faults, retries, the run-stopping 401,
//! cache and replay, prompted tool calling, and the API key never leaking.

use crate::fake_llm;
use sieve_bench::commands::run::args::RoleModels;

use crate::fake_llm::{PlanFollower, banking, paths, read_jsonl, run_args};
use serde_json::json;
use sieve_bench::model::config::{ModelFactory, ModelOptions};
use sieve_bench::model::tokens::TokenCounter;
use sieve_bench::model::{ChatModel, ChatRequest, ModelError};
use sieve_record::{Component, Message};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn model(server: &MockServer, opts: ModelOptions) -> Arc<dyn ChatModel> {
    let f = ModelFactory::new(
        ModelOptions {
            base_url: Some(format!("{}/v1", server.uri())),
            backoff_base: Some(Duration::from_millis(10)),
            ..opts
        },
        BTreeMap::new(),
        Arc::new(TokenCounter::new().unwrap()),
    )
    .unwrap()
    .with_env(|_| None);
    f.chat("openai:test-model").unwrap()
}

async fn ask(m: &Arc<dyn ChatModel>) -> Result<sieve_bench::model::ChatReply, ModelError> {
    let msgs = vec![Message::system("You help."), Message::user("Hi")];
    m.chat(&ChatRequest {
        component: Component::Agent,
        messages: &msgs,
        tools: &[],
        json: false,
        seed: None,
        sim: None,
    })
    .await
}

fn ok_reply(text: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 3}
    }))
}

#[tokio::test]
async fn full_episode_with_tool_calls_and_final_answer() {
    let server = MockServer::start().await;
    let fake = PlanFollower::new(vec![banking()]);
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(fake.clone())
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let mut args = run_args(
        dir.path(),
        &format!("{}/v1", server.uri()),
        ModelOptions::default(),
    );
    args.user_tasks = Some(vec!["user_task_0".into()]);
    args.injection_tasks = Some(vec!["injection_task_0".into()]);
    let report = sieve_bench::commands::run::run(&paths(), args)
        .await
        .unwrap();
    assert_eq!(report.outcome.ran, 2, "one clean, one attacked episode");
    assert_eq!(report.outcome.errored, 0);
    let recs = read_jsonl(&dir.path().join("episodes.jsonl"));
    let clean = recs.iter().find(|r| r["injection_task"].is_null()).unwrap();
    assert_eq!(clean["utility"], true, "{clean}");
    assert_eq!(clean["simulated"], false);
    assert_eq!(clean["model"], "openai:test-model");
    // read_file, send_money, final answer.
    assert_eq!(clean["cost"]["agent"]["calls"], 3);
    assert_eq!(clean["cost"]["agent"]["completion_tokens"], 51);
    assert_eq!(clean["cost"]["agent"]["estimated"], false);
    assert!(clean["cost"]["agent"].get("truncated").is_none());
    let attacked = recs
        .iter()
        .find(|r| !r["injection_task"].is_null())
        .unwrap();
    assert_eq!(
        attacked["attack_success"], true,
        "the fake obeys injections"
    );
    assert_eq!(attacked["utility"], true);
    // The requests carried the native tools and the tool results.
    let reqs = server.received_requests().await.unwrap();
    let last: serde_json::Value = serde_json::from_slice(&reqs.last().unwrap().body).unwrap();
    assert!(last["tools"].as_array().unwrap().len() > 3);
    assert_eq!(last["temperature"], 0.0);
    assert_eq!(last["max_tokens"], 2048);
    assert!(last["seed"].is_u64());
    assert!(last.get("sim").is_none());
    let roles: Vec<&str> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert!(roles.contains(&"tool"));
    let summary = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
    assert!(!summary.contains("SIMULATED"), "{summary}");
}

#[tokio::test]
async fn rate_limited_429_honours_retry_after() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "1")
                .set_body_json(json!({"error": {"message": "slow down"}})),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ok_reply("fine"))
        .with_priority(2)
        .mount(&server)
        .await;
    let m = model(&server, ModelOptions::default());
    let t = Instant::now();
    let r = ask(&m).await.unwrap();
    assert!(
        t.elapsed() >= Duration::from_millis(950),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(r.retries, 1);
    assert_eq!(r.message.content, "fine");
    assert_eq!(r.usage.prompt_tokens, 11);
}

#[tokio::test]
async fn a_reply_cut_at_max_tokens_keeps_its_finish_reason() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "choices": [{"message": {"content": "The balance is"}, "finish_reason": "length"}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 5}
        })))
        .mount(&server)
        .await;
    let r = ask(&model(
        &server,
        ModelOptions {
            max_tokens: Some(5),
            ..Default::default()
        },
    ))
    .await
    .unwrap();
    assert_eq!(r.finish_reason.as_deref(), Some("length"));
    let mut meter = sieve_record::CostMeter::default();
    meter.record(Component::Agent, &r);
    assert_eq!(meter.get(Component::Agent).truncated, 1);
    let v = serde_json::to_value(&meter).unwrap();
    assert_eq!(v["agent"]["truncated"], 1);
}

#[tokio::test]
async fn spent_quota_is_fatal_not_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).set_body_json(json!({"error": {
            "message": "You exceeded your current quota.",
            "type": "insufficient_quota", "code": "insufficient_quota"}})))
        .mount(&server)
        .await;
    let err = ask(&model(&server, ModelOptions::default()))
        .await
        .unwrap_err();
    assert!(matches!(err, ModelError::Fatal(_)), "{err}");
    assert!(err.to_string().contains("out of quota"), "{err}");
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn server_error_then_success_is_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500).set_body_string("upstream hiccup"))
        .up_to_n_times(2)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ok_reply("after two failures"))
        .with_priority(2)
        .mount(&server)
        .await;
    let r = ask(&model(&server, ModelOptions::default())).await.unwrap();
    assert_eq!(r.retries, 2);
    assert_eq!(r.message.content, "after two failures");
    // Retries exhausted: the episode fails with the last status and message.
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503).set_body_string("down"))
        .mount(&server)
        .await;
    let err = ask(&model(
        &server,
        ModelOptions {
            max_retries: Some(2),
            ..Default::default()
        },
    ))
    .await
    .unwrap_err();
    assert!(matches!(err, ModelError::Request(_)), "{err}");
    assert!(err.to_string().contains("3 attempt(s)"), "{err}");
    assert!(err.to_string().contains("HTTP 503: down"), "{err}");
}

#[tokio::test]
async fn timeouts_are_retried_then_fail_the_call() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ok_reply("too late").set_delay(Duration::from_secs(3)))
        .mount(&server)
        .await;
    let m = model(
        &server,
        ModelOptions {
            request_timeout: Some(0.3),
            max_retries: Some(1),
            ..Default::default()
        },
    );
    let t = Instant::now();
    let err = ask(&m).await.unwrap_err();
    assert!(err.to_string().contains("timed out"), "{err}");
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn dropped_connections_are_retried() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // A server that hangs up on its first two connections without answering.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut n = 0;
        while let Ok((mut sock, _)) = listener.accept().await {
            n += 1;
            let mut buf = vec![0u8; 65536];
            let _ = sock.read(&mut buf).await;
            if n <= 2 {
                drop(sock);
                continue;
            }
            let body = r#"{"choices":[{"message":{"content":"back"},"finish_reason":"stop"}]}"#;
            let resp = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = sock.write_all(resp.as_bytes()).await;
        }
    });
    let f = ModelFactory::new(
        ModelOptions {
            base_url: Some(format!("http://{addr}/v1")),
            backoff_base: Some(Duration::from_millis(10)),
            ..Default::default()
        },
        BTreeMap::new(),
        Arc::new(TokenCounter::new().unwrap()),
    )
    .unwrap();
    let m = f.chat("openai:m").unwrap();
    let r = ask(&m).await.unwrap();
    assert_eq!(r.message.content, "back");
    assert_eq!(r.retries, 2);
    // No usage in the reply: estimated locally.
    assert!(r.usage.estimated && r.usage.prompt_tokens > 0);
}

#[tokio::test]
async fn bad_requests_and_malformed_bodies_fail_the_episode_with_details() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_string("<html>gateway page</html>"))
        .mount(&server)
        .await;
    let err = ask(&model(&server, ModelOptions::default()))
        .await
        .unwrap_err();
    assert!(matches!(err, ModelError::Request(_)));
    assert!(err.to_string().contains("<html>gateway page"), "{err}");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"object": "list"})))
        .mount(&server)
        .await;
    let err = ask(&model(&server, ModelOptions::default()))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("first bytes"), "{err}");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(400).set_body_json(
                json!({"error": {"message": "max_tokens is too large for this model"}}),
            ),
        )
        .mount(&server)
        .await;
    let err = ask(&model(&server, ModelOptions::default()))
        .await
        .unwrap_err();
    assert!(matches!(err, ModelError::Request(_)));
    assert!(
        err.to_string()
            .contains("HTTP 400: max_tokens is too large"),
        "{err}"
    );
    assert_eq!(
        server.received_requests().await.unwrap().len(),
        1,
        "400 is not retried"
    );

    // Through a run: the malformed reply is an episode error, the run goes on.
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_string("{\"choices\": [tru"))
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let mut args = run_args(
        dir.path(),
        &format!("{}/v1", server.uri()),
        Default::default(),
    );
    args.attack = "none".into();
    let report = sieve_bench::commands::run::run(&paths(), args)
        .await
        .unwrap();
    // Every episode fails the same way, so the circuit breaker stops the run after a
    // run of them instead of failing the whole matrix.
    let fatal = report.outcome.fatal.clone().expect("the breaker tripped");
    assert!(fatal.contains("in a row"), "{fatal}");
    assert_eq!(report.outcome.errored, report.outcome.ran);
    assert!(report.outcome.ran >= sieve_bench::runner::execution::BREAKER_RUN);
    assert!(report.outcome.ran < report.outcome.planned);
    let recs = read_jsonl(&dir.path().join("episodes.jsonl"));
    assert!(
        recs[0]["error"]
            .as_str()
            .unwrap()
            .contains("{\\\"choices\\\": [tru"),
        "{}",
        recs[0]["error"]
    );
}

#[tokio::test]
async fn forbidden_is_fatal_and_not_found_fails_the_call() {
    for (status, fatal) in [(403, true), (404, false), (401, true), (422, false)] {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(status)
                    .set_body_json(json!({"error": {"message": format!("status {status} here")}})),
            )
            .mount(&server)
            .await;
        let err = ask(&model(&server, ModelOptions::default()))
            .await
            .unwrap_err();
        assert_eq!(
            matches!(err, ModelError::Fatal(_)),
            fatal,
            "{status}: {err}"
        );
        assert!(
            err.to_string().contains(&format!("status {status} here")),
            "{err}"
        );
        assert_eq!(
            server.received_requests().await.unwrap().len(),
            1,
            "{status} not retried"
        );
    }
}

#[tokio::test]
async fn invalid_tool_arguments_reach_the_agent_as_a_tool_error() {
    let server = MockServer::start().await;
    let mut fake = PlanFollower::new(vec![banking()]);
    fake.bad_args_first = true;
    fake.usage = false;
    Mock::given(method("POST"))
        .respond_with(fake)
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let mut args = run_args(
        dir.path(),
        &format!("{}/v1", server.uri()),
        Default::default(),
    );
    args.attack = "none".into();
    args.user_tasks = Some(vec!["user_task_0".into()]);
    let report = sieve_bench::commands::run::run(&paths(), args)
        .await
        .unwrap();
    assert_eq!(report.outcome.errored, 0);
    let traces = read_jsonl(&dir.path().join("traces.jsonl"));
    let tool_msgs: Vec<&str> = traces[0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert!(tool_msgs[0].contains("ArgumentParseError"), "{tool_msgs:?}");
    assert_eq!(traces[0]["calls"][0]["decision"], "invalid");
    let rec = &read_jsonl(&dir.path().join("episodes.jsonl"))[0];
    // No usage from the endpoint: counted locally and marked estimated.
    assert_eq!(rec["cost"]["agent"]["estimated"], true);
    assert!(rec["cost"]["agent"]["prompt_tokens"].as_u64().unwrap() > 100);
}

#[tokio::test]
async fn unauthorized_stops_the_whole_run() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(401)
                .set_body_json(json!({"error": {"message": "invalid api key"}})),
        )
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let mut args = run_args(
        dir.path(),
        &format!("{}/v1", server.uri()),
        Default::default(),
    );
    args.concurrency.n = 1;
    // The pre-flight request meets the 401 and stops the run before any episode.
    let err = sieve_bench::commands::run::run(&paths(), args)
        .await
        .err()
        .expect("run stopped");
    let fatal = err.to_string();
    assert!(fatal.contains("rejected the credentials"), "{fatal}");
    assert!(fatal.contains("SIEVE_BENCH_TEST_UNSET_KEY"), "{fatal}");
    assert!(fatal.contains(&server.uri()), "{fatal}");
    assert!(!dir.path().join("episodes.jsonl").exists());
    // One request, not one per planned episode, and none retried.
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn cache_records_and_replay_answers_hits_and_names_misses() {
    let server = MockServer::start().await;
    let fake = PlanFollower::new(vec![banking()]);
    let calls = fake.calls.clone();
    Mock::given(method("POST"))
        .respond_with(fake)
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let mut args = run_args(
        &dir.path().join("rec"),
        &format!("{}/v1", server.uri()),
        ModelOptions {
            cache: Some(cache.clone()),
            ..Default::default()
        },
    );
    args.user_tasks = Some(vec!["user_task_0".into()]);
    let recorded = sieve_bench::commands::run::run(&paths(), args.clone())
        .await
        .unwrap();
    let n = calls.load(std::sync::atomic::Ordering::SeqCst);
    assert!(n >= 3);
    drop(server);
    // Replay with the server gone: same summary, no request.
    let mut replay = args.clone();
    replay.out = Some(dir.path().join("replay"));
    replay.model_options.replay = true;
    replay.model_options.base_url = Some("http://127.0.0.1:9/v1".into());
    let replayed = sieve_bench::commands::run::run(&paths(), replay.clone())
        .await
        .unwrap();
    assert_eq!(replayed.outcome.errored, 0);
    assert_eq!(
        serde_json::to_value(&recorded.summary.rows).unwrap(),
        serde_json::to_value(&replayed.summary.rows).unwrap()
    );
    // A task never recorded: each episode errors naming the missing request's hash.
    replay.out = Some(dir.path().join("miss"));
    replay.user_tasks = Some(vec!["user_task_1".into()]);
    let missed = sieve_bench::commands::run::run(&paths(), replay)
        .await
        .unwrap();
    assert!(missed.outcome.fatal.is_none());
    assert_eq!(missed.outcome.errored, missed.outcome.ran);
    let rec = &read_jsonl(&dir.path().join("miss/episodes.jsonl"))[0];
    let err = rec["error"].as_str().unwrap();
    assert!(
        err.starts_with("replay cache miss: no recorded reply for request "),
        "{err}"
    );
    let hash = err
        .trim_start_matches("replay cache miss: no recorded reply for request ")
        .split(' ')
        .next()
        .unwrap();
    assert_eq!(hash.len(), 64, "{err}");
}

#[tokio::test]
async fn prompted_tool_format_describes_tools_and_parses_json_blocks() {
    let server = MockServer::start().await;
    let mut fake = PlanFollower::new(vec![banking()]);
    fake.prompted = true;
    Mock::given(method("POST"))
        .respond_with(fake)
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let mut args = run_args(
        dir.path(),
        &format!("{}/v1", server.uri()),
        ModelOptions {
            tool_format: Some("prompted".parse().unwrap()),
            ..Default::default()
        },
    );
    args.attack = "none".into();
    args.user_tasks = Some(vec!["user_task_0".into()]);
    let report = sieve_bench::commands::run::run(&paths(), args)
        .await
        .unwrap();
    assert_eq!(report.outcome.errored, 0);
    let rec = &read_jsonl(&dir.path().join("episodes.jsonl"))[0];
    assert_eq!(rec["utility"], true, "{rec}");
    assert_eq!(rec["model"], "openai:test-model+prompted");
    let reqs = server.received_requests().await.unwrap();
    let last: serde_json::Value = serde_json::from_slice(&reqs.last().unwrap().body).unwrap();
    assert!(last.get("tools").is_none());
    let msgs = last["messages"].as_array().unwrap();
    let system = msgs[0]["content"].as_str().unwrap();
    assert!(
        system.contains("# Tools") && system.contains("`send_money`"),
        "{system}"
    );
    assert!(msgs.iter().all(|m| m["role"] != "tool"));
    assert!(msgs.iter().any(|m| {
        m["content"]
            .as_str()
            .unwrap()
            .starts_with("Result of tool `read_file`")
    }));
}

#[tokio::test]
async fn extra_body_and_generation_flags_reach_the_request() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ok_reply("ok"))
        .mount(&server)
        .await;
    let m = model(
        &server,
        ModelOptions {
            max_tokens: Some(77),
            temperature: Some(0.5),
            model_seed: Some(9),
            extra_body: Some(
                json!({"chat_template_kwargs": {"enable_thinking": false}, "top_p": 0.9})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
            ..Default::default()
        },
    );
    ask(&m).await.unwrap();
    let reqs = server.received_requests().await.unwrap();
    let body: serde_json::Value = serde_json::from_slice(&reqs[0].body).unwrap();
    assert_eq!(body["max_tokens"], 77);
    assert_eq!(body["temperature"], 0.5);
    assert_eq!(body["seed"], 9);
    assert_eq!(body["top_p"], 0.9);
    assert_eq!(body["chat_template_kwargs"]["enable_thinking"], false);
    assert!(reqs[0].headers.get("authorization").is_none());
    // `null` removes a field (reasoning models reject max_tokens and temperature).
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ok_reply("ok"))
        .mount(&server)
        .await;
    let m = model(
        &server,
        ModelOptions {
            extra_body: Some(
                json!({"max_tokens": null, "temperature": null, "max_completion_tokens": 4096})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
            ..Default::default()
        },
    );
    ask(&m).await.unwrap();
    let reqs = server.received_requests().await.unwrap();
    let body: serde_json::Value = serde_json::from_slice(&reqs[0].body).unwrap();
    assert!(body.get("max_tokens").is_none() && body.get("temperature").is_none());
    assert_eq!(body["max_completion_tokens"], 4096);
}

#[tokio::test]
async fn calls_within_the_rpm_quota_are_not_delayed() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ok_reply("ok"))
        .mount(&server)
        .await;
    // The quota allows a burst of a full minute's requests, as providers do; calls
    // within it are not delayed.
    let m = model(
        &server,
        ModelOptions {
            rpm: Some(600),
            ..Default::default()
        },
    );
    let t = Instant::now();
    for _ in 0..5 {
        ask(&m).await.unwrap();
    }
    assert!(t.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn openai_embedder_posts_batches_and_replays_from_cache() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "object": "list",
            "data": [{"index": 1, "embedding": [0.0, 3.0]}, {"index": 0, "embedding": [4.0, 3.0]}],
            "usage": {"prompt_tokens": 6, "total_tokens": 6}
        })))
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let factory = |replay: bool, base: String| {
        ModelFactory::new(
            ModelOptions {
                base_url: Some(base),
                cache: Some(dir.path().to_path_buf()),
                replay,
                ..Default::default()
            },
            BTreeMap::new(),
            Arc::new(TokenCounter::new().unwrap()),
        )
        .unwrap()
        .with_env(|_| None)
    };
    let texts = vec!["pay the bill".to_string(), "send money".to_string()];
    let f = factory(false, format!("{}/v1", server.uri()));
    let e = f.embedder(Some("openai:text-embedding-3-small")).unwrap();
    assert_eq!(e.name(), "openai:text-embedding-3-small");
    let v = e.embed(&texts).await.unwrap();
    assert_eq!(v, vec![vec![0.8, 0.6], vec![0.0, 1.0]]);
    let reqs = server.received_requests().await.unwrap();
    let body: serde_json::Value = serde_json::from_slice(&reqs[0].body).unwrap();
    assert_eq!(body["input"], json!(texts));
    assert_eq!(body["model"], "text-embedding-3-small");
    // Replay: served from the cache; an unseen text is a miss.
    let f = factory(true, "http://127.0.0.1:9/v1".into());
    let e = f.embedder(Some("openai:text-embedding-3-small")).unwrap();
    assert_eq!(e.embed(&texts).await.unwrap(), v);
    let miss = e.embed(&["other".to_string()]).await.unwrap_err();
    assert!(miss.to_string().contains("replay cache miss"), "{miss}");
    // And the run wires --embedder into Models (lexical by default).
    let with = |embedder: Option<&str>| {
        let f = ModelFactory::new(
            ModelOptions {
                base_url: Some("http://127.0.0.1:9/v1".into()),
                embedder: embedder.map(String::from),
                ..Default::default()
            },
            BTreeMap::new(),
            Arc::new(TokenCounter::new().unwrap()),
        )
        .unwrap();
        sieve_bench::commands::run::models::build_models_with(&f, &RoleModels::agent("sim:oracle"))
            .unwrap()
            .embedder
            .name()
            .to_string()
    };
    assert_eq!(with(None), "lexical");
    assert_eq!(with(Some("openai:emb-1")), "openai:emb-1");
}

#[tokio::test]
async fn a_defense_judge_on_its_own_model_is_called_over_http_and_metered_apart() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(PlanFollower::new(vec![banking()]))
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let mut args = run_args(
        dir.path(),
        &format!("{}/v1", server.uri()),
        Default::default(),
    );
    args.attack = "none".into();
    args.defense = "audit".into();
    args.models.judge_model = Some(format!("openai:{}", fake_llm::JUDGE_MODEL));
    args.user_tasks = Some(vec!["user_task_0".into()]);
    let report = sieve_bench::commands::run::run(&paths(), args)
        .await
        .unwrap();
    assert_eq!(report.outcome.errored, 0);
    let rec = &read_jsonl(&dir.path().join("episodes.jsonl"))[0];
    assert_eq!(rec["utility"], true, "{rec}");
    let agent_calls = rec["cost"]["agent"]["calls"].as_u64().unwrap();
    let judge_calls = rec["cost"]["judge"]["calls"].as_u64().unwrap();
    assert!(judge_calls >= 1, "{rec}");
    assert_eq!(rec["cost"]["judge"]["prompt_tokens"], 100 * judge_calls);
    let reqs = server.received_requests().await.unwrap();
    // The pre-flight requests (one per model) are not the episode's calls.
    let bodies: Vec<serde_json::Value> = reqs
        .iter()
        .map(|r| serde_json::from_slice::<serde_json::Value>(&r.body).unwrap())
        .filter(|b| {
            !b.to_string()
                .contains(sieve_bench::model::openai::PREFLIGHT_PROMPT)
        })
        .collect();
    assert_eq!(reqs.len(), bodies.len() + 2, "one pre-flight per model");
    let models: Vec<String> = bodies.iter().map(|b| b["model"].to_string()).collect();
    let judged = models
        .iter()
        .filter(|m| m.contains(fake_llm::JUDGE_MODEL))
        .count() as u64;
    assert_eq!(judged, judge_calls);
    assert_eq!(models.len() as u64, agent_calls + judge_calls);
}

/// A cache that cannot take a reply (a full disk; here every shard folder is a file) stops
/// the run as a failure, never a run that exits 0 and cannot be replayed.
#[tokio::test]
async fn a_cache_that_cannot_record_fails_the_run() {
    let server = MockServer::start().await;
    let fake = PlanFollower::new(vec![banking()]);
    Mock::given(method("POST"))
        .respond_with(fake)
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    for i in 0..=255u8 {
        std::fs::write(cache.join(format!("{i:02x}")), "").unwrap();
    }
    let mut args = run_args(
        &dir.path().join("rec"),
        &format!("{}/v1", server.uri()),
        ModelOptions {
            cache: Some(cache.clone()),
            ..Default::default()
        },
    );
    args.user_tasks = Some(vec!["user_task_0".into()]);
    let report = sieve_bench::commands::run::run(&paths(), args)
        .await
        .unwrap();
    let fatal = report.outcome.fatal.clone().expect("the run stopped");
    assert!(
        fatal.contains("cannot record a reply in the cache"),
        "{fatal}"
    );
    assert_eq!(report.verdict().unwrap_err().exit_code(), 1);
    assert_eq!(
        report.outcome.ran, 0,
        "no episode is recorded without its reply"
    );
}

/// A `Retry-After` beyond what the harness waits (300 s) is refused at once and out loud
/// (a fatal error naming the wait), not cut to 300 s per attempt in silence.
#[tokio::test]
async fn a_retry_after_longer_than_the_cap_is_refused_out_loud() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "3600")
                .set_body_json(json!({"error": {"message": "quota"}})),
        )
        .mount(&server)
        .await;
    let m = model(&server, ModelOptions::default());
    let r = tokio::time::timeout(Duration::from_secs(20), ask(&m))
        .await
        .expect("refused without waiting");
    match r {
        Err(ModelError::Fatal(msg)) => {
            assert!(msg.contains("retry after 3600 s"), "{msg}");
            assert!(msg.contains("Retry-After"), "{msg}");
        }
        other => panic!("{other:?}"),
    }
}

/// An endpoint's reply is read up to a cap (64 MiB): a longer body fails its call instead
/// of being held whole.
#[tokio::test]
async fn a_reply_body_over_the_cap_fails_the_call_unread() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_string("x".repeat(65 << 20)))
        .mount(&server)
        .await;
    let m = model(&server, ModelOptions::default());
    match ask(&m).await {
        Err(ModelError::Request(msg)) => assert!(msg.contains("longer than 64 MiB"), "{msg}"),
        other => panic!("{other:?}"),
    }
}

/// Every request of an episode carries the episode's seed (31 bits, as OpenAI-compatible
/// servers take it), from the request itself since `ChatRequest` carries it. The values
/// are those the wire carried when the backend read the seed from the scripted side
/// channel: a seed that moved would make a recorded run unrepeatable.
#[tokio::test]
async fn each_episode_sends_its_own_seed_as_it_did_before() {
    let server = MockServer::start().await;
    let fake = PlanFollower::new(vec![banking()]);
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(fake.clone())
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let mut args = run_args(
        dir.path(),
        &format!("{}/v1", server.uri()),
        ModelOptions::default(),
    );
    args.user_tasks = Some(vec!["user_task_0".into()]);
    args.injection_tasks = Some(vec!["injection_task_0".into()]);
    let report = sieve_bench::commands::run::run(&paths(), args)
        .await
        .unwrap();
    assert_eq!(report.outcome.ran, 2);
    // The pre-flight check belongs to no episode: it sends no seed.
    let mut seeds: Vec<u64> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .filter_map(|r| {
            let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
            let seed = body["seed"].as_u64();
            assert_eq!(seed.is_none(), body["max_tokens"] == 16, "{body}");
            seed
        })
        .collect();
    seeds.sort();
    seeds.dedup();
    assert_eq!(seeds, GOLDEN_SEEDS, "one seed per episode, as before");
}

/// The seeds of banking's user_task_0 clean and against injection_task_0 (run seed 0),
/// read from the wire at main abb7d69, before `ChatRequest` carried the seed, and read
/// again when an episode's seed stopped holding the attack's name (issue 36: two
/// templates are compared on the same draws): 1_232_913_618 and 1_644_136_744 then.
const GOLDEN_SEEDS: [u64; 2] = [1_646_407_932, 1_791_988_083];
