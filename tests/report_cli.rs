//! Reports through the binary: tables that fit the terminal, command-line order.

mod common;
use common::*;

/// The default table of the full matrix at a 100-column terminal: every line fits, so
/// the terminal wraps nothing. One user task and one injection task per suite keep it
/// quick; names and labels (what makes a table wide) are those of the full run.
#[test]
fn default_table_of_the_full_matrix_fits_100_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let out = bench(tmp.path())
        .env("COLUMNS", "100")
        .args([
            "run",
            "--suite",
            "all",
            "--attack",
            "all",
            "--defense",
            "none,sieve",
        ])
        .args([
            "--user-tasks",
            "user_task_0",
            "--injection-tasks",
            "injection_task_0",
        ])
        .arg("--out")
        .arg(tmp.path().join("r"))
        .assert()
        .success();
    let table = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    for line in table.lines() {
        assert!(
            line.chars().count() <= 100,
            "wraps at 100 columns: {line:?}"
        );
    }
    // The essentials are all there, the model is named once, above the table.
    let header = table.lines().find(|l| l.starts_with("Suite")).unwrap();
    for col in [
        "Attack", "Defense", "n", "ASR %", "UA %", "BU %", "Err %", "Tok/ep", "Calls/ep",
    ] {
        assert!(header.contains(col), "{col} missing from {header:?}");
    }
    assert_eq!(table.matches("sim:obedient").count(), 1, "{table}");

    // --wide shows every column (wider than the terminal, by request).
    let wide = bench(tmp.path())
        .env("COLUMNS", "100")
        .args(["report", "--wide"])
        .arg(tmp.path().join("r"))
        .assert()
        .success();
    let wide = String::from_utf8(wide.get_output().stdout.clone()).unwrap();
    let header = wide.lines().find(|l| l.starts_with("Suite")).unwrap();
    for col in ["W-ASR %", "EDS %", "Esc %", "Judge/ep", "Bypass", "×none"] {
        assert!(header.contains(col), "--wide lacks {col}: {header:?}");
    }
    assert!(wide.contains(" ["), "--wide shows intervals");
}

#[test]
fn rows_follow_the_command_line_and_columns_pick() {
    let tmp = tempfile::tempdir().unwrap();
    let out = bench(tmp.path())
        .env("COLUMNS", "100")
        .args([
            "run",
            "--suite",
            "slack,banking",
            "--attack",
            "tools,important",
        ])
        .args(["--defense", "sieve,none", "--columns", "asr,w_asr"])
        .args([
            "--user-tasks",
            "user_task_0",
            "--injection-tasks",
            "injection_task_0",
        ])
        .arg("--out")
        .arg(tmp.path().join("r"))
        .assert()
        .success();
    let table = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let labels: Vec<String> = table
        .lines()
        .skip_while(|l| !l.starts_with('─'))
        .skip(1)
        .take_while(|l| !l.starts_with("  "))
        .filter(|l| !l.starts_with('┈'))
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        labels,
        [
            "slack tool_knowledge sieve",
            "slack tool_knowledge none",
            "slack important_instructions sieve",
            "slack important_instructions none",
            "banking tool_knowledge sieve",
            "banking tool_knowledge none",
            "banking important_instructions sieve",
            "banking important_instructions none",
            "all tool_knowledge sieve",
            "all tool_knowledge none",
            "all important_instructions sieve",
            "all important_instructions none",
        ],
        "{table}"
    );
    let header = table.lines().find(|l| l.starts_with("Suite")).unwrap();
    assert!(
        header.contains("W-ASR %") && !header.contains("UA %"),
        "{header}"
    );
    // `report` keeps the run's order.
    let again = bench(tmp.path())
        .args(["report", "--columns", "asr"])
        .arg(tmp.path().join("r"))
        .assert()
        .success();
    let again = String::from_utf8(again.get_output().stdout.clone()).unwrap();
    let first = again
        .lines()
        .skip_while(|l| !l.starts_with('─'))
        .nth(1)
        .unwrap();
    assert!(
        first.starts_with("slack") && first.contains("sieve"),
        "{again}"
    );
    // A mistyped column is named with a suggestion, exit 2.
    bench(tmp.path())
        .args(["report", "--columns", "w_asrr"])
        .arg(tmp.path().join("r"))
        .assert()
        .code(2)
        .stderr(predicates::str::contains("did you mean `w_asr`"));
}
