//! Attacker text in every output format: names and traces from a hostile run render as
//! text, never as markup, formulas, commands or control sequences, and never break the
//! structure of a table or a page. The browser half is in `html_report.rs`.

use crate::common::*;
use std::path::Path;

fn report(cwd: &Path, run: &Path, format: &str) -> String {
    let file = cwd.join(format!("report.{format}"));
    bench(cwd)
        .args(["report", "--format", format, "--out"])
        .arg(&file)
        .arg(run)
        .assert()
        .success();
    std::fs::read_to_string(file).unwrap()
}

/// Pipes that separate Markdown cells (a `\|` is text).
fn cell_pipes(line: &str) -> usize {
    let (mut n, mut escaped) = (0, false);
    for c in line.chars() {
        match c {
            '\\' => escaped = !escaped,
            '|' if !escaped => n += 1,
            _ => escaped = false,
        }
        if c == '|' {
            escaped = false;
        }
    }
    n
}

fn assert_markdown_inert(md: &str) {
    for raw in ["<img", "<!--", "<script", "</script", "<b>"] {
        assert!(!md.contains(raw), "raw `{raw}` in Markdown:\n{md}");
    }
    // Every table keeps its header's cell count on each of its lines.
    let mut width = None;
    for line in md.lines() {
        if !line.starts_with('|') {
            width = None;
            continue;
        }
        let n = cell_pipes(line);
        assert_eq!(*width.get_or_insert(n), n, "a cell broke out: {line}");
    }
}

#[test]
fn hostile_names_are_text_in_markdown_csv_latex_json_and_the_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let run = hostile_run(tmp.path());

    // The terminal table.
    let out = bench(tmp.path()).arg("report").arg(&run).assert().success();
    let stdout = out.get_output().stdout.clone();
    for c in [0x1bu8, 0x07] {
        assert!(
            !stdout.contains(&c),
            "a control byte {c:#x} reached the terminal"
        );
    }
    assert!(String::from_utf8_lossy(&stdout).contains("HYPERLINK"));
    // `report` writes only where --out says: the run's own summary files are `run`'s
    // and `merge`'s (`merge` re-renders them from the same writers).
    assert!(!run.join("summary.json").exists());

    let md = report(tmp.path(), &run, "md");
    assert!(md.contains("HYPERLINK"));
    assert_markdown_inert(&md);

    // CSV: no cell a spreadsheet would run as a formula.
    let file = tmp.path().join("report.csv");
    bench(tmp.path())
        .args(["report", "--format", "csv", "--out"])
        .arg(&file)
        .arg(&run)
        .assert()
        .success();
    for csv in [
        report(tmp.path(), &run, "csv"),
        std::fs::read_to_string(&file).unwrap(),
    ] {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(csv.as_bytes());
        let mut texts = 0;
        for record in reader.records() {
            for cell in record.unwrap().iter() {
                if cell.parse::<f64>().is_ok() {
                    continue;
                }
                assert!(
                    !cell.starts_with(['=', '+', '-', '@', '\t', '\r']),
                    "formula cell {cell:?}"
                );
                texts += usize::from(cell.contains("HYPERLINK"));
            }
        }
        assert!(texts > 0, "the suite's name is in the CSV as text:\n{csv}");
    }

    // JSON keeps the names exactly.
    let json: serde_json::Value = serde_json::from_str(&report(tmp.path(), &run, "json")).unwrap();
    assert!(json.to_string().contains("onerror=\\\"document"));

    // LaTeX: no line the text started is live, and no command of the text's runs.
    let latex = report(tmp.path(), &run, "latex");
    for line in latex.lines() {
        assert!(!line.trim_start().starts_with("\\input"), "live: {line}");
    }
    assert!(!latex.contains("\\input{"), "{latex}");
    // Long names wrap at their separators (`\allowbreak{}`), which are not the text's.
    let unwrapped = latex.replace("\\allowbreak{}", "");
    assert!(unwrapped.contains("\\textbackslash{}input\\{/etc/hostname\\}"));
    assert_eq!(
        latex.matches("\\begin{tabular}").count(),
        latex.matches("\\end{tabular}").count()
    );
    if let Some(log) = pdflatex(tmp.path(), &latex) {
        assert!(
            !log.contains("/etc/hostname"),
            "the document read /etc/hostname:\n{log}"
        );
    }
}

/// Compiles `body` with shell escape off; the log, or `None` without pdflatex (CI
/// installs it; set SIEVE_BENCH_REQUIRE_TOOLS=1 to fail instead of skipping).
fn pdflatex(dir: &Path, body: &str) -> Option<String> {
    if !tool_present("pdflatex") {
        return None;
    }
    let doc = dir.join("hostile.tex");
    std::fs::write(
        &doc,
        format!(
            "\\documentclass{{article}}\n\\usepackage{{booktabs}}\n\\begin{{document}}\n{body}\n\\end{{document}}\n"
        ),
    )
    .unwrap();
    let out = std::process::Command::new("pdflatex")
        .args([
            "-no-shell-escape",
            "-interaction=nonstopmode",
            "-halt-on-error",
            "hostile.tex",
        ])
        .current_dir(dir)
        .output()
        .unwrap();
    let log = std::fs::read_to_string(dir.join("hostile.log")).unwrap_or_default();
    assert!(
        out.status.success(),
        "pdflatex failed:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    Some(log)
}
