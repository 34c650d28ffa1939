//! Throughput benchmark of the `openai:` backend against a loopback OpenAI-compatible
//! server that answers every call after a fixed delay (50 ms by default).
//!
//! Two measurements:
//! - `calls`: N chat calls straight through the backend, C in flight at once;
//! - `run`: whole banking episodes through the runner (`--concurrency C`) until at least
//!   N model calls were made, with the fake endpoint following the reference plans.
//!
//! Each reports elapsed time against the floor (calls × delay ÷ C) and the process's peak
//! resident memory (VmHWM; the loopback server runs in the same process, so this is an
//! upper bound for the client). The server is a minimal keep-alive HTTP/1.1 responder
//! written here, because wiremock keeps every request it matched and would grow. Run: `scripts/bench_http.sh` or
//! `cargo run --release --example bench_http -- [--calls N] [--concurrency C] [--delay-ms D]`.

#[path = "../tests/it/fake_llm/mod.rs"]
mod fake_llm;

use futures::StreamExt;
use serde_json::json;
use sieve_bench::model::ChatRequest;
use sieve_bench::model::config::{ModelFactory, ModelOptions};
use sieve_bench::model::tokens::TokenCounter;
use sieve_record::{Component, Message};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

type Handler = Arc<dyn Fn(Option<&str>, &[u8]) -> (u16, serde_json::Value) + Send + Sync>;

/// Serves `handler` on a loopback port, answering each request after `delay`. Returns
/// the base URL and a count of accepted connections (reuse keeps it near the
/// concurrency). Connections are kept alive; the listener lives until the process ends.
async fn serve(handler: Handler, delay: Duration) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            counter.fetch_add(1, Ordering::Relaxed);
            let handler = handler.clone();
            tokio::spawn(async move {
                let mut buf: Vec<u8> = Vec::with_capacity(16 * 1024);
                loop {
                    // Read the head.
                    let head_end = loop {
                        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            break i + 4;
                        }
                        let mut chunk = [0u8; 8192];
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    };
                    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
                    let header = |name: &str| {
                        head.lines().find_map(|l| {
                            let (k, v) = l.split_once(':')?;
                            k.trim()
                                .eq_ignore_ascii_case(name)
                                .then(|| v.trim().to_string())
                        })
                    };
                    let len: usize = header("content-length")
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(0);
                    while buf.len() < head_end + len {
                        let mut chunk = [0u8; 8192];
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let auth = header("authorization");
                    let (status, body) = handler(auth.as_deref(), &buf[head_end..head_end + len]);
                    buf.drain(..head_end + len);
                    tokio::time::sleep(delay).await;
                    let body = body.to_string();
                    let resp = format!(
                        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if sock.write_all(resp.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (format!("http://{addr}/v1"), accepted)
}

fn rss_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn report(what: &str, calls: usize, conc: usize, delay: Duration, elapsed: Duration) {
    let floor = delay.as_secs_f64() * calls as f64 / conc as f64;
    println!(
        "{what}: {calls} calls at concurrency {conc}: {:.3} s; floor {:.3} s; ratio {:.3}; \
         RSS now {} MiB, peak {} MiB",
        elapsed.as_secs_f64(),
        floor,
        elapsed.as_secs_f64() / floor,
        rss_kib("VmRSS:") / 1024,
        rss_kib("VmHWM:") / 1024,
    );
}

#[tokio::main]
async fn main() {
    let mut calls = 2000usize;
    let mut conc = 64usize;
    let mut delay_ms = 50u64;
    let mut modes = vec!["calls".to_string(), "run".to_string()];
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut val = || it.next().expect("flag needs a value");
        match a.as_str() {
            "--calls" => calls = val().parse().unwrap(),
            "--concurrency" => conc = val().parse().unwrap(),
            "--delay-ms" => delay_ms = val().parse().unwrap(),
            "--only" => modes = vec![val()],
            o => panic!("unknown flag {o}"),
        }
    }
    let delay = Duration::from_millis(delay_ms);
    println!("peak RSS before start: {} MiB", rss_kib("VmHWM:") / 1024);

    if modes.iter().any(|m| m == "calls") {
        let reply = json!({
            "choices": [{"message": {"role": "assistant", "content": "ok"},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 1}
        });
        let (base, conns) = serve(Arc::new(move |_, _| (200, reply.clone())), delay).await;
        let f = ModelFactory::new(
            ModelOptions {
                base_url: Some(base),
                ..Default::default()
            },
            BTreeMap::new(),
            Arc::new(TokenCounter::new().unwrap()),
        )
        .unwrap();
        let model = f.chat("openai:bench").unwrap();
        let msgs = Arc::new(vec![
            Message::system("You are a benchmark."),
            Message::user("Say ok."),
        ]);
        let t = Instant::now();
        let ok = futures::stream::iter(0..calls)
            .map(|_| {
                let (m, msgs) = (model.clone(), msgs.clone());
                async move {
                    m.chat(&ChatRequest {
                        component: Component::Agent,
                        messages: &msgs,
                        tools: &[],
                        json: false,
                        seed: None,
                        sim: None,
                    })
                    .await
                    .is_ok()
                }
            })
            .buffer_unordered(conc)
            .filter(|ok| futures::future::ready(*ok))
            .count()
            .await;
        assert_eq!(ok, calls, "some calls failed");
        report("calls", calls, conc, delay, t.elapsed());
        println!(
            "calls: {} TCP connections opened",
            conns.load(Ordering::Relaxed)
        );
    }

    if modes.iter().any(|m| m == "run") {
        // The frozen banking copy of the replay fixture: 6 episodes and 19 calls per seed,
        // whatever the live suites grow into.
        let fixture = fake_llm::repo().join("tests/fixtures/replay");
        let suite = sieve_bench::suite::load(&fixture.join("suites/dojo-style/banking")).unwrap();
        let paths = sieve_bench::commands::Paths::resolve(
            Some(fixture.join("suites")),
            Some(fixture.join("attacks")),
            Some(fixture.clone()),
        );
        let fake = fake_llm::PlanFollower::new(vec![suite]);
        let counter = fake.calls.clone();
        let (base, conns) = serve(Arc::new(move |auth, body| fake.reply(auth, body)), delay).await;
        let seeds = (calls as u64 * 6).div_ceil(19).div_ceil(6);
        let dir = tempfile::tempdir().unwrap();
        let mut args = fake_llm::run_args(dir.path(), &base, ModelOptions::default());
        args.seeds = seeds;
        args.concurrency.n = conc;
        let t = Instant::now();
        let r = sieve_bench::commands::run::run(&paths, args).await.unwrap();
        let elapsed = t.elapsed();
        assert_eq!(r.outcome.errored, 0);
        let made = counter.load(Ordering::SeqCst);
        println!(
            "run: {} episodes ({} seeds), {} model calls",
            r.outcome.ran, seeds, made
        );
        report("run", made, conc, delay, elapsed);
        println!(
            "run: {} TCP connections opened",
            conns.load(Ordering::Relaxed)
        );
    }
}
