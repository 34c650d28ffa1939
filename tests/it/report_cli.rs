//! Reports through the binary: tables that fit the terminal, command-line order.

use crate::common::*;
use std::path::Path;

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
        "Attack", "Defense", "ASR %", "W-ASR %", "UA %", "BU %", "EDS %", "Err %", "Tok/ep",
        "Calls/ep",
    ] {
        assert!(header.contains(col), "{col} missing from {header:?}");
    }
    let (summary, per_class) = table
        .split_once("Context-aware samples by vector class and by surface:")
        .expect("--attack all includes the context samples: a per-class table follows");
    assert_eq!(summary.matches("sim:obedient").count(), 1, "{table}");
    assert!(per_class.contains("skill_injection"), "{per_class}");

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

/// Whether `pdflatex` runs here (CI installs it from Debian's texlive packages and
/// requires it).
fn pdflatex() -> bool {
    tool_present("pdflatex")
}

/// Two runs of the same matrix under two agent models, reported together: every format
/// carries both models' rows in one table, and the LaTeX compiles (or, without a TeX
/// engine, has the booktabs structure a paper's preamble expects).
#[test]
fn report_over_two_models_renders_every_format() {
    let tmp = tempfile::tempdir().unwrap();
    let tasks = [
        "--suite",
        "banking,slack",
        "--attack",
        "important",
        "--defense",
        "none,sieve,spotlight",
        "--user-tasks",
        "user_task_0,user_task_1",
        "--injection-tasks",
        "injection_task_0,injection_task_1",
    ];
    for (model, dir) in [("sim:obedient", "a"), ("sim:oracle", "b")] {
        let mut args = tasks.to_vec();
        args.extend(["--model", model]);
        run(tmp.path(), &tmp.path().join(dir), &args);
    }
    let runs = [tmp.path().join("a"), tmp.path().join("b")];
    let render = |format: &str| -> String {
        let file = tmp.path().join(format!("report.{format}"));
        bench(tmp.path())
            .args(["report", "--format", format, "--out"])
            .arg(&file)
            .args(&runs)
            .assert()
            .success();
        std::fs::read_to_string(&file).unwrap()
    };
    for format in ["table", "md", "csv", "json", "latex", "html"] {
        // LaTeX lets names break at their separators (`\allowbreak{}`, invisible).
        let text = render(format).replace("\\allowbreak{}", "");
        for model in ["sim:obedient", "sim:oracle"] {
            assert!(text.contains(model), "{format} lacks {model}:\n{text}");
        }
        assert!(
            text.contains("spotlight") && text.contains("sieve"),
            "{format} lacks a defense:\n{text}"
        );
    }

    // The main table has one row per defense and model, and the files' rates are
    // fractions: the obedient agent's undefended ASR is 1, the oracle's 0.
    let csv = {
        let file = tmp.path().join("main.csv");
        bench(tmp.path())
            .args(["report", "--format", "csv", "--tables", "main", "--out"])
            .arg(&file)
            .args(&runs)
            .assert()
            .success();
        std::fs::read_to_string(file).unwrap()
    };
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header = reader.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name);
    let (defense, model) = (col("defense").unwrap(), col("model").unwrap());
    let asr = col("asr_important_instructions")
        .unwrap_or_else(|| panic!("no per-attack ASR column in {header:?}"));
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 6, "3 defenses × 2 models:\n{csv}");
    let none_asr = |m: &str| -> f64 {
        let r = rows
            .iter()
            .find(|r| &r[defense] == "none" && r[model].starts_with(m))
            .unwrap_or_else(|| panic!("no none row for {m}:\n{csv}"));
        r[asr].parse().unwrap()
    };
    assert_eq!(none_asr("sim:obedient"), 1.0, "{csv}");
    assert_eq!(none_asr("sim:oracle"), 0.0, "{csv}");

    // LaTeX: booktabs structure always; a compiled PDF when a TeX engine is present.
    let latex = render("latex");
    for needle in ["\\toprule", "\\midrule", "\\bottomrule", "\\begin{tabular}"] {
        assert!(latex.contains(needle), "latex lacks {needle}");
    }
    assert_eq!(
        latex.matches("\\begin{table}").count(),
        latex.matches("\\end{table}").count()
    );
    if pdflatex() {
        let doc = tmp.path().join("paper.tex");
        std::fs::write(
            &doc,
            format!(
                "\\documentclass{{article}}\n\\usepackage{{booktabs,longtable}}\n\\extrafloats{{100}}\n\\begin{{document}}\n{latex}\n\\end{{document}}\n"
            ),
        )
        .unwrap();
        let out = std::process::Command::new("pdflatex")
            .args([
                "-no-shell-escape",
                "-interaction=nonstopmode",
                "-halt-on-error",
                "paper.tex",
            ])
            .current_dir(tmp.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "pdflatex failed:\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(tmp.path().join("paper.pdf").exists());
        // Long model names wrap in their column: no table runs past the text width.
        let log = std::fs::read_to_string(tmp.path().join("paper.log")).unwrap();
        assert!(
            !log.contains("Overfull \\hbox"),
            "a table overflows:\n{log}"
        );
    } else {
        eprintln!("no pdflatex here: LaTeX checked by structure only");
    }
}

/// A report over runs of two models has one ablation table: each model's defenses
/// beside their difference from that model's own `sieve` row, never the other's.
#[test]
fn one_ablation_table_compares_each_model_with_its_own_sieve() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = [tmp.path().join("a"), tmp.path().join("b")];
    for (model, dir) in ["sim:obedient", "sim:oracle"].iter().zip(&runs) {
        run(
            tmp.path(),
            dir,
            &[
                "--suite",
                "banking",
                "--defense",
                "none,sieve,sieve:layer1-only",
                "--user-tasks",
                "user_task_0,user_task_1",
                "--injection-tasks",
                "injection_task_0,injection_task_1",
                "--model",
                model,
            ],
        );
    }
    let report = |args: &[&str]| -> String {
        let out = bench(tmp.path())
            .env("COLUMNS", "100")
            .arg("report")
            .args(args)
            .args(&runs)
            .assert()
            .success();
        String::from_utf8(out.get_output().stdout.clone()).unwrap()
    };
    // Every table, each under its heading.
    let all = report(&["--format", "md"]);
    let titles: Vec<&str> = all
        .lines()
        .filter(|l| l.starts_with("## ") && l.contains("Ablation"))
        .collect();
    assert_eq!(titles.len(), 1, "one ablation table:\n{all}");
    assert!(
        titles[0].contains("each model's own sieve"),
        "{}",
        titles[0]
    );

    let csv = report(&["--tables", "ablation", "--format", "csv"]);
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header = reader.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let (model, defense, asr, d_asr) = (col("model"), col("defense"), col("asr"), col("d_asr"));
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 6, "3 defenses × 2 models:\n{csv}");
    let sieve_asr = |m: &str| -> f64 {
        let r = rows
            .iter()
            .find(|r| r[model].starts_with(m) && &r[defense] == "sieve")
            .unwrap_or_else(|| panic!("no sieve row of {m}:\n{csv}"));
        assert_eq!(&r[d_asr], "", "the reference has no Δ");
        r[asr].parse().unwrap()
    };
    let (obedient, oracle) = (sieve_asr("sim:obedient"), sieve_asr("sim:oracle"));
    assert_ne!(obedient, oracle, "the models' sieve rows differ:\n{csv}");
    for r in rows.iter().filter(|r| &r[defense] != "sieve") {
        let own = if r[model].starts_with("sim:obedient") {
            obedient
        } else {
            oracle
        };
        let (v, d): (f64, f64) = (r[asr].parse().unwrap(), r[d_asr].parse().unwrap());
        assert!((d - (v - own)).abs() < 1e-9, "{r:?} against {own}:\n{csv}");
    }
}

/// A table the runs cannot have is refused with the reason that table needs, not
/// another table's.
#[test]
fn a_missing_table_is_refused_with_its_own_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    run(
        tmp.path(),
        &out,
        &["--suite", "banking", "--user-tasks", "user_task_0"],
    );
    for (table, reason) in [
        ("per-class", "--attack context"),
        ("ablation", "several SIEVE variants"),
        ("sweeps", "ablate --sweep"),
    ] {
        bench(tmp.path())
            .args(["report", "--tables", table])
            .arg(&out)
            .assert()
            .code(2)
            .stderr(predicates::str::contains(reason));
    }
}

/// The LaTeX of a report of 24 defenses (every registered defense and their variants)
/// under three attacks, as a paper includes it: every table fits `\textwidth` (wide ones
/// split, their key columns repeated), captions are short, the simulation note is one
/// footnote, and the PDF compiles with no overfull box.
#[test]
fn latex_of_24_defenses_fits_the_text_width() {
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = tmp.path().join("r");
    let defenses = "all,spotlight:tagged,spotlight:datamark,spotlight:base64,sandwich:reminder,pi_detector:judge,sieve:no-sem,sieve:layer1-only,sieve@threshold=0.3,sieve@threshold=0.7,melon:threshold=0.5";
    run(
        tmp.path(),
        &run_dir,
        &[
            "--suite",
            "banking,slack",
            "--attack",
            "important,tools,ignore",
            "--defense",
            defenses,
            "--user-tasks",
            "user_task_0",
            "--injection-tasks",
            "injection_task_0",
        ],
    );
    let file = tmp.path().join("tables.tex");
    bench(tmp.path())
        .args(["report", "--format", "latex", "--out"])
        .arg(&file)
        .arg(&run_dir)
        .assert()
        .success();
    let latex = std::fs::read_to_string(&file).unwrap();
    // The note once, as a footnote; every caption short and marked simulated.
    assert_eq!(latex.matches("SIMULATED: ").count(), 1, "note repeated");
    assert_eq!(
        latex.matches("\\textsuperscript{*}\\,SIMULATED: ").count(),
        1
    );
    assert!(
        !latex.contains("\\footnotemark"),
        "a counted mark in a caption"
    );
    let captions: Vec<&str> = latex
        .lines()
        .filter(|l| l.starts_with("\\caption["))
        .collect();
    assert!(captions.len() >= 8, "{latex}");
    for c in &captions {
        // What the reader sees: break points are invisible.
        let long = c.split_once("]{").unwrap().1.replace("\\allowbreak{}", "");
        assert!(long.len() < 400, "caption too long: {c}");
        assert!(long.contains("simulated roles"), "{c}");
    }
    // The ablation as `ablate` prints it: each figure beside its difference from
    // `sieve`, and the paired p of the ASR difference.
    let ablation = latex
        .split("% Ablation")
        .nth(1)
        .expect("an ablation table (several SIEVE variants ran)");
    assert!(ablation.contains("ASR \\% & $\\Delta$ & p"), "{ablation}");
    // Wide tables are split, each part under the estimated text width.
    assert!(latex.contains("(part 2 of "), "no table was split");
    if !pdflatex() {
        eprintln!("no pdflatex here: LaTeX checked by structure only");
        return;
    }
    std::fs::write(
        tmp.path().join("paper.tex"),
        "\\documentclass{article}\n\\usepackage{booktabs,longtable}\n\\extrafloats{100}\n\\begin{document}\n\\input{tables.tex}\n\\end{document}\n",
    )
    .unwrap();
    for _ in 0..2 {
        // Twice: longtable settles its column widths on the second pass.
        let out = std::process::Command::new("pdflatex")
            .args([
                "-no-shell-escape",
                "-interaction=nonstopmode",
                "-halt-on-error",
                "paper.tex",
            ])
            .current_dir(tmp.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "pdflatex failed:\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    let log = std::fs::read_to_string(tmp.path().join("paper.log")).unwrap();
    assert!(
        !log.contains("Overfull \\hbox"),
        "a table overflows:\n{log}"
    );
    assert!(tmp.path().join("paper.pdf").exists());
}

/// One kind of failure, one exit code, whichever command meets it: a run folder whose
/// `traces.jsonl` is a directory cannot be read by `report` nor appended to by `run`, and
/// both exit 1 (an input/output failure), while a folder that is no run at all is bad
/// input (2). `report` used to exit 2 here and `run` 1.
#[test]
fn an_unreadable_run_folder_exits_alike_from_report_and_run() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    let args = [
        "run",
        "--suite",
        "banking",
        "--attack",
        "important",
        "--defense",
        "none",
        "--shard",
        "0/20",
    ];
    bench(tmp.path())
        .args(args)
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    std::fs::remove_file(out.join("traces.jsonl")).unwrap();
    std::fs::create_dir(out.join("traces.jsonl")).unwrap();
    let report = bench(tmp.path())
        .args(["report", "--format", "html"])
        .arg(&out)
        .assert()
        .code(1);
    let err = String::from_utf8_lossy(&report.get_output().stderr).into_owned();
    assert!(
        err.contains("cannot read") && err.contains("traces.jsonl"),
        "{err}"
    );
    // Resuming appends to the same file: the same kind of failure, the same code.
    let run = bench(tmp.path())
        .args(args)
        .arg("--out")
        .arg(&out)
        .assert()
        .code(1);
    let err = String::from_utf8_lossy(&run.get_output().stderr).into_owned();
    assert!(err.contains("writing results to"), "{err}");
    // Not a run folder at all: bad input.
    bench(tmp.path())
        .arg("report")
        .arg(tmp.path())
        .assert()
        .code(2)
        .stderr(predicates::str::contains("not a run directory"));
}

/// A run's `run.json` is read with the one typed reader: a corrupt one is refused,
/// naming the file, rather than leaving the run out of the settings check (as it used to,
/// so a report could merge runs of different settings); and a setting that differs is
/// named by its path.
#[test]
fn a_corrupt_run_json_is_refused_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    bench(tmp.path())
        .args(["run", "--suite", "banking", "--attack", "important"])
        .args(["--defense", "none", "--shard", "0/20", "--quiet", "--out"])
        .arg(&a)
        .assert()
        .success();
    std::fs::create_dir(&b).unwrap();
    for name in ["episodes.jsonl", "traces.jsonl", "run.json"] {
        std::fs::copy(a.join(name), b.join(name)).unwrap();
    }
    let report = |dirs: &[&Path]| {
        let mut c = bench(tmp.path());
        c.args(["report", "--format", "csv"]).args(dirs);
        c.assert()
    };
    report(&[&a, &b]).success();

    // Another setting: refused, the setting named.
    let manifest = std::fs::read_to_string(b.join("run.json")).unwrap();
    let mut m: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    m["settings"]["max_steps"] = 7.into();
    std::fs::write(b.join("run.json"), m.to_string()).unwrap();
    let err = report(&[&a, &b]).code(2).get_output().stderr.clone();
    let err = String::from_utf8_lossy(&err);
    assert!(
        err.contains("different settings") && err.contains("settings.max_steps: 30 vs 7"),
        "{err}"
    );

    // A corrupt manifest: refused, with its path, alone or beside a good run.
    std::fs::write(b.join("run.json"), &manifest[..manifest.len() / 2]).unwrap();
    let path = b.join("run.json").display().to_string();
    for dirs in [vec![&a, &b], vec![&b]] {
        let dirs: Vec<&Path> = dirs.into_iter().map(|d| d.as_path()).collect();
        let err = report(&dirs).code(2).get_output().stderr.clone();
        let err = String::from_utf8_lossy(&err);
        assert!(
            err.contains(&path) && err.contains("not a manifest"),
            "{err}"
        );
    }
}
