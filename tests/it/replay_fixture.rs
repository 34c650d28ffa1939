//! CI check: replay the committed transcripts of a recorded run (no network, no key) and
//! compare with the committed summary. The transcripts were recorded from the loopback
//! fake endpoint in tests/it/fake_llm by the ignored test below:
//!
//! ```text
//! cargo test --test it -- --ignored replay_fixture::record_replay_fixture
//! ```
//!
//! Rerun it whenever the banking tools, the system prompt or the request format change on
//! purpose (a replay miss here means the request a real model would receive has changed).

use crate::fake_llm;
use sieve_bench::commands::run::args::{Concurrency, RoleModels};

use crate::fake_llm::PlanFollower;
use sieve_bench::commands::Paths;
use sieve_bench::commands::run::{args::RunArgs, run};
use sieve_bench::model::config::ModelOptions;
use std::path::{Path, PathBuf};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer};

fn fixture() -> PathBuf {
    fake_llm::repo().join("tests/fixtures/replay")
}

fn fixture_paths() -> Paths {
    let f = fixture();
    Paths::resolve(Some(f.join("suites")), Some(f.join("attacks")), Some(f))
}

fn args(out: &Path, base_url: &str, replay: bool) -> RunArgs {
    RunArgs {
        suite: "banking".into(),
        models: RoleModels::agent("openai:recorded-model"),
        concurrency: Concurrency { n: 4 },
        max_steps: 10,
        out: Some(out.to_path_buf()),
        results_dir: out.to_path_buf(),
        model_options: ModelOptions {
            base_url: Some(base_url.into()),
            api_key_env: Some("SIEVE_BENCH_FIXTURE_NO_KEY".into()),
            cache: Some(fixture().join("cache")),
            replay,
            price_per_mtok: Some((0.15, 0.6)),
            ..Default::default()
        },
        ..RunArgs::default()
    }
}

fn rows(summary: &sieve_bench::report::Summary) -> serde_json::Value {
    serde_json::to_value(&summary.rows).unwrap()
}

#[tokio::test]
async fn replayed_run_matches_the_committed_summary() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens on port 9: any request that escaped the cache would fail.
    let report = run(
        &fixture_paths(),
        args(dir.path(), "http://127.0.0.1:9/v1", true),
    )
    .await
    .unwrap();
    assert_eq!(
        report.outcome.errored, 0,
        "replay misses: see the episode errors"
    );
    let expected: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixture().join("expected_rows.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(rows(&report.summary), expected);
    assert!(!report.summary.simulated);
    // `report` re-renders with the run's price, kept in run.json.
    let again = sieve_bench::report::from_dir(dir.path()).unwrap();
    assert_eq!(again.price_per_mtok, Some([0.15, 0.6]));
    assert!(
        sieve_bench::report::csv(&again)
            .unwrap()
            .contains("dollars_per_episode")
    );
    let wide = sieve_bench::report::TextOptions {
        width: 100,
        wide: true,
        columns: None,
    };
    assert!(
        sieve_bench::report::table(&again, &wide)
            .unwrap()
            .contains("$/ep")
    );
}

#[tokio::test]
#[ignore = "regenerates tests/fixtures/replay; run on purpose"]
async fn record_replay_fixture() {
    let suite = sieve_bench::suite::load(&fixture().join("suites/dojo-style/banking")).unwrap();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(PlanFollower::new(vec![suite]))
        .mount(&server)
        .await;
    let _ = std::fs::remove_dir_all(fixture().join("cache"));
    let dir = tempfile::tempdir().unwrap();
    let report = run(
        &fixture_paths(),
        args(dir.path(), &format!("{}/v1", server.uri()), false),
    )
    .await
    .unwrap();
    assert_eq!(report.outcome.errored, 0);
    std::fs::write(
        fixture().join("expected_rows.json"),
        serde_json::to_string_pretty(&rows(&report.summary)).unwrap() + "\n",
    )
    .unwrap();
}
