//! The API key never appears in a run directory, a cache, or the program's output, even
//! when the endpoint echoes a (wrong) key back in its error message.

use crate::fake_llm::{PlanFollower, banking, repo};
use std::path::Path;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer};

const KEY: &str = "sk-sieve-leakcheck-7f3a9c1e5b";
const WRONG: &str = "sk-sieve-wrongkey-000111222333";

fn files_containing(dir: &Path, needle: &str) -> Vec<String> {
    let mut hits = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if String::from_utf8_lossy(&std::fs::read(&p).unwrap()).contains(needle) {
                hits.push(p.display().to_string());
            }
        }
    }
    hits
}

fn run_bin(dir: &Path, base: &str, key: &str, out: &str, cache: &str) -> std::process::Output {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_sieve-bench"));
    cmd.current_dir(dir)
        .env("SIEVE_BENCH_HOME", repo())
        .env("SIEVE_LEAK_TEST_KEY", key)
        .args([
            "run",
            "--suite",
            "banking",
            "--model",
            "openai:test-model",
            "--base-url",
            base,
            "--api-key-env",
            "SIEVE_LEAK_TEST_KEY",
            "--max-retries",
            "1",
            "--cache",
            cache,
            "--out",
            out,
        ]);
    cmd.output().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_key_never_leaks() {
    let server = MockServer::start().await;
    let mut fake = PlanFollower::new(vec![banking()]);
    fake.key = Some(KEY.into());
    Mock::given(method("POST"))
        .respond_with(fake)
        .mount(&server)
        .await;
    let base = format!("{}/v1", server.uri());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();

    let (b, dd) = (base.clone(), d.clone());
    let good = tokio::task::spawn_blocking(move || run_bin(&dd, &b, KEY, "good", "cache"))
        .await
        .unwrap();
    let (so, se) = (
        String::from_utf8_lossy(&good.stdout).to_string(),
        String::from_utf8_lossy(&good.stderr).to_string(),
    );
    assert!(good.status.success(), "{so}\n{se}");
    assert!(so.contains("openai:test-model"), "{so}");
    assert!(d.join("good/episodes.jsonl").is_file());
    assert!(std::fs::read_dir(d.join("cache")).unwrap().count() > 0);

    // A fresh cache, or every request would be answered from the first run's records.

    let (b, dd) = (base.clone(), d.clone());
    let bad = tokio::task::spawn_blocking(move || run_bin(&dd, &b, WRONG, "bad", "cache-bad"))
        .await
        .unwrap();
    let (bo, be) = (
        String::from_utf8_lossy(&bad.stdout).to_string(),
        String::from_utf8_lossy(&bad.stderr).to_string(),
    );
    assert_eq!(bad.status.code(), Some(1), "{bo}\n{be}");
    assert!(be.contains("rejected the credentials"), "{be}");
    assert!(
        be.contains("[redacted]"),
        "the echoed key is scrubbed: {be}"
    );

    for key in [KEY, WRONG, "leakcheck", "wrongkey"] {
        assert!(!so.contains(key) && !se.contains(key), "{key} in output");
        assert!(!bo.contains(key) && !be.contains(key), "{key} in output");
        let hits = files_containing(&d, key);
        assert!(hits.is_empty(), "{key} found in {hits:?}");
    }
}
