//! Every example in a subcommand's `--help` runs as written: `run` and `ablate` through
//! `--dry-run` (nothing is sent, nothing written), `list` and `check-suites` for real,
//! and the commands that read run folders (`report`, `compare`, `merge`, `calibrate`)
//! at least parse: they may fail on the folders the example names, never on its flags.

mod common;
use common::*;

/// The example command lines of `sieve-bench <sub> --help`, without the program name.
fn examples(sub: &str) -> Vec<Vec<String>> {
    let out = bench(std::path::Path::new(env!("CARGO_MANIFEST_DIR")))
        .args([sub, "--help"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{sub} --help");
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines()
        .filter_map(|l| l.trim_start().strip_prefix("sieve-bench "))
        // A shell loop or an elided line (`run ... --wide`) is prose, not a command.
        .filter(|l| !l.contains("...") && !l.contains('$') && !l.contains('&'))
        .map(|l| {
            // `(then merge)` and similar asides follow the command.
            let l = l.split("   (").next().unwrap_or(l);
            l.split_whitespace().map(str::to_string).collect()
        })
        .collect()
}

#[test]
fn every_help_example_runs_or_parses() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().unwrap();
    let mut seen = 0;
    for sub in [
        "run",
        "ablate",
        "check-suites",
        "list",
        "report",
        "merge",
        "calibrate",
        "compare",
    ] {
        for args in examples(sub) {
            assert_eq!(args[0], sub, "{args:?}");
            seen += 1;
            let mut c = bench(root);
            c.args(&args);
            match sub {
                "run" | "ablate" => {
                    c.arg("--dry-run");
                    let out = c.output().unwrap();
                    assert!(
                        out.status.success(),
                        "{args:?}: {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
                "list" | "check-suites" => {
                    let out = c.output().unwrap();
                    assert!(
                        out.status.success(),
                        "{args:?}: {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
                _ => {
                    c.current_dir(tmp.path());
                    let out = c.output().unwrap();
                    let err = String::from_utf8_lossy(&out.stderr);
                    // clap's usage errors print the usage line; the command's own do not.
                    assert!(!err.contains("Usage:"), "{args:?} does not parse: {err}");
                }
            }
        }
    }
    assert!(seen >= 15, "only {seen} examples found");
}
