//! LaTeX that fits any run (issue 40 item 1): reports of random run shapes (1-30
//! defenses, 1-12 attacks with long names, 1-8 suites, long model names, with and
//! without `--wide`) compile with pdflatex with no overfull box, every split table's
//! parts hold at least three figure columns and at most ten, and the README's paper run
//! compiles the same way. pdflatex missing: the compile is skipped (failed when
//! SIEVE_BENCH_REQUIRE_TOOLS is set), the structure still checked.

use crate::common::*;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use sieve_bench::aggregate::metrics::{AttackLabel, Row};
use sieve_bench::report::ablation;
use sieve_bench::report::formats::{self, MAX_DATA_COLUMNS, MIN_DATA_COLUMNS};
use sieve_bench::report::tables::{self, Views};
use std::path::Path;

const ATTACK_PARTS: [&str; 8] = [
    "important_instructions",
    "tool_knowledge",
    "ignore_previous",
    "injecagent",
    "context_aware_lure_sample",
    "system_message_spoof",
    "library:results/search-banking-keyword_filter-0",
    "direct",
];
const DEFENSES: [&str; 16] = [
    "none",
    "audit",
    "sieve",
    "spotlight:datamark",
    "sandwich:reminder",
    "pi_detector:judge",
    "sieve:no-sem",
    "sieve:layer1-only",
    "sieve@threshold=0.35",
    "melon:threshold=0.5",
    "tool_filter",
    "task_shield",
    "ipiguard",
    "drift",
    "exec:python3 examples/keyword_plugin.py --block-tool send_money",
    "keyword_filter",
];
const MODELS: [&str; 3] = [
    "sim:obedient",
    "openai:Qwen/Qwen2.5-7B-Instruct@local-qwen+prompted",
    "sim:p=0.35,varied,judge_auc=0.9",
];

fn rate(rng: &mut ChaCha8Rng) -> (Option<f64>, Option<[f64; 2]>) {
    let v: f64 = rng.random_range(0.0..1.0);
    let lo = (v - rng.random_range(0.0..0.2)).max(0.0);
    let hi = (v + rng.random_range(0.0..0.2)).min(1.0);
    (Some(v), Some([lo, hi]))
}

fn row(rng: &mut ChaCha8Rng, suite: &str, attack: &AttackLabel, defense: &str, model: &str) -> Row {
    let (asr, asr_ci) = rate(rng);
    let (ua, ua_ci) = rate(rng);
    let (bu, bu_ci) = rate(rng);
    Row {
        suite: suite.into(),
        attack: attack.to_string(),
        bypass: attack.bypass,
        defense: defense.into(),
        model: model.into(),
        simulated: model.starts_with("sim"),
        n_clean: rng.random_range(1..400),
        n_attacked: rng.random_range(1..4000),
        asr,
        asr_ci,
        w_asr: asr.map(|a| a * 0.9),
        ua,
        ua_ci,
        bu,
        bu_ci,
        eds: Some(rng.random_range(-0.5..1.0)),
        episodes: 100,
        error_rate: Some(rng.random_range(0.0..0.1)),
        seeds: 1,
        escalation_rate: Some(rng.random_range(0.0..1.0)),
        judge_calls_per_episode: rng.random_range(0.0..3.0),
        tokens_per_episode: rng.random_range(1000.0..250_000.0),
        calls_per_episode: rng.random_range(1.0..40.0),
        token_overhead_vs_none: Some(rng.random_range(0.5..4.0)),
        ..Row::default()
    }
}

/// One random run shape, as its paper tables.
fn shape(seed: u64) -> (Vec<sieve_bench::report::Grid>, String) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let n_def = rng.random_range(1..=30);
    let n_att = rng.random_range(1..=12);
    let n_suites = rng.random_range(1..=8);
    let model = MODELS[rng.random_range(0..MODELS.len())];
    let defenses: Vec<String> = (0..n_def)
        .map(|i| match DEFENSES.get(i) {
            Some(d) => d.to_string(),
            None => format!("sieve@threshold=0.{i:02}"),
        })
        .collect();
    let attacks: Vec<AttackLabel> = (0..n_att)
        .map(|i| {
            let base = ATTACK_PARTS[i % ATTACK_PARTS.len()];
            let bypass = |attack: String| AttackLabel {
                attack,
                bypass: true,
            };
            match i / ATTACK_PARTS.len() {
                0 if i % 3 == 2 => bypass(base.to_string()),
                0 => AttackLabel::headline(base),
                k => bypass(format!("{base}_v{k}")),
            }
        })
        .collect();
    let suites: Vec<String> = (0..n_suites)
        .map(|i| {
            [
                "dojo-style/banking",
                "dojo-style/slack",
                "dojo-style/travel",
                "dojo-style/workspace",
                "lure-style/shopping",
                "lure-style/recruiting",
                "agentdojo@v1.2.2/workspace",
                "external:my-own-suite-with-a-long-name",
            ][i]
                .to_string()
        })
        .collect();
    let mut summary = Vec::new();
    for s in suites.iter().chain(std::iter::once(&"all".to_string())) {
        for a in &attacks {
            for d in &defenses {
                summary.push(row(&mut rng, s, a, d, model));
            }
        }
    }
    let all = AttackLabel::headline("all");
    let per_defense: Vec<Row> = defenses
        .iter()
        .map(|d| row(&mut rng, "all", &all, d, model))
        .collect();
    let per_suite: Vec<Row> = suites
        .iter()
        .flat_map(|s| defenses.iter().map(move |d| (s, d)))
        .map(|(s, d)| row(&mut rng, s, &all, d, model))
        .collect();
    let per_attack: Vec<Row> = attacks
        .iter()
        .flat_map(|a| defenses.iter().map(move |d| (a, d)))
        .map(|(a, d)| row(&mut rng, "all", a, d, model))
        .collect();
    let views = Views {
        per_defense,
        per_suite,
        per_attack,
        attacks: attacks.clone(),
        note: None,
    };
    let ablation = ablation::report_table(&summary, &views.per_defense, true, None, 1);
    let grids = tables::paper_tables(&summary, &views, &[], ablation);
    (
        grids,
        format!("{n_def} defenses, {n_att} attacks, {n_suites} suites, model {model}"),
    )
}

/// Every table split into parts holds at least three figure columns a part (when it has
/// them) and at most ten.
fn assert_parts(latex: &str, what: &str) {
    let mut parts: std::collections::BTreeMap<String, Vec<usize>> = Default::default();
    let mut spec = None;
    for line in latex.lines() {
        for env in ["\\begin{tabular}{", "\\begin{longtable}{"] {
            if let Some(rest) = line.split(env).nth(1) {
                spec = Some(rest.split('}').next().unwrap().to_string());
            }
        }
        if let Some(label) = line.split("\\label{tab:").nth(1) {
            let label = label.split('}').next().unwrap();
            let id = label.trim_end_matches(|c: char| c.is_ascii_digit() || c == '-');
            let id = if id.is_empty() { label } else { id };
            let figures = spec
                .take()
                .expect("a spec before its label")
                .matches('r')
                .count();
            parts.entry(id.to_string()).or_default().push(figures);
        }
    }
    assert!(!parts.is_empty(), "{what}: no table");
    for (id, figures) in &parts {
        assert!(
            figures.iter().all(|&f| f <= MAX_DATA_COLUMNS),
            "{what}: a part of {id} has more than {MAX_DATA_COLUMNS} figures: {figures:?}"
        );
        if figures.len() > 1 {
            assert!(
                figures.iter().all(|&f| f >= MIN_DATA_COLUMNS),
                "{what}: {id} splits into a part of fewer than {MIN_DATA_COLUMNS} figures: {figures:?}"
            );
        }
    }
}

/// Compiles `latex` (twice: longtable settles its widths on the second pass) and returns
/// the log; `None` without pdflatex.
fn compile(dir: &Path, latex: &str) -> Option<String> {
    if !tool_present("pdflatex") {
        return None;
    }
    std::fs::write(dir.join("tables.tex"), latex).unwrap();
    std::fs::write(
        dir.join("paper.tex"),
        "\\documentclass{article}\n\\usepackage{booktabs,longtable}\n\\extrafloats{200}\n\\begin{document}\nText with a footnote of its own.\\footnote{The author's.}\n\\input{tables.tex}\n\\end{document}\n",
    )
    .unwrap();
    for _ in 0..2 {
        let out = std::process::Command::new("pdflatex")
            .args([
                "-no-shell-escape",
                "-interaction=nonstopmode",
                "-halt-on-error",
                "paper.tex",
            ])
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "pdflatex failed:\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    Some(std::fs::read_to_string(dir.join("paper.log")).unwrap())
}

/// The overfull boxes of a log, with the lines LaTeX prints after each.
fn overfull(log: &str) -> Vec<String> {
    let lines: Vec<&str> = log.lines().collect();
    lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.contains("Overfull \\hbox"))
        .map(|(i, _)| lines[i..(i + 3).min(lines.len())].join("\n"))
        .collect()
}

#[test]
fn reports_of_random_run_shapes_compile_with_no_overfull_box() {
    let note = "SIMULATED: the agent, the planner and the judge are the scripted sim model (sim:obedient); no figure here measures a model.".to_string();
    for seed in 0..6u64 {
        let (grids, what) = shape(seed);
        let wide = seed % 2 == 1;
        let what = format!("seed {seed}: {what}{}", if wide { ", --wide" } else { "" });
        let latex = formats::latex_report(&grids, &[&note], true, wide);
        assert_parts(&latex, &what);
        assert_eq!(
            latex.matches("\\textsuperscript{*}\\,SIMULATED").count(),
            1,
            "{what}: the note once"
        );
        assert!(!latex.contains("\\footnotemark"), "{what}");
        if wide {
            assert!(latex.contains("95\\% interval below"), "{what}");
            assert!(latex.contains("{\\scriptsize ["), "{what}: no interval");
        }
        let tmp = tempfile::tempdir().unwrap();
        let Some(log) = compile(tmp.path(), &latex) else {
            continue;
        };
        let bad = overfull(&log);
        assert!(
            bad.is_empty(),
            "{what}: {} overfull box(es):\n{}",
            bad.len(),
            bad.join("\n\n")
        );
    }
}

/// The README's paper run (`run --suite all --attack important --defense
/// none,sieve,audit`), its full LaTeX report and its main table, compiles with no
/// overfull box, the main table in one float; `--wide` adds intervals and counts and still fits. The tables' shapes
/// (rows per suite and defense, columns per attack and metric) do not depend on how many
/// user tasks run, so two per suite stand for all (the whole run takes minutes in a
/// debug build).
#[test]
fn the_readme_paper_run_compiles_with_no_overfull_box() {
    let tmp = tempfile::tempdir().unwrap();
    let paper = tmp.path().join("paper");
    run(
        tmp.path(),
        &paper,
        &[
            "--suite",
            "all",
            "--attack",
            "important",
            "--defense",
            "none,sieve,audit",
            "--user-tasks",
            "user_task_0,user_task_1",
        ],
    );
    for extra in [&[][..], &["--tables", "main"][..], &["--wide"][..]] {
        let out = bench(tmp.path())
            .args(["report", "--format", "latex"])
            .args(extra)
            .arg(&paper)
            .assert()
            .success();
        let latex = String::from_utf8(out.get_output().stdout.clone()).unwrap();
        let what = format!("report --format latex {}", extra.join(" "));
        std::fs::write(tmp.path().join(format!("paper{}.tex", extra.len())), &latex).unwrap();
        assert_parts(&latex, &what);
        if extra.is_empty() {
            // Three defenses, nine figures: the main table is one float (it was three
            // parts, one of a lone column, then two), its attack names shortened with a
            // legend under it.
            assert!(latex.contains("\\label{tab:main}"), "{latex}");
            assert!(!latex.contains("\\label{tab:main-3}"), "{latex}");
            assert!(!latex.contains("\\label{tab:main-2}"), "{latex}");
            let main = latex
                .split("% Main table")
                .nth(1)
                .and_then(|t| t.split("\\end{table}").next())
                .expect("the main table");
            let legend = main.replace("\\allowbreak{}", "");
            assert!(
                legend.contains(
                    "abbreviated: ii = important\\_instructions; ii+pb = important\\_instructions+provenance\\_bypass"
                ),
                "{main}"
            );
        }
        let dir = tmp.path().join(format!("tex{}", extra.len()));
        std::fs::create_dir_all(&dir).unwrap();
        let Some(log) = compile(&dir, &latex) else {
            return;
        };
        let bad = overfull(&log);
        assert!(
            bad.is_empty(),
            "{what}: {} overfull box(es):\n{}",
            bad.len(),
            bad.join("\n\n")
        );
    }
}
