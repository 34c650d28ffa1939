//! Every example the documentation shows is run (issue 24 item 4): the fenced
//! `sieve-bench …` commands of README.md and of every docs page it links, the commands
//! of the hosted-CI example (docs/ci/github-actions.yml, which must parse as YAML), and
//! the `Examples:` lines of every subcommand's `--help`. Each page, and each subcommand's
//! help, runs in a temporary directory of its own, in the order shown, with the built
//! binary, the repository's suites and attacks (`SIEVE_BENCH_HOME`), `examples/` and
//! `configs/` linked in, and every `<!-- example: file NAME -->` block written there.
//! The pages run side by side (as many as the machine has cores, up to four) and share
//! one proof cache, so each suite is proved once.
//!
//! The rules, so an example stays what a reader types:
//! - **First commands.** The first command of every page and the first example of every
//!   subcommand's `--help` are narrowed like the rest (run as written, the README's
//!   `--suite all --defense all` lines alone take a quarter of an hour of CI); what
//!   narrowing would hide, the defaults themselves (`attack search`'s budget sized from
//!   the seeds, `--dry-run` without a key, the README's budget line), is run as written
//!   by `first_examples`.
//! - **Scope.** A suite selection wider than one suite (`all`, a family, a list, or none
//!   given) is narrowed to `dojo-style/banking`, and `run`, `ablate` and `attack search`
//!   without `--user-tasks` run the first two user tasks (four for `attack`, whose
//!   universal unit splits tasks into development and held-out halves; two user and two
//!   injection tasks for `attack transfer`, which scores a library's cells against every
//!   defense named). Everything else
//!   runs as written; the `--dry-run` estimate plays every episode, so it is narrowed too.
//! - **Outcome.** A simulated example must exit 0; a gating `compare` (a threshold,
//!   `--significance`, `--require-power`) may also exit 1, its verdict on narrowed runs.
//!   A folder an example reads (`report`, `compare`, `merge`, `--library`) that no
//!   earlier example of its page wrote is first made by a small simulated run (shards
//!   for `merge`, a budget-400 `attack search` for a library).
//! - **Real models.** An example marked `<!-- example: needs-key -->` (markdown) or naming a
//!   real endpoint (`openai:`, a `configs/models.toml` name, `--attacker`, `--answer-judge`;
//!   in `--help`, detected) runs against a closed loopback port with a dummy key:
//!   `--dry-run` must exit 0; any other must be accepted (never exit 2, bad input) and
//!   stop at the endpoint (exit 1) or error every episode (exit 3, e.g. a `--replay` of
//!   an empty `--cache`, which the test creates). A marked command that reaches no endpoint (a `compare` of a real
//!   model's runs) is skipped. An unmarked markdown example naming a real model fails.
//!   No test reaches a real model.
//! - `<!-- example: needs-agentdojo -->` examples run only when `.venv-agentdojo` exists
//!   (CI's bridge step); `<!-- example: not-run: why -->` skips a block and says why.

use assert_cmd::Command;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[derive(Debug, Clone)]
struct Example {
    origin: String,
    words: Vec<String>,
    needs_key: bool,
    needs_agentdojo: bool,
}

/// Splits a command line as `sh` would for these examples: quotes group, `#` starts a
/// comment outside quotes.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None => match c {
                '"' | '\'' => {
                    quote = Some(c);
                    in_word = true;
                }
                '#' if !in_word => break,
                c if c.is_whitespace() => {
                    if in_word {
                        words.push(std::mem::take(&mut cur));
                        in_word = false;
                    }
                }
                c => {
                    cur.push(c);
                    in_word = true;
                }
            },
        }
    }
    assert!(quote.is_none(), "unclosed quote in example: {line}");
    if in_word {
        words.push(cur);
    }
    words
}

/// The `sieve-bench` words of a command line (`cargo run --release --` counts as the binary).
fn command_words(line: &str) -> Option<Vec<String>> {
    if !line.starts_with("sieve-bench ") && !line.starts_with("cargo run --release -- ") {
        return None;
    }
    let words = shell_words(line);
    let at = if words.first().is_some_and(|w| w == "sieve-bench") {
        1
    } else if words.starts_with(&[
        "cargo".into(),
        "run".into(),
        "--release".into(),
        "--".into(),
    ]) {
        4
    } else {
        return None;
    };
    Some(words[at..].to_vec())
}

/// Markdown: fenced blocks, their marker (the last non-blank line before the fence) and
/// their lines with `\` continuations joined.
fn markdown_examples(page: &Path, files: &mut Vec<(String, String)>) -> Vec<Example> {
    let text = std::fs::read_to_string(page).unwrap();
    let name = page.strip_prefix(repo()).unwrap().display().to_string();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(lang) = lines[i].trim_start().strip_prefix("```") else {
            i += 1;
            continue;
        };
        let marker = lines[..i]
            .iter()
            .rev()
            .find(|l| !l.trim().is_empty())
            .and_then(|l| l.trim().strip_prefix("<!-- example:"))
            .map(|m| m.trim_end_matches("-->").trim().to_string())
            .unwrap_or_default();
        let start = i + 1;
        let end = start
            + lines[start..]
                .iter()
                .position(|l| l.trim_start().starts_with("```"))
                .unwrap_or_else(|| panic!("{name}: unclosed fence at line {}", i + 1));
        let body = &lines[start..end];
        i = end + 1;
        if let Some(file) = marker.strip_prefix("file ") {
            files.push((file.trim().to_string(), body.join("\n") + "\n"));
            continue;
        }
        if marker.starts_with("not-run") || !matches!(lang.trim(), "" | "sh" | "bash" | "console") {
            continue;
        }
        let mut joined = Vec::new();
        let mut cur = String::new();
        for l in body {
            let l = l.trim();
            if let Some(head) = l.strip_suffix('\\') {
                cur.push_str(head);
                cur.push(' ');
            } else {
                cur.push_str(l);
                joined.push(std::mem::take(&mut cur));
            }
        }
        for (n, line) in joined.iter().enumerate() {
            if let Some(words) = command_words(line) {
                out.push(Example {
                    origin: format!("{name} (block at line {start}, command {})", n + 1),
                    words,
                    needs_key: marker.contains("needs-key"),
                    needs_agentdojo: marker.contains("needs-agentdojo"),
                });
            }
        }
    }
    out
}

/// Every docs page README.md links, README first.
fn pages() -> Vec<PathBuf> {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let mut seen = BTreeSet::new();
    let mut pages = vec![repo().join("README.md")];
    for part in readme.split("](docs/").skip(1) {
        let target = part.split([')', '#']).next().unwrap();
        if target.ends_with(".md") && seen.insert(target.to_string()) {
            pages.push(repo().join("docs").join(target));
        }
    }
    pages
}

fn bin() -> Command {
    Command::cargo_bin("sieve-bench").unwrap()
}

/// The subcommands whose `--help` may carry examples.
const SUBCOMMANDS: [&[&str]; 11] = [
    &["run"],
    &["ablate"],
    &["check-suites"],
    &["list"],
    &["report"],
    &["merge"],
    &["calibrate"],
    &["compare"],
    &["attack", "search"],
    &["attack", "transfer"],
    &["attack", "merge"],
];

/// Names a real model endpoint.
fn names_real_model(words: &[String]) -> bool {
    let models = std::fs::read_to_string(repo().join("configs/models.toml")).unwrap_or_default();
    words.iter().any(|w| {
        w.starts_with("openai:")
            || w == "--attacker"
            || w == "--answer-judge"
            || models.contains(&format!("[{w}]"))
            || models.contains(&format!("[models.{w}]"))
    })
}

fn help_examples() -> Vec<Example> {
    let mut out = Vec::new();
    for sub in SUBCOMMANDS {
        let assert = bin().args(sub).arg("--help").assert().success();
        let help = String::from_utf8(assert.get_output().stdout.clone()).unwrap();
        let mut in_examples = false;
        let mut lines: Vec<String> = Vec::new();
        for line in help.lines() {
            if line.starts_with("Example") && line.trim_end().ends_with(':') {
                in_examples = true;
                continue;
            }
            if in_examples && !line.starts_with("  ") {
                in_examples = false;
            }
            if !in_examples {
                continue;
            }
            // clap wraps long lines at the help's width: a line that does not start a
            // command continues the one before.
            if !line.trim_start().starts_with("sieve-bench ") {
                let last: &mut String = lines.last_mut().unwrap_or_else(|| {
                    panic!(
                        "`{} --help`: an example that is not a sieve-bench command: {line}",
                        sub.join(" ")
                    )
                });
                last.push(' ');
                last.push_str(line.trim());
                continue;
            }
            lines.push(line.trim().to_string());
        }
        for line in &lines {
            let words = command_words(line).unwrap();
            out.push(Example {
                origin: format!("`sieve-bench {} --help`", sub.join(" ")),
                needs_key: names_real_model(&words),
                needs_agentdojo: words.iter().any(|w| w.contains("agentdojo")),
                words,
            });
        }
    }
    out
}

/// The commands of the hosted-CI example's `run:` steps, `target/release/sieve-bench` being
/// the binary.
fn ci_examples() -> Vec<Example> {
    let path = repo().join("docs/ci/github-actions.yml");
    let text = std::fs::read_to_string(&path).unwrap();
    let doc: serde_json::Value = serde_saphyr::from_str(&text)
        .unwrap_or_else(|e| panic!("docs/ci/github-actions.yml is not YAML: {e}"));
    let mut out = Vec::new();
    for job in doc["jobs"].as_object().expect("jobs").values() {
        for step in job["steps"].as_array().expect("steps") {
            let Some(run) = step["run"].as_str() else {
                assert!(step["uses"].is_string(), "a step runs or uses: {step}");
                continue;
            };
            let line = run.replace('\n', " ");
            if let Some(rest) = line.trim().strip_prefix("target/release/sieve-bench ") {
                out.push(Example {
                    origin: format!("docs/ci/github-actions.yml ({})", step["name"]),
                    words: shell_words(rest),
                    needs_key: false,
                    needs_agentdojo: false,
                });
            }
        }
    }
    out
}

fn flag_value<'a>(words: &'a [String], flag: &str) -> Option<&'a str> {
    let at = words.iter().position(|w| w == flag)?;
    words.get(at + 1).map(String::as_str)
}

fn set_flag(words: &mut Vec<String>, flag: &str, value: &str) {
    match words.iter().position(|w| w == flag) {
        Some(at) => words[at + 1] = value.into(),
        None => words.extend([flag.to_string(), value.to_string()]),
    }
}

/// The scope rule of the module doc.
fn narrowed(words: &[String]) -> Vec<String> {
    let mut w = words.to_vec();
    let takes_suite = ["run", "ablate", "check-suites", "attack", "calibrate"];
    // `attack merge` reads shard folders only.
    if !takes_suite.contains(&w[0].as_str()) || w.get(1).is_some_and(|s| s == "merge") {
        return w;
    }
    let one_suite = flag_value(&w, "--suite")
        .is_some_and(|s| !s.contains(',') && s != "all" && s != "dojo-style" && s != "lure-style");
    if !one_suite && !w.iter().any(|x| x.starts_with("agentdojo")) {
        set_flag(&mut w, "--suite", "dojo-style/banking");
    }
    if ["run", "ablate", "attack"].contains(&w[0].as_str())
        && flag_value(&w, "--user-tasks").is_none()
    {
        let tasks = if w[0] == "attack" {
            "user_task_0,user_task_1,user_task_2,user_task_3"
        } else {
            "user_task_0,user_task_1"
        };
        // `attack transfer` scores the library's cells: the first two user tasks, which
        // every library a page or `prepare` makes covers (as written it scores the whole
        // suite against every defense, minutes per example).
        let transfer = w[0] == "attack" && w.get(1).is_some_and(|s| s == "transfer");
        set_flag(
            &mut w,
            "--user-tasks",
            if transfer {
                "user_task_0,user_task_1"
            } else {
                tasks
            },
        );
        if transfer && flag_value(&w, "--injection-tasks").is_none() {
            set_flag(
                &mut w,
                "--injection-tasks",
                "injection_task_0,injection_task_1",
            );
        }
    }
    w
}

/// The directory an example's source runs in: its page, or its subcommand's help.
fn source_dir(origin: &str) -> String {
    let source = origin.split(" (").next().unwrap_or(origin);
    source
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// Names an endpoint the example would reach: a real model or a server's URL.
fn names_endpoint(words: &[String]) -> bool {
    names_real_model(words)
        || words
            .iter()
            .any(|w| w.contains("http://") || w.contains("https://"))
}

/// A `compare` that gates (a threshold, `--significance`, `--require-power`): exit 1 is
/// its verdict, which on narrowed runs may go either way.
fn gates(words: &[String]) -> bool {
    words[0] == "compare"
        && words.iter().any(|w| {
            [
                "--max-asr-increase",
                "--max-utility-drop",
                "--significance",
                "--require-power",
            ]
            .contains(&w.as_str())
        })
}

/// The folders an example reads: positional run folders and `--library`.
fn folders_read(words: &[String]) -> Vec<(String, Option<(usize, usize)>)> {
    let positional: Vec<&String> = words
        .iter()
        .enumerate()
        .filter(|(i, w)| !w.starts_with('-') && (*i == 0 || !words[i - 1].starts_with("--")))
        .map(|(_, w)| w)
        .skip(1)
        .collect();
    let mut out = Vec::new();
    match words[0].as_str() {
        "report" | "compare" => {
            out.extend(positional.iter().map(|p| (p.to_string(), None)));
        }
        "merge" => {
            let n = positional.len();
            out.extend(
                positional
                    .iter()
                    .enumerate()
                    .map(|(k, p)| (p.to_string(), Some((k, n)))),
            );
        }
        _ => {}
    }
    if let Some(lib) = flag_value(words, "--library") {
        out.push((lib.to_string(), None));
    }
    out
}

fn run_in(dir: &Path, words: &[String]) -> std::process::Output {
    bin()
        .current_dir(dir)
        .env("SIEVE_BENCH_HOME", repo())
        .env(
            "SIEVE_BENCH_PROOF_CACHE",
            dir.parent().unwrap().join(".proofs"),
        )
        .env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
        .env("OPENAI_API_KEY", "dummy-key-for-tests")
        .env_remove("RUST_LOG")
        .args(words)
        .timeout(std::time::Duration::from_secs(900))
        .output()
        .unwrap()
}

fn prepare(dir: &Path, folder: &str, shard: Option<(usize, usize)>) {
    if dir.join(folder).exists() {
        return;
    }
    if folder.contains("search-") {
        // A payload library, as `attack search` writes it.
        let words = [
            "attack",
            "search",
            "--suite",
            "dojo-style/banking",
            "--defense",
            "keyword_filter",
            "--user-tasks",
            "user_task_0,user_task_1,user_task_2,user_task_3",
            "--budget-episodes",
            "400",
            "--out",
            folder,
        ]
        .map(String::from);
        let out = run_in(dir, &words);
        assert!(
            out.status.success(),
            "preparing {folder}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    let mut words: Vec<String> = [
        "run",
        "--suite",
        "dojo-style/banking",
        "--attack",
        "important",
        "--defense",
        "none,sieve,audit",
        "--user-tasks",
        "user_task_0,user_task_1,user_task_2,user_task_3",
        "--quiet",
        "--out",
        folder,
    ]
    .map(String::from)
    .to_vec();
    if let Some((k, n)) = shard {
        words.extend(["--shard".to_string(), format!("{k}/{n}")]);
    }
    let out = run_in(dir, &words);
    assert!(
        out.status.success(),
        "preparing {folder}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn check(dir: &Path, ex: &Example) -> Result<(), String> {
    let words = narrowed(&ex.words);
    let shown = words.join(" ");
    if !ex.needs_key {
        for (folder, shard) in folders_read(&words) {
            prepare(dir, &folder, shard);
        }
    }
    if ex.needs_key && words.iter().any(|w| w == "--replay") {
        // What a replay reads was recorded from a real model: here, nothing was.
        if let Some(cache) = flag_value(&words, "--cache") {
            std::fs::create_dir_all(dir.join(cache)).unwrap();
        }
    }
    let out = run_in(dir, &words);
    let code = out.status.code();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let fail = |why: &str| {
        Err(format!(
            "{}: `sieve-bench {shown}` {why} (exit {code:?})\n{}",
            ex.origin,
            stderr.lines().take(12).collect::<Vec<_>>().join("\n")
        ))
    };
    if ex.needs_key && !words.iter().any(|w| w == "--dry-run") {
        // Accepted as written, then stopped by the closed endpoint (exit 1) or, with
        // `--replay` or per-episode errors, every episode errored (exit 3).
        return match code {
            Some(1) | Some(3) => Ok(()),
            Some(2) => fail("was refused as bad input"),
            _ => fail("did not stop at the (closed) endpoint"),
        };
    }
    match code {
        Some(0) => Ok(()),
        Some(1) if gates(&words) => Ok(()),
        _ => fail("failed"),
    }
}

/// Runs one source's examples in order in its own directory; returns the failures and
/// a timing line per example.
fn run_source(
    root: &Path,
    files: &[(String, String)],
    examples: &[Example],
) -> (Vec<String>, Vec<String>) {
    let agentdojo = repo().join(".venv-agentdojo").exists();
    let mut failures = Vec::new();
    let mut timings = Vec::new();
    for ex in examples {
        let marked_real = names_real_model(&ex.words);
        if marked_real && !ex.needs_key {
            failures.push(format!(
                "{}: `{}` names a real model but is not marked needs-key",
                ex.origin,
                ex.words.join(" ")
            ));
            continue;
        }
        if ex.needs_agentdojo && !agentdojo {
            timings.push(format!("skipped (no .venv-agentdojo): {}", ex.origin));
            continue;
        }
        if ex.needs_key && !names_endpoint(&ex.words) {
            timings.push(format!(
                "skipped (reads a real model's results): {}",
                ex.origin
            ));
            continue;
        }
        let dir = root.join(source_dir(&ex.origin));
        if !dir.exists() {
            std::fs::create_dir_all(&dir).unwrap();
            for link in ["examples", "configs"] {
                std::os::unix::fs::symlink(repo().join(link), dir.join(link)).unwrap();
            }
            for (name, body) in files {
                std::fs::write(dir.join(name), body).unwrap();
            }
        }
        let started = std::time::Instant::now();
        if let Err(e) = check(&dir, ex) {
            failures.push(e);
        }
        let line = format!(
            "{:>6.1}s  {}: sieve-bench {}",
            started.elapsed().as_secs_f64(),
            ex.origin,
            ex.words.join(" ")
        );
        // Printed as each example ends too, so a run stopped by a timeout still shows them.
        eprintln!("{line}");
        timings.push(line);
    }
    (failures, timings)
}

#[test]
fn every_documented_example_runs() {
    let mut files = Vec::new();
    let mut examples = Vec::new();
    for page in pages() {
        examples.extend(markdown_examples(&page, &mut files));
    }
    examples.extend(ci_examples());
    examples.extend(help_examples());
    assert!(
        examples.len() > 30,
        "found only {} examples",
        examples.len()
    );
    // Each page (and each subcommand's help) runs in a directory of its own, its examples
    // in order; the sources run side by side, sharing one proof cache (a suite is proved
    // once for the whole test, not once per page).
    let mut sources: Vec<(String, Vec<Example>)> = Vec::new();
    for ex in examples {
        let name = source_dir(&ex.origin);
        match sources.iter_mut().find(|(n, _)| *n == name) {
            Some((_, list)) => list.push(ex),
            None => sources.push((name, vec![ex])),
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 4));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((_, list)) = sources.get(i) else {
                        break;
                    };
                    let outcome = run_source(tmp.path(), &files, list);
                    results.lock().unwrap().push((i, outcome));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|(i, _)| *i);
    let total: usize = sources.iter().map(|(_, l)| l.len()).sum();
    let mut failures = Vec::new();
    for (_, (failed, timings)) in results {
        for line in timings {
            eprintln!("{line}");
        }
        failures.extend(failed);
    }
    assert!(
        failures.is_empty(),
        "{} of {} examples failed:\n\n{}",
        failures.len(),
        total,
        failures.join("\n\n")
    );
}

#[test]
fn the_narrowing_rule_keeps_single_suites_and_fills_task_filters() {
    let w = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
    assert_eq!(
        narrowed(&w("run --suite all --attack all --seeds 3")).join(" "),
        "run --suite dojo-style/banking --attack all --seeds 3 --user-tasks user_task_0,user_task_1"
    );
    assert_eq!(
        narrowed(&w("run --suite slack --user-tasks user_task_3")).join(" "),
        "run --suite slack --user-tasks user_task_3"
    );
    assert_eq!(
        narrowed(&w("report results/a")).join(" "),
        "report results/a"
    );
}
