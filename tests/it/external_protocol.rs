//! The external-suite protocol against a tiny provider written for these tests
//! (examples/toy_provider.rs, no Python): a suite served by another process runs through
//! the ordinary loop, and a provider that crashes, hangs or sends a malformed line fails
//! only the episode it was serving.

use crate::common::*;
use serde_json::Value;
use sieve_bench::external::Provider;
use std::path::{Path, PathBuf};

/// The toy provider binary, built once per test process (a no-op when it is fresh;
/// `cargo test --test it external_protocol` alone does not build examples).
pub(crate) fn toy_binary() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let status = std::process::Command::new(env!("CARGO"))
                .args(["build", "--quiet", "--example", "toy_provider"])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .status()
                .expect("cargo runs");
            assert!(status.success(), "cannot build the toy provider");
            let deps = std::env::current_exe().unwrap();
            let debug = deps.parent().unwrap().parent().unwrap();
            debug.join("examples").join("toy_provider")
        })
        .clone()
}

/// A suites folder whose only content is the toy provider's declaration.
pub(crate) fn toy_suites(root: &Path, timeout_secs: f64) -> PathBuf {
    let suites = root.join("suites");
    std::fs::create_dir_all(suites.join("external")).unwrap();
    std::fs::write(
        suites.join("external/toy.toml"),
        format!(
            "package = \"toy\"\ncommand = [{:?}]\nsetup = \"build the examples\"\ntimeout_secs = {timeout_secs}\n",
            toy_binary().display().to_string()
        ),
    )
    .unwrap();
    suites
}

/// A suites folder where the toy provider serves package `agentdojo` from a provider file
/// that declares AgentDojo's error convention, as AgentDojo's own adapter's does.
fn toy_as_agentdojo(root: &Path) -> PathBuf {
    toy_as_agentdojo_with(root, "error_convention = \"agentdojo\"\n")
}

fn toy_as_agentdojo_with(root: &Path, extra: &str) -> PathBuf {
    let suites = root.join("suites");
    std::fs::create_dir_all(suites.join("external")).unwrap();
    std::fs::write(
        suites.join("external/agentdojo.toml"),
        format!(
            "package = \"agentdojo\"\ncommand = [{:?}, \"agentdojo\"]\ntimeout_secs = 10\n{extra}",
            toy_binary().display().to_string()
        ),
    )
    .unwrap();
    suites
}

/// A suites folder declaring the toy provider as `toy` with these arguments and extra
/// fields.
fn toy_with(root: &Path, args: &[&str], extra: &str) -> PathBuf {
    let suites = root.join("suites");
    std::fs::create_dir_all(suites.join("external")).unwrap();
    let mut command = vec![toy_binary().display().to_string()];
    command.extend(args.iter().map(|a| a.to_string()));
    std::fs::write(
        suites.join("external/toy.toml"),
        format!("package = \"toy\"\ncommand = {command:?}\ntimeout_secs = 10\n{extra}"),
    )
    .unwrap();
    suites
}

/// `run` over a toy suite with the scripted oracle; the command, to assert on.
fn run_toy(root: &Path, suites: &Path, suite: &str, extra: &[&str]) -> assert_cmd::Command {
    let mut c = bench(root);
    c.arg("--suites-dir").arg(suites).arg("run").args([
        "--suite",
        suite,
        "--attack",
        "none",
        "--model",
        "sim:oracle",
        "--max-error-rate",
        "100",
        "--quiet",
    ]);
    c.args(extra).arg("--out").arg(root.join("out"));
    c
}

fn traces_text(out: &Path) -> String {
    std::fs::read_to_string(out.join("traces.jsonl")).unwrap()
}

fn records(out: &Path) -> Vec<Value> {
    lines(&out.join("episodes.jsonl"))
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn find<'a>(recs: &'a [Value], user_task: &str, injection: Option<&str>) -> &'a Value {
    recs.iter()
        .find(|r| r["user_task"] == user_task && r["injection_task"].as_str() == injection)
        .unwrap_or_else(|| panic!("no record for {user_task}/{injection:?}"))
}

#[tokio::test]
async fn a_described_suite_becomes_an_ordinary_suite() {
    let tmp = tempfile::tempdir().unwrap();
    let suites = toy_suites(tmp.path(), 10.0);
    let provider = Provider::open(&suites, "toy").unwrap();
    assert_eq!(
        provider.list().await.unwrap(),
        vec![
            "toy@v1/counter",
            "toy@v1/label",
            "toy@v1/bill",
            "toy@v1/trace"
        ]
    );
    let suite = provider.load("toy@v1/counter").await.unwrap();
    assert_eq!(suite.qualified_name(), "toy@v1/counter");
    assert_eq!(suite.user_tasks.len(), 4);
    assert_eq!(suite.injection_tasks[0].severity, 0.5);
    assert_eq!(
        suite.injectable[&sieve_bench::ids::TaskId::from("add_two")][0].as_str(),
        "note"
    );
    let read = suite.tools.get("read_note").unwrap();
    assert_eq!(read.kind, sieve_bench::tools::ToolKind::Read);
    assert!(!suite.tools.get("add").unwrap().replaces);
    let label = provider.load("toy@v1/label").await.unwrap();
    assert!(label.tools.get("set_label").unwrap().replaces);
    let system = sieve_bench::episode::system_prompt(&suite);
    assert_eq!(system, "You are the toy suite's assistant.");
    // An unknown suite is the provider's refusal, named.
    let err = provider
        .load("toy@v1/nothing")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("no suite"), "{err}");
}

#[test]
fn episodes_run_in_the_provider_and_its_verdicts_are_recorded() {
    let tmp = tempfile::tempdir().unwrap();
    let suites = toy_suites(tmp.path(), 10.0);
    for (model, success) in [("sim:oracle", false), ("sim:obedient", true)] {
        let out = tmp.path().join(model.replace(':', "-"));
        let mut c = bench(tmp.path());
        c.arg("--suites-dir").arg(&suites).arg("run").args([
            "--suite",
            "toy@v1/counter",
            "--user-tasks",
            "add_two",
            "--attack",
            "toy:shout,important",
            "--model",
            model,
            "--quiet",
        ]);
        c.arg("--out").arg(&out).assert().success();
        let recs = records(&out);
        assert_eq!(recs.len(), 3, "clean + two attacks");
        let clean = find(&recs, "add_two", None);
        assert_eq!(clean["utility"], true, "{clean}");
        assert_eq!(clean["suite"], "toy@v1/counter");
        for r in recs.iter().filter(|r| !r["injection_task"].is_null()) {
            assert_eq!(r["attack_success"], success, "{model}: {r}");
            assert_eq!(r["error"], Value::Null);
            assert_eq!(r["injected_vectors"][0], "note");
        }
    }
}

/// Where the user's task and the attacker's goal set the same one value, the obedient
/// agent wins only if the attacker's call comes last: a tool described with `replaces`
/// makes it wait for the user's own call, so the worst case is the one measured.
#[test]
fn the_obedient_agent_leaves_the_attackers_setting_standing() {
    let tmp = tempfile::tempdir().unwrap();
    let suites = toy_suites(tmp.path(), 10.0);
    let out = tmp.path().join("o");
    let mut c = bench(tmp.path());
    c.arg("--suites-dir").arg(&suites).arg("run").args([
        "--suite",
        "toy@v1/label",
        "--attack",
        "important",
        "--model",
        "sim:obedient",
        "--quiet",
    ]);
    c.arg("--out").arg(&out).assert().success();
    let recs = records(&out);
    assert_eq!(find(&recs, "label_it", None)["utility"], true);
    let attacked = find(&recs, "label_it", Some("relabel"));
    assert_eq!(attacked["error"], Value::Null, "{attacked}");
    assert_eq!(
        (&attacked["attack_success"], &attacked["utility"]),
        (&Value::Bool(true), &Value::Bool(false)),
        "{attacked}"
    );
    // A suite with no date of its own gets no empty date in the agent's prompt.
    assert!(!traces_text(&out).contains("Today's date is ."));
    // The trace: the user's label first, then the attacker's.
    let traces = traces_text(&out);
    let trace = traces
        .lines()
        .find(|l| l.contains("|relabel|"))
        .expect("the attacked episode's trace");
    let (mine, mallory) = (trace.find("mine").unwrap(), trace.rfind("mallory").unwrap());
    assert!(mine < mallory, "{trace}");
}

#[test]
fn crash_hang_and_malformed_line_fail_only_their_own_episode() {
    let tmp = tempfile::tempdir().unwrap();
    let suites = toy_suites(tmp.path(), 2.0);
    let out = tmp.path().join("o");
    let mut c = bench(tmp.path());
    c.arg("--suites-dir").arg(&suites).arg("run").args([
        "--suite",
        "toy@v1/counter",
        "--attack",
        "toy:shout",
        "--model",
        "sim:oracle",
        "--concurrency",
        "3",
        // Six of eight episodes error on purpose; the gate on error rates is not the point.
        "--max-error-rate",
        "100",
        "--quiet",
    ]);
    c.arg("--out").arg(&out).assert().success();
    let recs = records(&out);
    assert_eq!(
        recs.len(),
        8,
        "4 user tasks, clean and attacked, all recorded"
    );
    for injection in [None, Some("exfiltrate")] {
        let ok = find(&recs, "add_two", injection);
        assert_eq!(ok["error"], Value::Null, "{ok}");
        assert_eq!(ok["utility"], true, "{ok}");
        for (task, word) in [
            ("crashes", "crashed"),
            ("hangs", "hung"),
            ("garbles", "malformed"),
        ] {
            let r = find(&recs, task, injection);
            let err = r["error"].as_str().unwrap_or_else(|| panic!("{r}"));
            assert!(err.contains(word), "{task}: {err}");
            assert_eq!(r["utility"], false);
        }
    }
    // An error is its own outcome: a resumed run retries exactly the failed episodes.
    let summary = summary(&out);
    assert_eq!(rows(&summary)[0]["errors"], 6, "{summary}");
}

/// A provider spec naming a program that does not exist: nothing runs, the error names
/// the program, and the exit code is 1 (the machine cannot start it); a spec that is
/// malformed stays bad input (2).
#[test]
fn a_provider_program_that_does_not_exist_exits_1_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let suites = tmp.path().join("suites");
    std::fs::create_dir_all(suites.join("external")).unwrap();
    let program = tmp.path().join("no-such-provider-program");
    std::fs::write(
        suites.join("external/ghost.toml"),
        format!(
            "package = \"ghost\"\ncommand = [{:?}]\n",
            program.display().to_string()
        ),
    )
    .unwrap();
    let out = tmp.path().join("out");
    run_toy(tmp.path(), &suites, "ghost@v1/counter", &[])
        .assert()
        .code(1)
        .stderr(predicates::str::contains(format!(
            "cannot start the suite provider `{}`",
            program.display()
        )));
    assert!(!out.join("episodes.jsonl").exists());
    std::fs::write(
        suites.join("external/ghost.toml"),
        "package = \"ghost\"\ncommand = []\n",
    )
    .unwrap();
    run_toy(tmp.path(), &suites, "ghost@v1/counter", &[])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("field `command` is empty"));
}

#[test]
fn a_missing_provider_says_what_to_run() {
    let tmp = tempfile::tempdir().unwrap();
    let suites = tmp.path().join("suites");
    std::fs::create_dir_all(suites.join("external")).unwrap();
    std::fs::write(
        suites.join("external/toy.toml"),
        "package = \"toy\"\ncommand = [\"/nonexistent/python\", \"x.py\"]\nsetup = \"scripts/setup_toy.sh\"\n",
    )
    .unwrap();
    let mut c = bench(tmp.path());
    c.arg("--suites-dir").arg(&suites).arg("run").args([
        "--suite",
        "toy@v1/counter",
        "--model",
        "sim:oracle",
        "--quiet",
    ]);
    c.arg("--out").arg(tmp.path().join("o"));
    // A program that will not start is the machine's failure (1), not the user's input.
    let assert = c.assert().code(1);
    let err = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert!(err.contains("scripts/setup_toy.sh"), "{err}");
    // A package with no provider file names the ones there are.
    let mut c = bench(tmp.path());
    c.arg("--suites-dir").arg(&suites).arg("run").args([
        "--suite",
        "other@v1/x",
        "--model",
        "sim:oracle",
        "--quiet",
    ]);
    c.arg("--out").arg(tmp.path().join("p"));
    let assert = c.assert().code(2);
    let err = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert!(err.contains("known providers: toy"), "{err}");
}

#[test]
fn agentdojo_suites_count_errors_as_agentdojo_does_unless_told_otherwise() {
    let tmp = tempfile::tempdir().unwrap();
    let suites = toy_as_agentdojo(tmp.path());
    let run = |name: &str, extra: &[&str]| {
        let out = tmp.path().join(name);
        let mut c = bench(tmp.path());
        c.arg("--suites-dir").arg(&suites).arg("run").args([
            "--suite",
            "agentdojo@v1/counter",
            "--user-tasks",
            "add_two,crashes",
            "--attack",
            "agentdojo:shout",
            "--model",
            "sim:oracle",
            "--max-error-rate",
            "100",
            "--quiet",
        ]);
        c.args(extra).arg("--out").arg(&out).assert().success();
        out
    };
    // Unset: AgentDojo's convention. The oracle resists the attack on `add_two`; the
    // crashed provider is no error agentdojo 0.1.35 scores (it would abort its run), so
    // those episodes stay errors, outside the rates, never a successful attack.
    let default = run("default", &[]);
    let s = summary(&default);
    let r = &rows(&s)[0];
    assert_eq!(r["suite"], "agentdojo@v1/counter");
    assert_eq!(r["errors_as"], "agentdojo", "{r}");
    assert_eq!(
        (r["errors"].as_u64(), r["n_attacked"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(
        (r["asr"].as_f64(), r["ua"].as_f64()),
        (Some(0.0), Some(1.0))
    );
    assert_eq!(r["bu"].as_f64(), Some(1.0));
    for e in records(&default) {
        if e["user_task"] == "crashes" {
            assert_eq!(e["error_kind"], "suite", "{e}");
        }
    }
    let notes = s["footnotes"].to_string();
    assert!(
        notes.contains("AgentDojo counts them in every row"),
        "{notes}"
    );
    let info: Value =
        serde_json::from_str(&std::fs::read_to_string(default.join("run.json")).unwrap()).unwrap();
    assert_eq!(info["errors_as"], "by_family");
    // Named, one convention for every row: errors leave the denominators.
    let excluded = run("excluded", &["--errors-as", "excluded"]);
    let s = summary(&excluded);
    let r = &rows(&s)[0];
    assert_eq!(r["errors_as"], "excluded", "{r}");
    assert_eq!(
        (r["errors"].as_u64(), r["n_attacked"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(
        (r["asr"].as_f64(), r["ua"].as_f64()),
        (Some(0.0), Some(1.0))
    );
    // `report` keeps each run's convention (it summarises the records again, printed
    // where asked, never over the run's own files); it refuses to merge the two.
    let mut c = bench(tmp.path());
    c.arg("--suites-dir")
        .arg(&suites)
        .args(["report", "--format", "json"])
        .arg(&default);
    let printed = c.assert().success().get_output().stdout.clone();
    let s: Value = serde_json::from_slice(&printed).unwrap();
    let summary_table = s["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == "summary")
        .expect("a summary table");
    let r = &summary_table["rows"][0];
    assert_eq!(
        (r["errors_as"].as_str(), r["asr"].as_f64()),
        (Some("agentdojo"), Some(0.0))
    );
    let mut c = bench(tmp.path());
    c.arg("--suites-dir")
        .arg(&suites)
        .arg("report")
        .arg(&default)
        .arg(&excluded);
    let err = c.assert().code(2).get_output().stderr.clone();
    assert!(String::from_utf8_lossy(&err).contains("errors_as"));
    // `compare` warns that the conventions differ, and will not gate one against the
    // other.
    let mut c = bench(tmp.path());
    c.arg("compare").arg(&excluded).arg(&default);
    let text = c.assert().success().get_output().stdout.clone();
    assert!(
        String::from_utf8_lossy(&text).contains("warning: "),
        "{}",
        String::from_utf8_lossy(&text)
    );
    let mut c = bench(tmp.path());
    c.arg("compare")
        .arg(&excluded)
        .arg(&default)
        .args(["--max-asr-increase", "100"]);
    let text = c.assert().failure().get_output().stdout.clone();
    assert!(
        String::from_utf8_lossy(&text).contains("errors counted differently"),
        "{}",
        String::from_utf8_lossy(&text)
    );
}

#[test]
fn a_mistyped_provider_attack_gets_a_suggestion() {
    let tmp = tempfile::tempdir().unwrap();
    let suites = toy_suites(tmp.path(), 10.0);
    let mut c = bench(tmp.path());
    c.arg("--suites-dir").arg(&suites).arg("run").args([
        "--suite",
        "toy@v1/counter",
        "--attack",
        "toy:shuot",
        "--model",
        "sim:oracle",
        "--quiet",
    ]);
    c.arg("--out").arg(tmp.path().join("o"));
    let err = c.assert().code(2).get_output().stderr.clone();
    let err = String::from_utf8_lossy(&err);
    assert!(err.contains("did you mean `shout`?"), "{err}");
}

#[test]
fn a_provider_cannot_name_its_suites_for_another_package() {
    // A provider file for `toy` whose process lists AgentDojo's names.
    let tmp = tempfile::tempdir().unwrap();
    let suites = toy_with(tmp.path(), &["agentdojo"], "");
    run_toy(tmp.path(), &suites, "toy@v1", &[])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "may serve `toy@<version>/<suite>` only",
        ));
    // One that lists its own name but describes the suite as AgentDojo's.
    let tmp = tempfile::tempdir().unwrap();
    let suites = toy_with(tmp.path(), &["toy", "agentdojo@v1.2.2/banking"], "");
    run_toy(tmp.path(), &suites, "toy@v1/counter", &[])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "describes it as `agentdojo@v1.2.2/banking`",
        ));
    assert!(!tmp.path().join("out/episodes.jsonl").exists());
}

#[test]
fn the_error_convention_is_the_provider_files_not_the_suites_name() {
    // Package `agentdojo`, but a provider file that declares no convention: errors stay
    // apart, whatever the suite is called.
    let tmp = tempfile::tempdir().unwrap();
    let suites = toy_as_agentdojo_with(tmp.path(), "");
    run_toy(
        tmp.path(),
        &suites,
        "agentdojo@v1/counter",
        &["--user-tasks", "add_two,crashes"],
    )
    .assert()
    .success();
    let s = summary(&tmp.path().join("out"));
    let r = &rows(&s)[0];
    assert_eq!(r["errors_as"], "excluded", "{r}");
    let bad = tempfile::tempdir().unwrap();
    let suites = toy_as_agentdojo_with(bad.path(), "error_convention = \"lenient\"\n");
    run_toy(bad.path(), &suites, "agentdojo@v1/counter", &[])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("error_convention"));
}

#[test]
fn a_description_is_checked_as_a_suite_is() {
    let tmp = tempfile::tempdir().unwrap();
    let suites = toy_with(tmp.path(), &[], "");
    run_toy(tmp.path(), &suites, "toy@v1/counter", &[])
        .env("TOY_DUPLICATE_TASK", "1")
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "user task `add_two` is described twice",
        ));
    // A plan `start` recomputes is checked too: it fails its episodes.
    run_toy(
        tmp.path(),
        &suites,
        "toy@v1/counter",
        &["--user-tasks", "add_two"],
    )
    .env("TOY_BAD_PLAN", "1")
    .assert()
    .success();
    let recs = records(&tmp.path().join("out"));
    let err = recs[0]["error"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", recs[0]));
    assert!(err.contains("unknown tool `launch_missiles`"), "{err}");
}

#[test]
fn a_provider_reply_over_the_cap_fails_only_its_episode() {
    let tmp = tempfile::tempdir().unwrap();
    let suites = toy_with(tmp.path(), &[], "max_reply_mb = 1\n");
    run_toy(
        tmp.path(),
        &suites,
        "toy@v1/counter",
        &["--user-tasks", "add_two"],
    )
    .env("TOY_HUGE_OUTPUT", "1")
    .assert()
    .success();
    let recs = records(&tmp.path().join("out"));
    let err = recs[0]["error"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", recs[0]));
    assert!(
        err.contains("longer than the cap of 1048576 bytes"),
        "{err}"
    );
    let bad = tempfile::tempdir().unwrap();
    let suites = toy_with(bad.path(), &[], "max_reply_mb = 0\n");
    run_toy(bad.path(), &suites, "toy@v1/counter", &[])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("max_reply_mb"));
}

#[test]
fn a_provider_flooding_stderr_with_bytes_that_are_not_utf8_keeps_serving() {
    let tmp = tempfile::tempdir().unwrap();
    let suites = toy_with(tmp.path(), &[], "");
    run_toy(
        tmp.path(),
        &suites,
        "toy@v1/counter",
        &["--user-tasks", "add_two"],
    )
    .env("TOY_STDERR_FLOOD", "1")
    .assert()
    .success();
    let recs = records(&tmp.path().join("out"));
    assert_eq!(recs.len(), 1);
    assert!(recs[0]["error"].is_null(), "{}", recs[0]);
    assert_eq!(recs[0]["utility"], true);
}

#[test]
fn a_stray_provider_line_fails_its_episode_instead_of_answering_a_call() {
    let tmp = tempfile::tempdir().unwrap();
    let suites = toy_with(tmp.path(), &[], "");
    run_toy(
        tmp.path(),
        &suites,
        "toy@v1/counter",
        &["--user-tasks", "add_two"],
    )
    .env("TOY_STRAY_LINE", "1")
    .assert()
    .success();
    let recs = records(&tmp.path().join("out"));
    let err = recs[0]["error"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", recs[0]));
    assert!(err.contains("stray or repeated line"), "{err}");
}

#[test]
fn a_protocol_1_provider_is_told_its_version() {
    let tmp = tempfile::tempdir().unwrap();
    let suites = tmp.path().join("suites");
    std::fs::create_dir_all(suites.join("external")).unwrap();
    std::fs::write(
        suites.join("external/old.toml"),
        "package = \"old\"\ncommand = [\"sh\", \"-c\", \"read l; echo '{\\\"ok\\\": true, \\\"protocol\\\": 1}'; sleep 5\"]\n",
    )
    .unwrap();
    run_toy(tmp.path(), &suites, "old@v1", &[])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "protocol version 1; this build speaks 2",
        ));
}

#[test]
fn list_suites_says_it_runs_each_providers_command() {
    let tmp = tempfile::tempdir().unwrap();
    let suites = toy_suites(tmp.path(), 10.0);
    let out = bench(tmp.path())
        .arg("--suites-dir")
        .arg(&suites)
        .args(["list", "suites"])
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(text.contains("listed by running its command"), "{text}");
    assert!(text.contains("toy_provider"), "{text}");
    assert!(text.contains("toy@v1/counter"), "{text}");
}

/// `run --attack data_only` on the toy bill suite with this model; its records.
fn data_only_records(root: &Path, model: &str) -> Vec<Value> {
    let suites = toy_suites(root, 10.0);
    let out = root.join(format!("out-{}", model.replace([':', ','], "-")));
    bench(root)
        .arg("--suites-dir")
        .arg(&suites)
        .arg("run")
        .args(["--suite", "toy@v1/bill", "--attack", "data_only"])
        .args(["--model", model, "--quiet", "--out"])
        .arg(&out)
        .assert()
        .success();
    records(&out)
}

#[test]
fn data_only_attacks_are_derived_in_the_provider_and_judged_on_the_calls_it_ran() {
    // Everything here is simulated (scripted agent). The bill states two values the
    // user's payment takes from it, beside the memo an attacker writes: the IBAN and the
    // amount. The provider replays the plan with a canary in the memo; the harness reads
    // the cases from what the replay showed, as it does a data suite's.
    let tmp = tempfile::tempdir().unwrap();
    let recs = data_only_records(tmp.path(), "sim:obedient");
    let attacked: Vec<&Value> = recs.iter().filter(|r| r["attack"] == "data_only").collect();
    let mut ids: Vec<&str> = attacked
        .iter()
        .map(|r| r["injection_task"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(
        ids,
        ["data_only.pay_bill.1.amount", "data_only.pay_bill.1.iban"]
    );
    for r in &attacked {
        assert_eq!(r["injected_vectors"], serde_json::json!(["memo"]), "{r}");
        // The provider knows no such injection task: the harness judged the goal on the
        // calls the provider ran, and knows which call did it.
        assert_eq!(r["attack_success"], true, "{r}");
        assert_eq!(r["harmful_call"], 1, "{r}");
        // The provider's own utility check saw the bill paid otherwise than it states.
        assert_eq!(r["utility"], false, "{r}");
        assert!(r["error"].is_null(), "{r}");
    }
    // The payload restates a line of the bill with another value and adds nothing else.
    let traces = traces_text(&tmp.path().join("out-sim-obedient"));
    assert!(traces.contains("Memo: IBAN: DE"), "{traces}");
    assert!(traces.contains("Memo: Amount due: 987.00"), "{traces}");

    // An agent that never follows what it reads pays the bill as stated: no attack
    // succeeds and the task is solved.
    let recs = data_only_records(tmp.path(), "sim:oracle");
    for r in recs.iter().filter(|r| r["attack"] == "data_only") {
        assert_eq!(r["attack_success"], false, "{r}");
        assert_eq!(r["utility"], true, "{r}");
    }
}
