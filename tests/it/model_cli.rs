//! Model flags on the command line: bad values are refused before anything runs (exit 2),
//! and `list models` shows the named endpoints of configs/models.toml.

use assert_cmd::Command;
use predicates::str::contains;

fn bin() -> Command {
    let mut c = Command::cargo_bin("sieve-bench").unwrap();
    c.env("SIEVE_BENCH_HOME", env!("CARGO_MANIFEST_DIR"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL");
    c
}

#[test]
fn list_models_shows_named_endpoints() {
    bin()
        .args(["list", "models"])
        .assert()
        .success()
        .stdout(contains("openai:<model>"))
        .stdout(contains("local-qwen"))
        .stdout(contains("http://localhost:8000/v1"));
}

#[test]
fn bad_model_flags_are_refused_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let out = out.to_str().unwrap();
    for (extra, msg) in [
        (vec!["--extra-body", "[1]"], "must be a JSON object"),
        (vec!["--extra-body", "{oops"], "not valid JSON"),
        (
            vec!["--tool-format", "smoke-signals"],
            "unknown tool format",
        ),
        (vec!["--price-per-mtok", "cheap"], "IN,OUT"),
        (vec!["--replay"], "--replay needs --cache"),
        (vec!["--model", "nope"], "local-qwen"),
        (vec!["--model", "openai:gpt-4o"], "set $OPENAI_API_KEY"),
        (vec!["--max-tokens", "0"], "--max-tokens must be at least 1"),
        // 0 would silently mean "no limit".
        (vec!["--rpm", "0"], "--rpm"),
        (vec!["--tpm", "0"], "--tpm"),
        (
            vec!["--model", "openai:m", "--base-url", "ftp://x"],
            "must be http or https",
        ),
    ] {
        let mut args = vec!["run", "--suite", "banking", "--quiet", "--out", out];
        args.extend(extra.iter().copied());
        bin().args(&args).assert().code(2).stderr(contains(msg));
    }
    assert!(!dir.path().join("run/episodes.jsonl").exists());
}

#[cfg(not(feature = "minilm"))]
#[test]
fn minilm_without_the_feature_says_how_to_get_it() {
    let dir = tempfile::tempdir().unwrap();
    bin()
        .args([
            "run",
            "--suite",
            "banking",
            "--quiet",
            "--embedder",
            "minilm",
            "--out",
        ])
        .arg(dir.path().join("r"))
        .assert()
        .code(2)
        .stderr(contains("--features minilm"));
}

/// configs/models.toml's failure is decided by its kind, the same in every command that
/// reads it: malformed content is bad input (2) naming the file and the field; a file that
/// is there but cannot be read is the machine's failure (1).
#[test]
fn a_bad_models_toml_exits_by_its_kind_naming_the_file_and_field() {
    let home = tempfile::tempdir().unwrap();
    let configs = home.path().join("configs");
    std::fs::create_dir(&configs).unwrap();
    let toml = configs.join("models.toml");
    let list = |home: &std::path::Path| {
        let mut c = bin();
        c.env("SIEVE_BENCH_HOME", home).args(["list", "models"]);
        c
    };
    std::fs::write(&toml, "[endpoints.local]\nbase_url = 8000\nmodel = \"m\"\n").unwrap();
    list(home.path())
        .assert()
        .code(2)
        .stderr(contains("models.toml"))
        .stderr(contains("base_url"));
    std::fs::write(
        &toml,
        "[endpoints.local]\nbase_url = \"http://localhost:8000/v1\"\nmodel = \"\"\n",
    )
    .unwrap();
    list(home.path())
        .assert()
        .code(2)
        .stderr(contains("models.toml: endpoint `local` has no model"));
    // A folder where the file should be: there, but unreadable.
    std::fs::remove_file(&toml).unwrap();
    std::fs::create_dir(&toml).unwrap();
    list(home.path())
        .assert()
        .code(1)
        .stderr(contains("cannot read"))
        .stderr(contains("models.toml"));
}
