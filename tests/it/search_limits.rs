//! An attack search always ends and says why: every attacker query counts against a
//! query budget whether or not its reply was usable, a search whose attacker proposed
//! nothing usable exits non-zero naming the count, and an over-long reply is refused.

use crate::common::bench;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A loopback attacker answering every request with `text`.
fn attacker(text: String) -> (tokio::runtime::Runtime, MockServer) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(async {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
                "choices": [{"message": {"role": "assistant", "content": text},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 20}
            })))
            .mount(&server)
            .await;
        server
    });
    (rt, server)
}

fn search(
    dir: &std::path::Path,
    server: &MockServer,
    extra: &[&str],
) -> assert_cmd::assert::Assert {
    bench(dir)
        .args([
            "attack",
            "search",
            "--suite",
            "dojo-style/banking",
            "--defense",
            "keyword_filter",
            "--attacker",
            "openai:red-team",
            "--unit",
            "pair:user_task_0,injection_task_0",
            "--budget-episodes",
            "30",
            "--base-url",
            &format!("{}/v1", server.uri()),
            "--out",
        ])
        .arg(dir.join("s"))
        .args(extra)
        .assert()
}

/// A model that refuses red-team requests (no template in any reply) costs no episode:
/// the query budget (by default the episode budget, stated in the identity) ends the
/// search, and it exits 1 saying every reply was unusable instead of reporting the
/// seeds' ASR as the adaptive one.
#[test]
fn an_attacker_without_templates_ends_the_search_with_an_error_naming_the_unusable_count() {
    let (rt, server) = attacker("I can't help with that.".into());
    let dir = tempfile::tempdir().unwrap();
    let a = search(dir.path(), &server, &[]).code(1);
    let err = String::from_utf8_lossy(&a.get_output().stderr).to_string();
    assert!(
        err.contains("no usable new template in 30 queries"),
        "{err}"
    );
    assert!(err.contains("30 unusable"), "{err}");
    let out = String::from_utf8_lossy(&a.get_output().stdout).to_string();
    assert!(out.contains("stopped: attacker query budget (30)"), "{out}");
    let requests = rt.block_on(server.received_requests()).unwrap().len();
    assert_eq!(requests, 30);
    let o: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("s/search.json")).unwrap())
            .unwrap();
    assert_eq!(o["unusable"]["proposals"], 30);
    assert_eq!(o["settings"]["budget_attacker_queries"], 30);
}

/// A 50 MB template is refused (counted unusable, over the cap) and goes no further:
/// not into the pool, the library or a later prompt.
#[test]
fn a_50_mb_attacker_reply_is_refused() {
    let big = format!("<template>{{goal}} {}</template>", "x".repeat(50 << 20));
    let (rt, server) = attacker(big);
    let dir = tempfile::tempdir().unwrap();
    let a = search(dir.path(), &server, &["--budget-attacker-queries", "2"]).code(1);
    let err = String::from_utf8_lossy(&a.get_output().stderr).to_string();
    assert!(
        err.contains("2 unusable, 2 of all replies over the 64 KiB cap"),
        "{err}"
    );
    let lib = std::fs::read_to_string(dir.path().join("s/library.json")).unwrap();
    assert!(lib.len() < 1 << 20, "library.json is {} bytes", lib.len());
    let requests = rt.block_on(server.received_requests()).unwrap();
    assert_eq!(requests.len(), 2);
    assert!(requests.iter().all(|r| r.body.len() < 1 << 20));
}
