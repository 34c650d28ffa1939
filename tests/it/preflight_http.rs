//! Fail fast: the pre-flight request to every endpoint in use, and an embedding 401 that
//! stops the run, against loopback servers.

use crate::fake_llm;

use crate::fake_llm::{PlanFollower, banking, paths, run_args};
use serde_json::json;
use sieve_bench::model::config::{ModelFactory, ModelOptions};
use sieve_bench::model::tokens::TokenCounter;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A port with nothing listening: bound, then released.
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[tokio::test]
async fn a_closed_port_stops_the_run_within_seconds_naming_the_url() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{}/v1", closed_port());
    let started = Instant::now();
    let err =
        sieve_bench::commands::run::run(&paths(), run_args(dir.path(), &url, Default::default()))
            .await
            .err()
            .expect("refused");
    // Not a speed target: a run that retried the refused connection with its backoff
    // (6 retries, up to 30 s each) would take minutes; a loaded machine takes seconds.
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
    let msg = err.to_string();
    assert!(msg.contains(&url), "{msg}");
    assert!(msg.contains("agent"), "{msg}");
    assert_eq!(err.exit_code(), 1);
    assert!(!dir.path().join("episodes.jsonl").exists());
}

#[tokio::test]
async fn a_base_url_without_v1_gets_a_hint() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(PlanFollower::new(vec![banking()]))
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let err = sieve_bench::commands::run::run(
        &paths(),
        run_args(dir.path(), &server.uri(), Default::default()),
    )
    .await
    .err()
    .expect("refused");
    let msg = err.to_string();
    assert!(msg.contains("HTTP 404"), "{msg}");
    assert!(
        msg.contains(&format!("did you mean --base-url {}/v1", server.uri())),
        "{msg}"
    );
    // One request, not one per episode.
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn bad_credentials_stop_the_run_before_any_episode() {
    let server = MockServer::start().await;
    let mut fake = PlanFollower::new(vec![banking()]);
    fake.key = Some("sk-right-key-123456".into());
    Mock::given(method("POST"))
        .respond_with(fake)
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let err = sieve_bench::commands::run::run(
        &paths(),
        run_args(
            dir.path(),
            &format!("{}/v1", server.uri()),
            Default::default(),
        ),
    )
    .await
    .err()
    .expect("refused");
    assert!(
        err.to_string().contains("rejected the credentials"),
        "{err}"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

fn model(uri: &str) -> Arc<dyn sieve_bench::model::ChatModel> {
    ModelFactory::new(
        ModelOptions {
            base_url: Some(format!("{uri}/v1")),
            ..Default::default()
        },
        BTreeMap::new(),
        Arc::new(TokenCounter::new().unwrap()),
    )
    .unwrap()
    .with_env(|_| None)
    .chat("openai:test-model")
    .unwrap()
}

#[tokio::test]
async fn preflight_warns_when_the_server_drops_the_tool_schemas() {
    let tools = banking().tools.schemas();
    // A server whose template dropped the tools: it counts only the two short messages.
    let dropping = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "choices": [{"message": {"role": "assistant", "content": "ready"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 38, "completion_tokens": 2}
        })))
        .mount(&dropping)
        .await;
    let warnings = model(&dropping.uri()).preflight(&tools).await.unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("--tool-format prompted"),
        "{}",
        warnings[0]
    );
    // A server that sees the tools (it counts the whole body) draws no warning.
    let keeping = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(PlanFollower::new(vec![banking()]))
        .mount(&keeping)
        .await;
    assert!(
        model(&keeping.uri())
            .preflight(&tools)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn an_embedding_401_stops_the_run_like_a_chat_401() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(PlanFollower::new(vec![banking()]))
        .mount(&server)
        .await;
    // The pre-flight's embedding succeeds; every later one is refused.
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "data": [{"index": 0, "embedding": [0.6, 0.8]}]
        })))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(
            ResponseTemplate::new(401).set_body_json(json!({"error": {"message": "bad key"}})),
        )
        .with_priority(2)
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let mut args = run_args(
        dir.path(),
        &format!("{}/v1", server.uri()),
        ModelOptions {
            embedder: Some("openai:emb".into()),
            ..Default::default()
        },
    );
    args.defense = "audit".into();
    args.weights = Some("w_sem=1".into());
    args.concurrency.n = 1;
    let report = sieve_bench::commands::run::run(&paths(), args)
        .await
        .unwrap();
    let fatal = report.outcome.fatal.clone().expect("the run stopped");
    assert!(fatal.contains("rejected the credentials"), "{fatal}");
    assert_eq!(report.outcome.ran, 0, "the stopped episode is not recorded");
    assert_eq!(report.verdict().unwrap_err().exit_code(), 1);
}

#[tokio::test]
async fn errored_episodes_are_their_own_outcome_and_rerun_on_resume() {
    let server = MockServer::start().await;
    let failing = Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(500).set_body_json(json!({"error": {"message": "overloaded"}})),
        )
        .mount_as_scoped(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let args = || {
        let mut a = run_args(
            dir.path(),
            &format!("{}/v1", server.uri()),
            ModelOptions {
                max_retries: Some(0),
                ..Default::default()
            },
        );
        a.user_tasks = Some(vec!["user_task_0".into()]);
        a.injection_tasks = Some(vec!["injection_task_0".into(), "injection_task_1".into()]);
        a
    };
    let first = sieve_bench::commands::run::run(&paths(), args())
        .await
        .unwrap();
    assert_eq!((first.outcome.ran, first.outcome.errored), (3, 3));
    let row = &first.summary.rows[0];
    // Not "ASR 0 %": no rate at all, and the errors counted with their n.
    assert_eq!(
        (row.asr, row.bu, row.n_attacked, row.n_clean),
        (None, None, 0, 0)
    );
    assert_eq!(
        (row.errors, row.episodes, row.error_rate),
        (3, 3, Some(1.0))
    );
    assert!(row.too_many_errors);
    assert_eq!(first.verdict().unwrap_err().exit_code(), 3);
    drop(failing);
    Mock::given(method("POST"))
        .respond_with(PlanFollower::new(vec![banking()]))
        .mount(&server)
        .await;
    // --keep-errors keeps them...
    let mut keep = args();
    keep.keep_errors = true;
    let kept = sieve_bench::commands::run::run(&paths(), keep)
        .await
        .unwrap();
    assert_eq!((kept.outcome.ran, kept.outcome.skipped), (0, 3));
    // ...and by default a rerun runs them again, and each key counts once.
    let again = sieve_bench::commands::run::run(&paths(), args())
        .await
        .unwrap();
    assert_eq!((again.outcome.ran, again.outcome.errored), (3, 0));
    let row = &again.summary.rows[0];
    assert_eq!(
        (row.errors, row.episodes, row.n_attacked, row.n_clean),
        (0, 3, 2, 1)
    );
    assert_eq!(again.summary.episodes, 3);
    assert!(again.verdict().is_ok());
}

/// A server that answers the same request differently on different calls, as a sampling
/// model does: every other agent request gets a final answer instead of the plan's call.
#[derive(Clone)]
struct Fickle {
    inner: PlanFollower,
    n: Arc<std::sync::atomic::AtomicUsize>,
}

impl wiremock::Respond for Fickle {
    fn respond(&self, req: &wiremock::Request) -> ResponseTemplate {
        let body: serde_json::Value = serde_json::from_slice(&req.body).unwrap_or_default();
        let is_agent = body["model"] != fake_llm::JUDGE_MODEL
            && !body
                .to_string()
                .contains(sieve_bench::model::openai::PREFLIGHT_PROMPT);
        if is_agent && self.n.fetch_add(1, std::sync::atomic::Ordering::SeqCst) % 2 == 1 {
            return ResponseTemplate::new(200).set_body_json(json!({
                "choices": [{"message": {"role": "assistant", "content": "All done."}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 500, "completion_tokens": 3}
            }));
        }
        self.inner.respond(req)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_run_recorded_at_concurrency_16_replays_with_zero_misses() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(Fickle {
            inner: PlanFollower::new(vec![banking()]),
            n: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
        })
        .mount(&server)
        .await;
    let cache = tempfile::tempdir().unwrap();
    let (rec_dir, rep_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let base = format!("{}/v1", server.uri());
    let args = |out: &std::path::Path, replay: bool| {
        let mut a = run_args(
            out,
            &base,
            ModelOptions {
                cache: Some(cache.path().to_path_buf()),
                replay,
                ..Default::default()
            },
        );
        // `none` and `audit` send the same first agent request in every episode: the
        // requests race for one cache entry.
        a.defense = "none,audit".into();
        a.models.judge_model = Some(format!("openai:{}", fake_llm::JUDGE_MODEL));
        a.concurrency.n = 16;
        a.max_error_rate = 100.0;
        a
    };
    let recorded = sieve_bench::commands::run::run(&paths(), args(rec_dir.path(), false))
        .await
        .unwrap();
    assert_eq!(recorded.outcome.errored, 0);
    drop(server);
    let replayed = sieve_bench::commands::run::run(&paths(), args(rep_dir.path(), true))
        .await
        .unwrap();
    assert_eq!(replayed.outcome.errored, 0, "replay misses");
    assert_eq!(replayed.outcome.ran, recorded.outcome.ran);
    let strip = |s: &sieve_bench::report::Summary| {
        s.rows
            .iter()
            .map(|r| (r.defense.clone(), r.asr, r.ua, r.bu, r.tokens_per_episode))
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&replayed.summary), strip(&recorded.summary));
}
