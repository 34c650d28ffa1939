//! `ablate`: runs `none`, `audit` and every SIEVE variant on the same episodes, and
//! prints the ablation table: one row per defense with ASR, W-ASR, BU, UA, EDS, escalation
//! rate, judge calls, tokens and API calls per episode, each with its difference from
//! `sieve` (the `full` variant). Also written as CSV, JSON and Markdown.
//!
//! It is one `run` with several defenses, so it resumes like `run` does.

use super::run::{args::RunArgs, config::RunConfig, summary::RunReport};
use super::{CliError, Paths};
use crate::aggregate::metrics::AttackLabel;
use crate::defense::DefenseSpec;
use crate::report::columns::{Better, Column, Grid, Show, Value};
use crate::report::formats;
use crate::report::text::TextOptions;
use serde::Serialize;
use std::fmt::Write;
use std::path::PathBuf;

/// `ablate`'s options: every `run` option, plus the variants to compare.
#[derive(clap::Args, Clone, Debug, Default, PartialEq)]
pub struct AblateArgs {
    /// Everything `run` takes; the ablation chooses the defenses itself.
    #[command(flatten)]
    pub run: RunArgs,
    /// Only these SIEVE variants (comma-separated; `full` is always run as the reference).
    #[arg(long, value_delimiter = ',')]
    pub variants: Option<Vec<String>>,
    /// Sensitivity sweeps, each `<setting>=<from>:<to>:<step>` with setting `threshold`,
    /// `w_sem`, `w_causal`, `w_prov` or `w_risk` (a weight is set and the others share the
    /// rest in proportion). One `sieve@<setting>=<x>` row per point, and the
    /// security-utility curve in `sweep.md` / `sweep.csv`. Repeatable.
    #[arg(long)]
    pub sweep: Vec<String>,
}

/// A `--sweep` that does not parse.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error("--sweep `{0}`: expected <setting>=<from>:<to>:<step>")]
    Form(String),
    #[error("--sweep `{0}`: needs from <= to and step > 0")]
    Range(String),
    #[error("--sweep `{0}`: {1} points; at most 101")]
    TooMany(String, usize),
    #[error("--sweep `{spec}`: {why}")]
    Setting {
        spec: String,
        why: crate::defense::sieve::config::SieveConfigError,
    },
}

/// One sweep: a setting and its points, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Sweep {
    pub setting: String,
    pub points: Vec<f64>,
}

impl Sweep {
    /// Parses `threshold=0.3:0.7:0.05` (inclusive; the last point is kept when float
    /// steps land within 1e-9 of it).
    pub fn parse(spec: &str) -> Result<Sweep, SweepError> {
        let bad = || SweepError::Form(spec.to_string());
        let (setting, range) = spec.split_once('=').ok_or_else(bad)?;
        let nums: Vec<f64> = range
            .split(':')
            .map(|x| x.trim().parse::<f64>().map_err(|_| bad()))
            .collect::<Result<_, _>>()?;
        let [from, to, step] = nums[..] else {
            return Err(bad());
        };
        if step.is_nan() || step <= 0.0 || to < from {
            return Err(SweepError::Range(spec.to_string()));
        }
        let n = ((to - from) / step + 1e-9).floor() as usize;
        if n > 100 {
            return Err(SweepError::TooMany(spec.to_string(), n + 1));
        }
        let points: Vec<f64> = (0..=n)
            .map(|k| ((from + k as f64 * step) * 1e6).round() / 1e6)
            .collect();
        let setting = setting.trim().to_string();
        // Validates the setting and the range through the defense's own parser.
        for p in &points {
            crate::defense::sieve::config::Override::parse(&format!("{setting}={p}")).map_err(
                |why| SweepError::Setting {
                    spec: spec.to_string(),
                    why,
                },
            )?;
        }
        Ok(Sweep { setting, points })
    }

    /// The defense of each point.
    pub fn defenses(&self) -> Vec<DefenseSpec> {
        self.points
            .iter()
            .map(|p| DefenseSpec::point(REFERENCE, &self.setting, *p))
            .collect()
    }
}

pub use crate::report::ablation::{Ablation, AblationRow, FOOTNOTES, REFERENCE, grid, rows};

/// The terminal table, fitted to `opts` like `run`'s.
pub fn table(a: &Ablation, opts: &TextOptions) -> Result<String, crate::report::ReportError> {
    crate::report::text::render(&grid(a), opts)
}

/// `ablation.md`.
pub fn markdown(a: &Ablation) -> String {
    let mut out = String::from("# SIEVE ablation\n\n");
    let mut g = formats::readable(&grid(a));
    g.title = format!("Model {}", a.model);
    out.push_str(&formats::markdown(&g));
    out
}

/// `ablation.csv`: the ablation table's grid as every CSV is written (rates as
/// fractions, intervals as `_lo`/`_hi` fields).
pub fn csv(a: &Ablation) -> Result<String, csv::Error> {
    formats::csv(&grid(a))
}

/// One point of a security-utility curve (headline rows only).
#[derive(Clone, Debug, Serialize)]
pub struct CurvePoint {
    pub value: f64,
    pub asr: Option<f64>,
    pub ua: Option<f64>,
    pub bu: Option<f64>,
    pub escalation_rate: Option<f64>,
    /// ASR on the provenance-bypass tasks' own row.
    pub bypass_asr: Option<f64>,
}

/// A sweep's curve, with the direction ASR and UA actually moved.
#[derive(Clone, Debug, Serialize)]
pub struct Curve {
    pub setting: String,
    pub attack: String,
    pub points: Vec<CurvePoint>,
}

/// `up`, `down`, `flat` or `not monotone`, for a sequence along the sweep.
pub fn direction(values: &[f64]) -> &'static str {
    let eps = 1e-12;
    let up = values.windows(2).all(|w| w[1] >= w[0] - eps);
    let down = values.windows(2).all(|w| w[1] <= w[0] + eps);
    match (up, down) {
        (true, true) => "flat",
        (true, false) => "never falls",
        (false, true) => "never rises",
        (false, false) => "not monotone",
    }
}

/// The curve of one sweep, from the ablation rows of its points (the first headline
/// attack).
pub fn curve(s: &Sweep, rows: &[AblationRow]) -> Curve {
    let attack = rows
        .iter()
        .find(|r| !r.bypass)
        .map_or(String::new(), |r| r.attack.clone());
    let bypass_name = AttackLabel {
        attack: attack.clone(),
        bypass: true,
    }
    .to_string();
    let points = s
        .points
        .iter()
        .zip(s.defenses())
        .map(|(v, d)| {
            let d = d.to_string();
            let row = rows.iter().find(|r| r.defense == d && r.attack == attack);
            let bypass = rows
                .iter()
                .find(|r| r.defense == d && r.bypass && r.attack == bypass_name);
            CurvePoint {
                value: *v,
                asr: row.and_then(|r| r.asr),
                ua: row.and_then(|r| r.ua),
                bu: row.and_then(|r| r.bu),
                escalation_rate: row.and_then(|r| r.escalation_rate),
                bypass_asr: bypass.and_then(|r| r.asr),
            }
        })
        .collect();
    Curve {
        setting: s.setting.clone(),
        attack,
        points,
    }
}

/// The places a sweep's values need to be written exactly (at most six).
fn places(values: impl Iterator<Item = f64> + Clone) -> usize {
    (0..6)
        .find(|&d| {
            let scale = 10f64.powi(d as i32);
            values
                .clone()
                .all(|v| ((v * scale).round() - v * scale).abs() < 1e-6)
        })
        .unwrap_or(6)
}

/// A point of a curve, with the curve it belongs to.
type PointOf<'c> = (&'c Curve, &'c CurvePoint);

/// The columns of a sweep's points: the setting and attack when `keys` (one grid of
/// every curve), then the value and the figures.
fn curve_columns<'c>(keys: bool, decimals: usize) -> Vec<Column<'c, PointOf<'c>>> {
    let rate = |id: &str, title: &str, doc: &str, better, pick: fn(&CurvePoint) -> Option<f64>| {
        Column::figure(
            id,
            title,
            doc,
            Show::Default,
            move |(_, p): &PointOf<'c>| Value::rate(pick(p), None),
        )
        .better(better)
    };
    let mut out = Vec::new();
    if keys {
        out.push(Column::key(
            "setting",
            "Setting",
            "The swept setting.",
            |(c, _): &PointOf<'c>| c.setting.clone(),
        ));
        out.push(Column::key(
            "attack",
            "Attack",
            "The headline attack of the curve.",
            |(c, _): &PointOf<'c>| c.attack.clone(),
        ));
    }
    out.push(Column::figure(
        "value",
        "Value",
        "The setting's value at this point.",
        Show::Key,
        move |(_, p): &PointOf<'c>| Value::Num {
            v: p.value,
            decimals,
        },
    ));
    out.extend([
        rate("asr", "ASR %", "Attack success rate.", Better::Lower, |p| {
            p.asr
        }),
        rate("ua", "UA %", "Utility under attack.", Better::Higher, |p| {
            p.ua
        }),
        rate("bu", "BU %", "Benign utility.", Better::Higher, |p| p.bu),
        rate(
            "escalation_rate",
            "Esc %",
            "Proposed calls sent to the judge ÷ proposed calls.",
            Better::Lower,
            |p| p.escalation_rate,
        ),
        rate(
            "bypass_asr",
            "Bypass-task ASR %",
            "ASR of the provenance-bypass tasks at this point.",
            Better::Lower,
            |p| p.bypass_asr,
        ),
    ]);
    out
}

/// The points of `curves` as one grid (with their setting and attack when `keys`), in
/// their order: the sweeps' one table definition for `sweep.md` and `sweep.csv`.
fn curve_grid(curves: &[Curve], keys: bool) -> Grid {
    let points: Vec<PointOf<'_>> = curves
        .iter()
        .flat_map(|c| c.points.iter().map(move |p| (c, p)))
        .collect();
    let decimals = places(points.iter().map(|(_, p)| p.value));
    let mut g = Grid::build(
        "sweep",
        "SIEVE sensitivity sweeps",
        curve_columns(keys, decimals),
        &points,
        |(c, _)| format!("{}\u{1f}{}", c.setting, c.attack),
    );
    g.in_order = true;
    g
}

/// `sweep.md`: one table per sweep and the direction each figure moved.
pub fn sweep_markdown(a: &Ablation, curves: &[Curve]) -> String {
    use crate::escape::markdown as md;
    let mut out = String::from("# SIEVE sensitivity sweeps\n\n");
    if let Some(n) = &a.note {
        writeln!(out, "> **{}**\n", md(n)).unwrap();
    }
    writeln!(out, "Model: {}\n", md(&a.model)).unwrap();
    for c in curves {
        let mut g = curve_grid(std::slice::from_ref(c), false);
        g.title = format!("{} ({})", c.setting, c.attack);
        g.columns[0].title = c.setting.clone();
        out.push_str(&formats::markdown(&g));
        let seq = |f: fn(&CurvePoint) -> Option<f64>| -> Vec<f64> {
            c.points.iter().filter_map(f).collect()
        };
        writeln!(
            out,
            "\nAs {} rises, ASR {} and UA {}.\n",
            c.setting,
            direction(&seq(|p| p.asr)),
            direction(&seq(|p| p.ua))
        )
        .unwrap();
    }
    out
}

/// `sweep.csv`: every point of every sweep, with its setting and attack, as every CSV
/// is written (rates as fractions).
pub fn sweep_csv(curves: &[Curve]) -> Result<String, csv::Error> {
    formats::csv(&curve_grid(curves, true))
}

/// What `ablate` produced.
pub struct AblateReport {
    pub run: RunReport,
    pub ablation: Ablation,
}

/// The defenses an ablation runs, in table order.
pub fn defenses(
    config: &crate::defense::sieve::config::SieveConfig,
    only: Option<&[String]>,
) -> Result<Vec<String>, CliError> {
    for v in only.unwrap_or_default() {
        config.variant(v)?;
    }
    let first = &config.variants[0].name;
    let mut out = vec![
        "none".to_string(),
        "audit".to_string(),
        REFERENCE.to_string(),
    ];
    for v in &config.variants {
        if &v.name == first {
            continue;
        }
        if only.is_none_or(|o| o.contains(&v.name)) {
            out.push(format!("sieve:{}", v.name));
        }
    }
    Ok(out)
}

/// Default output directory: a function of the command line, so reruns resume.
pub fn default_out(a: &AblateArgs) -> PathBuf {
    let mut id = super::run::args::default_run_id(&RunArgs {
        defense: "ablate".into(),
        ..a.run.clone()
    });
    if let Some(v) = &a.variants {
        id.push_str(&format!("__only-{}", v.join("-")));
    }
    a.run.results_dir.join(id)
}

/// What an ablation runs: the run resolved with its defenses and folder, the defense
/// order and the sweeps.
pub struct AblationConfig {
    pub config: RunConfig,
    pub order: Vec<String>,
    pub sweeps: Vec<Sweep>,
}

/// Resolves an ablation: its flags into one [`RunConfig`] (through `run`'s one
/// resolution), then the defenses it compares, named from the resolved SIEVE config,
/// and its folder: what `ablate` executes and `ablate --dry-run` estimates.
pub async fn resolve(paths: &Paths, args: &AblateArgs) -> Result<AblationConfig, CliError> {
    if args.run.defense != RunArgs::default().defense {
        return Err(CliError::bad_input(
            "ablate chooses its defenses (none, audit, sieve and its variants); use --variants to pick variants, or `run --defense` for others",
        ));
    }
    if args.run.weights.is_some() {
        return Err(CliError::bad_input(
            "ablate compares the configured weight sets; --weights would rename the reference row. Add a variant to the SIEVE config instead",
        ));
    }
    let sweeps: Vec<Sweep> = args
        .sweep
        .iter()
        .map(|s| Sweep::parse(s))
        .collect::<Result<_, _>>()
        .map_err(|e| CliError::bad_input(e.to_string()))?;
    // A misspelt variant is refused before any suite is loaded and proved.
    let early = super::run::config::defense_options(paths, args.run.sieve_config.as_deref(), None)?;
    defenses(
        early.sieve_config.as_deref().expect("always set"),
        args.variants.as_deref(),
    )?;
    let config = super::run::config::resolve(paths, &args.run).await?;
    let sieve = config.options.sieve_config.clone().expect("always set");
    let mut order = defenses(&sieve, args.variants.as_deref())?;
    for s in &sweeps {
        for d in s.defenses() {
            let d = d.to_string();
            if !order.contains(&d) {
                order.push(d);
            }
        }
    }
    let mut config = config.with_defenses(&order.join(","))?;
    config.out = args.run.out.clone().unwrap_or_else(|| default_out(args));
    Ok(AblationConfig {
        config,
        order,
        sweeps,
    })
}

/// Runs the ablation and writes `ablation.{csv,json,md}` next to the run's files.
pub async fn ablate(paths: &Paths, args: AblateArgs) -> Result<AblateReport, CliError> {
    let AblationConfig {
        config,
        order,
        sweeps,
    } = resolve(paths, &args).await?;
    let out = config.out.clone();
    let mut report = super::run::execute(config).await?;
    let simulated = report.summary.simulated;
    let mut ablation_rows = rows(&report.summary.rows, &order);
    // The pairs come from run's one read of the folder's records: run keeps them when it
    // runs more than two defenses, and an ablation always runs none, audit and sieve.
    let records = report
        .pairs
        .take()
        .expect("run keeps the pair table of more than two defenses");
    crate::report::ablation::pair_with_reference(&mut ablation_rows, &records, |base, new| {
        args.run
            .error_policy()
            .for_suites(base.iter().chain(new).map(|(_, o)| o.own))
    });
    let footnotes = crate::report::ablation::footnotes(&ablation_rows);
    let ablation = Ablation {
        simulated,
        note: crate::report::simulated_note(&report.summary.rows),
        // The resolved name, which states the scripted roles' knobs.
        model: report
            .summary
            .rows
            .first()
            .map_or_else(|| args.run.models.model.clone(), |r| r.model.clone()),
        rows: ablation_rows,
        footnotes,
    };
    let write = |name: &str, text: String| {
        std::fs::write(out.join(name), text).map_err(|e| {
            CliError::failed(format!("cannot write {}: {e}", out.join(name).display()))
        })
    };
    write(
        "ablation.json",
        serde_json::to_string_pretty(&ablation).expect("json") + "\n",
    )?;
    write(
        "ablation.csv",
        csv(&ablation).map_err(|e| CliError::failed(e.to_string()))?,
    )?;
    write("ablation.md", markdown(&ablation))?;
    if !sweeps.is_empty() {
        let curves: Vec<Curve> = sweeps.iter().map(|s| curve(s, &ablation.rows)).collect();
        write("sweep.md", sweep_markdown(&ablation, &curves))?;
        write(
            "sweep.csv",
            sweep_csv(&curves).map_err(|e| CliError::failed(e.to_string()))?,
        )?;
    }
    Ok(AblateReport {
        run: report,
        ablation,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeps_parse_into_inclusive_points_and_buildable_defenses() {
        let s = Sweep::parse("threshold=0.3:0.7:0.05").unwrap();
        assert_eq!(s.points.len(), 9);
        assert_eq!((s.points[0], s.points[8]), (0.3, 0.7));
        assert_eq!(s.points[1], 0.35);
        for d in s.defenses() {
            let name = d.to_string();
            assert_eq!(crate::defense::build(&name).unwrap().name(), name);
            assert_eq!(crate::defense::DefenseSpec::parse(&name), d);
        }
        let w = Sweep::parse("w_causal=0.1:0.9:0.2").unwrap();
        assert_eq!(w.points, vec![0.1, 0.3, 0.5, 0.7, 0.9]);
        for bad in [
            "threshold",
            "threshold=0.3:0.7",
            "threshold=0.7:0.3:0.1",
            "threshold=0.3:0.7:0",
            "w_foo=0.1:0.2:0.1",
            "threshold=0.5:1.5:0.5",
        ] {
            assert!(Sweep::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(direction(&[0.3, 0.2, 0.2, 0.1]), "never rises");
        assert_eq!(direction(&[0.1, 0.2, 0.15]), "not monotone");
        assert_eq!(direction(&[0.1, 0.1]), "flat");
    }

    #[test]
    fn ablation_runs_every_variant_after_the_baselines() {
        let c = crate::defense::sieve::config::SieveConfig::builtin();
        let all = defenses(&c, None).unwrap();
        assert_eq!(&all[..3], &["none", "audit", "sieve"]);
        assert!(all.contains(&"sieve:no-causal".to_string()));
        assert!(all.contains(&"sieve:layer1-only".to_string()));
        assert_eq!(all.len(), 3 + c.variants.len() - 1);
        let some = defenses(&c, Some(&["no-sem".to_string()])).unwrap();
        assert_eq!(some, vec!["none", "audit", "sieve", "sieve:no-sem"]);
        assert!(defenses(&c, Some(&["no-such".to_string()])).is_err());
        // Every name the ablation uses builds.
        for d in all {
            crate::defense::build(&d).unwrap();
        }
    }
}

#[cfg(test)]
mod end_to_end {
    use super::*;

    #[tokio::test]
    async fn an_unknown_variant_is_refused_before_any_suite_is_read() {
        // No suite exists under this home: the variant is what the refusal names.
        let home = tempfile::tempdir().unwrap();
        let paths = Paths::resolve(None, None, Some(home.path().to_path_buf()));
        let args = AblateArgs {
            run: RunArgs::default(),
            variants: Some(vec!["no-such-variant".into()]),
            sweep: Vec::new(),
        };
        let Err(e) = resolve(&paths, &args).await else {
            panic!("an unknown variant resolved");
        };
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("no-such-variant"), "{e}");
    }
}
