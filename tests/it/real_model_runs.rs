//! Planning, capping and trusting real-model runs, against a loopback OpenAI-compatible
//! server (wiremock; no real LLM is reachable from the test machine): a dry run sends
//! nothing and estimates what a run meters, a budget stops a run and a rerun resumes
//! within what remains, replies without usage are marked estimated, a served model that
//! differs from the requested one is recorded and shown, and an underpowered gate row
//! prints INSUFFICIENT.

use crate::fake_llm::{PlanFollower, banking, paths, read_jsonl, run_args};
use assert_cmd::Command;
use sieve_bench::commands::run::args::RunArgs;
use sieve_bench::model::config::ModelOptions;
use sieve_bench::runner::manifest::{Found, read};
use sieve_record::Component;
use std::path::Path;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer};

fn wide() -> sieve_bench::report::TextOptions {
    sieve_bench::report::TextOptions {
        width: 400,
        wide: true,
        columns: None,
    }
}

async fn serve(fake: &PlanFollower) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(fake.clone())
        .mount(&server)
        .await;
    server
}

/// Banking, two user tasks, two injection tasks: 2 clean + 4 attacked episodes.
fn small(out: &Path, server: &MockServer) -> RunArgs {
    let mut a = run_args(
        out,
        &format!("{}/v1", server.uri()),
        ModelOptions::default(),
    );
    a.user_tasks = Some(vec!["user_task_0".into(), "user_task_1".into()]);
    a.injection_tasks = Some(vec!["injection_task_0".into(), "injection_task_1".into()]);
    a
}

fn manifest(dir: &Path) -> sieve_record::Manifest {
    match read(dir) {
        Found::Manifest(m) => *m,
        _ => panic!("no manifest in {}", dir.display()),
    }
}

/// The agent's metered tokens over a run's records.
fn metered(dir: &Path) -> (u64, u64) {
    read_jsonl(&dir.join("episodes.jsonl"))
        .iter()
        .fold((0, 0), |(c, t), r| {
            let a = &r["cost"]["agent"];
            (
                c + a["calls"].as_u64().unwrap(),
                t + a["prompt_tokens"].as_u64().unwrap() + a["completion_tokens"].as_u64().unwrap(),
            )
        })
}

#[tokio::test]
async fn a_dry_run_sends_nothing_and_estimates_the_metered_run_within_ten_percent() {
    let mut fake = PlanFollower::new(vec![banking()]);
    fake.cl100k = true;
    let server = serve(&fake).await;
    let dir = tempfile::tempdir().unwrap();
    let mut args = small(&dir.path().join("run"), &server);
    args.model_options.price_per_mtok = Some((2.5, 10.0));
    args.model_options.rpm = Some(60);
    args.dry_run = true;
    let est = sieve_bench::commands::estimate::dry_run(&paths(), &args)
        .await
        .unwrap();
    assert!(
        server.received_requests().await.unwrap().is_empty(),
        "nothing sent"
    );
    assert!(!dir.path().join("run").exists(), "nothing written");
    assert_eq!(est.episodes, 6);
    assert_eq!(est.matrix.iter().map(|m| m.3).sum::<u64>(), 6);
    let agent = est.role(Component::Agent).unwrap().clone();
    assert!(agent.llm && agent.calls > 0);
    let text = sieve_bench::commands::estimate::render(&est);
    assert!(text.contains("nothing was sent"), "{text}");
    assert!(text.contains("attacker"), "{text}");
    // At 60 requests a minute the calls alone take calls/60 minutes.
    let rpm_minutes = est.minutes_rate_limits.unwrap();
    assert!((rpm_minutes - est.llm_calls as f64 / 60.0).abs() < 1e-9);

    // The same matrix against the server, metered by it.
    args.dry_run = false;
    let report = sieve_bench::commands::run::run(&paths(), args)
        .await
        .unwrap();
    assert_eq!(report.outcome.ran, 6);
    let (calls, tokens) = metered(&dir.path().join("run"));
    assert_eq!(
        agent.calls, calls,
        "the stand-in makes the calls the server answered"
    );
    let estimate = (agent.prompt_tokens + agent.completion_tokens) as f64;
    let ratio = estimate / tokens as f64;
    eprintln!("agent tokens: estimate {estimate}, metered {tokens}, ratio {ratio:.3}");
    assert!(
        (0.9..=1.1).contains(&ratio),
        "estimate {estimate} vs metered {tokens}: ratio {ratio:.3}"
    );
    let dollars = agent.dollars.unwrap();
    let expect = (agent.prompt_tokens as f64 * 2.5 + agent.completion_tokens as f64 * 10.0) / 1e6;
    assert!((dollars - expect).abs() < 1e-12);
}

#[tokio::test]
async fn a_budget_stops_the_run_and_a_rerun_resumes_within_what_remains() {
    let fake = PlanFollower::new(vec![banking()]);
    let server = serve(&fake).await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    // Measure one whole run's spending in another folder first.
    let full_dir = dir.path().join("full");
    let full = sieve_bench::commands::run::run(&paths(), small(&full_dir, &server))
        .await
        .unwrap();
    let total = full.outcome.ledger.spent_tokens;
    assert_eq!(
        manifest(&full_dir).budget.spent_tokens,
        total,
        "ledger in the manifest"
    );

    let mut args = small(&out, &server);
    args.budget_tokens = Some(total / 2);
    let first = sieve_bench::commands::run::run(&paths(), args.clone())
        .await
        .unwrap();
    let stop = first
        .outcome
        .budget_stop
        .clone()
        .expect("the budget stopped it");
    assert!(stop.contains("--budget-tokens"), "{stop}");
    let err = first.verdict().unwrap_err();
    assert_eq!(err.exit_code(), 6, "{err}");
    let ran = first.outcome.ran;
    assert!(ran > 0 && ran < 6, "{ran}");
    let m = manifest(&out);
    eprintln!(
        "budget {} of {total}: {ran} episode(s) ran, {} spent",
        total / 2,
        m.budget.spent_tokens
    );
    assert!(m.budget.spent_tokens <= total / 2, "{:?}", m.budget);
    assert_eq!(m.budget.limit_tokens, Some(total / 2));
    assert_eq!(
        m.invocations.last().unwrap().outcome,
        sieve_record::InvocationOutcome::Stopped("budget".into())
    );
    let kept = std::fs::read_to_string(out.join("episodes.jsonl")).unwrap();
    assert_eq!(kept.lines().count(), ran, "everything run is written");

    // The same budget again: nothing fits in what remains, nothing is lost.
    let again = sieve_bench::commands::run::run(&paths(), args.clone())
        .await
        .unwrap();
    assert_eq!(again.outcome.ran, 0);
    assert_eq!(again.verdict().unwrap_err().exit_code(), 6);
    assert_eq!(manifest(&out).budget.spent_tokens, m.budget.spent_tokens);

    // A higher budget resumes: the rest runs, the first episodes stay as they were.
    args.budget_tokens = Some(total * 2);
    let rest = sieve_bench::commands::run::run(&paths(), args)
        .await
        .unwrap();
    assert_eq!(rest.outcome.budget_stop, None);
    assert_eq!(rest.outcome.skipped, ran);
    assert_eq!(ran + rest.outcome.ran, 6);
    rest.verdict().unwrap();
    let after = std::fs::read_to_string(out.join("episodes.jsonl")).unwrap();
    assert!(after.starts_with(&kept));
    let ledger = manifest(&out).budget;
    assert_eq!(ledger.episodes, 6);
    assert_eq!(
        ledger.spent_tokens, total,
        "the ledger spans both invocations"
    );
}

/// Sixteen episodes in flight at once cannot overrun a cap by their number: the run
/// widens only as episodes finish and reserves each at no less than the costliest so
/// far, so attacked episodes costing four times their estimate overrun the cap by less
/// than one episode here (docs/real-model-runs.md states the bound).
#[tokio::test(flavor = "multi_thread")]
async fn a_concurrent_budgeted_run_stays_within_its_stated_overrun() {
    let mut fake = PlanFollower::new(vec![banking()]);
    fake.inflate_injected = 4;
    let server = serve(&fake).await;
    let dir = tempfile::tempdir().unwrap();
    let many = |out: &Path| {
        let mut a = small(out, &server);
        a.user_tasks = Some((0..8).map(|i| format!("user_task_{i}")).collect());
        a.concurrency.n = 16;
        a
    };
    let full = sieve_bench::commands::run::run(&paths(), many(&dir.path().join("full")))
        .await
        .unwrap();
    let total = full.outcome.ledger.spent_tokens;
    let costliest = full.outcome.ledger.max_episode_tokens;
    let cap = total / 4;
    let mut args = many(&dir.path().join("capped"));
    args.budget_tokens = Some(cap);
    let capped = sieve_bench::commands::run::run(&paths(), args)
        .await
        .unwrap();
    assert!(capped.outcome.budget_stop.is_some());
    let spent = capped.outcome.ledger.spent_tokens;
    eprintln!("cap {cap} of {total}, costliest episode {costliest}: spent {spent}");
    assert!(
        spent <= cap + costliest,
        "spent {spent} over the cap {cap} by more than one episode ({costliest})"
    );
}

/// A ledger in `run.json` set below what the records show (reset, negative, deleted) is
/// refused: the resume recomputes it from the records and stays within the cap.
#[tokio::test]
async fn a_tampered_ledger_is_refused_and_recomputed_from_the_records() {
    let fake = PlanFollower::new(vec![banking()]);
    let server = serve(&fake).await;
    let dir = tempfile::tempdir().unwrap();
    let full = sieve_bench::commands::run::run(&paths(), small(&dir.path().join("full"), &server))
        .await
        .unwrap();
    let total = full.outcome.ledger.spent_tokens;
    let out = dir.path().join("run");
    let mut args = small(&out, &server);
    args.budget_tokens = Some(total / 2);
    args.concurrency.n = 1;
    let first = sieve_bench::commands::run::run(&paths(), args.clone())
        .await
        .unwrap();
    assert!(first.outcome.budget_stop.is_some());
    let spent = manifest(&out).budget.spent_tokens;
    let run_json = out.join("run.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&run_json).unwrap()).unwrap();
    m["budget"]["spent_tokens"] = 0.into();
    m["budget"]["spent_usd"] = (-100.0).into();
    m["budget"]["episodes"] = 0.into();
    std::fs::write(&run_json, m.to_string()).unwrap();
    let again = sieve_bench::commands::run::run(&paths(), args)
        .await
        .unwrap();
    assert_eq!(
        again.outcome.ran, 0,
        "nothing fits in what the records say remains"
    );
    assert!(again.outcome.budget_stop.is_some());
    assert_eq!(manifest(&out).budget.spent_tokens, spent);
}

#[tokio::test]
async fn a_reply_without_usage_is_counted_as_estimated_in_every_table() {
    let mut fake = PlanFollower::new(vec![banking()]);
    fake.usage = false;
    let server = serve(&fake).await;
    let dir = tempfile::tempdir().unwrap();
    let report = sieve_bench::commands::run::run(&paths(), small(dir.path(), &server))
        .await
        .unwrap();
    let row = &report.summary.rows[0];
    assert!(row.usage_estimated > 0, "{row:?}");
    assert!(row.tokens_per_episode > 0.0, "unknown is never zero");
    for r in read_jsonl(&dir.path().join("episodes.jsonl")) {
        assert_eq!(r["cost"]["agent"]["estimated"], true, "{r}");
        assert!(r["cost"]["agent"]["prompt_tokens"].as_u64().unwrap() > 0);
    }
    let text = sieve_bench::commands::run::summary::summary_text(&report, &wide()).unwrap();
    assert!(
        text.contains(&format!("~{:.0}", row.tokens_per_episode)),
        "{text}"
    );
    let md = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
    assert!(md.contains('~'), "{md}");
    let csv = std::fs::read_to_string(dir.path().join("summary.csv")).unwrap();
    assert!(
        csv.lines().next().unwrap().contains("usage_estimated"),
        "{csv}"
    );

    // With usage reported, nothing is marked.
    let fake = PlanFollower::new(vec![banking()]);
    let server = serve(&fake).await;
    let dir = tempfile::tempdir().unwrap();
    let report = sieve_bench::commands::run::run(&paths(), small(dir.path(), &server))
        .await
        .unwrap();
    assert_eq!(report.summary.rows[0].usage_estimated, 0);
    let csv = std::fs::read_to_string(dir.path().join("summary.csv")).unwrap();
    assert!(!csv.contains("usage_estimated"), "{csv}");
}

#[tokio::test]
async fn a_served_model_differing_from_the_request_is_recorded_and_shown() {
    let mut fake = PlanFollower::new(vec![banking()]);
    fake.served_as = Some("test-model-2026-01-01".into());
    let server = serve(&fake).await;
    let dir = tempfile::tempdir().unwrap();
    let snap = dir.path().join("snapshot");
    let report = sieve_bench::commands::run::run(&paths(), small(&snap, &server))
        .await
        .unwrap();
    for r in read_jsonl(&snap.join("episodes.jsonl")) {
        assert_eq!(
            r["served_models"]["agent"][0], "test-model-2026-01-01",
            "{r}"
        );
    }
    let m = manifest(&snap);
    let l = &m.served_models[&Component::Agent];
    assert_eq!(l.requested, "test-model");
    assert!(l.differs());
    let text = sieve_bench::commands::run::summary::summary_text(&report, &wide()).unwrap();
    assert!(text.contains("test-model-2026-01-01"), "{text}");

    // A run served by the requested model: same lineage as asked, and compare warns.
    let fake = PlanFollower::new(vec![banking()]);
    let server = serve(&fake).await;
    let same = dir.path().join("same");
    sieve_bench::commands::run::run(&paths(), small(&same, &server))
        .await
        .unwrap();
    assert!(!manifest(&same).served_models[&Component::Agent].differs());
    let (text, _) =
        sieve_bench::commands::report_cmd::compare(&same, &snap, Default::default(), &[]).unwrap();
    assert!(text.contains("warning: the served models differ"), "{text}");
}

/// Two scripted runs of one suite's 25 user tasks: gating a 1-point ASR rise on them is
/// underpowered, marked INSUFFICIENT, and fails only with --require-power.
#[test]
fn an_underpowered_gate_row_prints_insufficient() {
    let dir = tempfile::tempdir().unwrap();
    let root = env!("CARGO_MANIFEST_DIR");
    for name in ["a", "b"] {
        Command::cargo_bin("sieve-bench")
            .unwrap()
            .current_dir(root)
            .args([
                "run",
                "--suite",
                "banking",
                "--injection-tasks",
                "injection_task_0",
                "--quiet",
                "--out",
            ])
            .arg(dir.path().join(name))
            .assert()
            .success();
    }
    let compare = |extra: &[&str]| {
        let mut c = Command::cargo_bin("sieve-bench").unwrap();
        c.current_dir(root)
            .arg("compare")
            .arg(dir.path().join("a"))
            .arg(dir.path().join("b"))
            .args(extra);
        c.assert()
    };
    // Every base row solves every clean task: a 1-point BU drop from 100% needs about
    // 600 episodes, and banking has 25 user tasks.
    let out = compare(&["--max-utility-drop", "1.0"]).success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(text.contains("INSUFFICIENT"), "{text}");
    assert!(text.contains("needs at least"), "{text}");
    assert!(text.contains("gate: passed"), "{text}");
    compare(&["--max-utility-drop", "1.0", "--require-power"])
        .code(1)
        .stdout(predicates::str::contains("insufficient power"));
    // A threshold the rows can resolve passes without the mark.
    let out = compare(&["--max-utility-drop", "60", "--require-power"]).success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(!text.contains("INSUFFICIENT"), "{text}");
}

/// The budget's exit code from the command line, on a scripted run (its token counts are
/// local cl100k counts).
#[test]
fn a_budget_stop_exits_six() {
    let dir = tempfile::tempdir().unwrap();
    Command::cargo_bin("sieve-bench")
        .unwrap()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "run",
            "--suite",
            "banking",
            "--user-tasks",
            "user_task_0,user_task_1,user_task_2",
            "--budget-tokens",
            "3000",
            "--quiet",
            "--out",
        ])
        .arg(dir.path().join("r"))
        .assert()
        .code(6)
        .stderr(predicates::str::contains("budget reached"));
}

/// `ablate --dry-run` estimates the ablation's matrix (every defense it would run) and
/// writes nothing.
#[test]
fn ablate_has_a_dry_run_too() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("sieve-bench")
        .unwrap()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "ablate",
            "--suite",
            "banking",
            "--user-tasks",
            "user_task_0",
            "--injection-tasks",
            "injection_task_0",
            "--dry-run",
            "--out",
        ])
        .arg(dir.path().join("ablation"))
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(text.contains("dry run: nothing was sent"), "{text}");
    for d in ["none", "audit", "sieve"] {
        assert!(text.contains(&format!(" {d} ")), "{d}: {text}");
    }
    assert!(!dir.path().join("ablation").exists());
}
