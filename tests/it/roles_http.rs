//! Labels that cannot mislead: a real agent (a loopback endpoint) beside the scripted
//! judge is refused unless asked for, and then every row that used the judge, and the
//! banner, name it: "oracle judge" when it is the answer key (`judge_auc=1`), "scripted
//! judge (judge_auc=…)" when it models a judge of stated quality.

use crate::fake_llm::{PlanFollower, banking, paths, run_args};
use sieve_bench::commands::run::{args::RunArgs, run};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer};

async fn server() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(PlanFollower::new(vec![banking()]))
        .mount(&server)
        .await;
    server
}

fn args(out: &std::path::Path, url: &str, allow: bool) -> RunArgs {
    let mut base = run_args(out, url, Default::default());
    base.models.judge_model = Some("sim:judge_auc=1".into());
    RunArgs {
        defense: "none,audit".into(),
        user_tasks: Some(vec!["user_task_0".into()]),
        injection_tasks: Some(vec!["injection_task_0".into()]),
        allow_oracle_roles: allow,
        quiet: true,
        ..base
    }
}

#[tokio::test]
async fn a_real_agent_with_the_scripted_judge_is_refused_naming_the_flag() {
    let server = server().await;
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/v1", server.uri());
    let err = run(&paths(), args(dir.path(), &url, false))
        .await
        .err()
        .expect("refused");
    assert_eq!(err.exit_code(), 2);
    let msg = err.to_string();
    assert!(msg.contains("--allow-oracle-roles"), "{msg}");
    assert!(msg.contains("oracle judge"), "{msg}");
    assert!(!dir.path().join("episodes.jsonl").exists());
}

#[tokio::test]
async fn with_the_flag_every_row_that_used_the_judge_says_oracle_judge() {
    let server = server().await;
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/v1", server.uri());
    let report = run(&paths(), args(dir.path(), &url, true))
        .await
        .expect("runs");
    let rows = &report.summary.rows;
    assert!(!rows.is_empty());
    for r in rows {
        let roles = r.scripted_roles.as_ref().expect("recorded");
        assert!(!roles.contains_key(&sieve_record::Component::Agent));
        let judge = roles.get(&sieve_record::Component::Judge);
        if r.defense == "audit" {
            assert_eq!(
                judge.map(|j| j.label.as_str()),
                Some("oracle judge"),
                "{r:?}"
            );
        } else {
            // `none` never asks a judge: nothing scripted touched its row.
            assert!(judge.is_none(), "{r:?}");
        }
    }
    let note = report.summary.note.clone().expect("a banner");
    assert!(note.contains("oracle judge"), "{note}");
    assert!(note.contains("The agent is a real model"), "{note}");
    assert!(!note.contains("scripted agent"), "{note}");
    // Every format renders the role from the same row data.
    let table = sieve_bench::report::table(
        &report.summary,
        &sieve_bench::report::TextOptions {
            width: 200,
            ..Default::default()
        },
    )
    .unwrap();
    let audit_line = table
        .lines()
        .find(|l| l.starts_with("audit"))
        .expect("an audit row");
    assert!(audit_line.contains("oracle"), "{table}");
    let csv = sieve_bench::report::csv(&report.summary).unwrap();
    assert!(
        csv.lines().next().unwrap().contains("scripted_judge"),
        "{csv}"
    );
    assert!(
        csv.lines()
            .any(|l| l.contains(",audit,") && l.contains(",oracle,")),
        "{csv}"
    );
}

#[tokio::test]
async fn a_scripted_judge_of_stated_quality_is_labelled_with_its_quality_not_oracle() {
    let server = server().await;
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/v1", server.uri());
    let report = run(&paths(), {
        let mut a = args(dir.path(), &url, true);
        a.models.judge_model = Some("sim:judge_auc=0.8".into());
        a
    })
    .await
    .expect("runs");
    let audit = report
        .summary
        .rows
        .iter()
        .find(|r| r.defense == "audit")
        .unwrap();
    let judge = &audit.scripted_roles.as_ref().unwrap()[&sieve_record::Component::Judge];
    assert_eq!(judge.label, "scripted judge (judge_auc=0.8)");
    let note = report.summary.note.clone().unwrap();
    assert!(
        note.contains("scripted judge (judge_auc=0.8) [audit]"),
        "{note}"
    );
    assert!(!note.contains("oracle judge"), "{note}");
}
