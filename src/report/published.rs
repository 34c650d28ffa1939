//! Published AgentDojo results beside a run's own (`report --reference published`).
//!
//! The data file `reference/agentdojo-published.csv` holds figures from AgentDojo's
//! leaderboard and the defense papers, one row per (defense, model, benchmark version,
//! attack) with its source; a figure quoted from a secondary source says so. A run's rows
//! of AgentDojo's own suites (`agentdojo@<version>/…`) under the package's own attack
//! (`agentdojo:<name>`) get, after them, every published row of that attack whose
//! `defense` names the run's defense. The published rows are labelled as such and kept
//! apart: never pooled, ranked or starred with the run's, in a table of their own and as
//! hollow points in the HTML report's figure.

use super::ReportError;
use super::columns::{Column, Grid, Show, Value};
use crate::aggregate::Aggregate;
use crate::aggregate::metrics::{ALL_SUITES, Row};
use crate::attack::PROVIDER_ATTACK_SEP;
use crate::external::{is_external_selector, package_of};
use serde::Deserialize;

/// The package whose published results `reference/agentdojo-published.csv` holds.
const AGENTDOJO_PACKAGE: &str = "agentdojo";

/// Whether a row's suite is one of AgentDojo's own (`agentdojo@<version>/<suite>`), the
/// suites published figures were measured on. Only this table's pairing goes by the name;
/// how errors count comes from the provider file.
fn is_agentdojo_suite(suite: &str) -> bool {
    is_external_selector(suite) && package_of(suite) == AGENTDOJO_PACKAGE
}

/// The shipped data file, and where it lives in the repository.
pub const PUBLISHED: &str = include_str!("../../reference/agentdojo-published.csv");
pub const PUBLISHED_FILE: &str = "reference/agentdojo-published.csv";
/// `--reference` value naming the shipped file.
pub const PUBLISHED_NAME: &str = "published";

/// AgentDojo's four suites, which its published figures pool.
pub const AGENTDOJO_SUITES: [&str; 4] = ["banking", "slack", "travel", "workspace"];

/// One published result. Rates are percentages as the source gives them.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Published {
    /// The defenses of this harness the row stands beside, `|`-separated; a name ending
    /// in `*` stands for every defense name it begins (`melon:*`: MELON with any options).
    /// Empty when no defense here is the published one.
    pub defense: String,
    /// The defense as the source names it.
    pub as_published: String,
    /// The model as the source names it (a dated snapshot when it gives one).
    pub model: String,
    /// AgentDojo's benchmark version; empty when the source does not say.
    pub version: String,
    /// `all` (AgentDojo's four suites pooled) or `subset`.
    pub suites: String,
    /// AgentDojo's attack name (`important_instructions`), or what the source pooled.
    pub attack: String,
    pub bu: Option<f64>,
    pub ua: Option<f64>,
    pub asr: Option<f64>,
    pub source: String,
    /// Quoted from a secondary source, not checked against the paper's table.
    pub secondary: bool,
    pub note: String,
}

impl Published {
    /// Whether this row stands beside the run's defense `defense`.
    pub fn stands_beside(&self, defense: &str) -> bool {
        self.defense
            .split('|')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .any(|p| match p.strip_suffix('*') {
                Some(prefix) => defense.len() > prefix.len() && defense.starts_with(prefix),
                None => p == defense,
            })
    }

    /// The attack label a run's rows carry for this row's attack.
    pub fn run_attack(&self) -> String {
        format!("{AGENTDOJO_PACKAGE}{PROVIDER_ATTACK_SEP}{}", self.attack)
    }

    /// The benchmark version and the suites the figures pool, as the table shows them.
    fn benchmark(&self) -> String {
        let version = if self.version.is_empty() {
            "unstated"
        } else {
            &self.version
        };
        match self.suites.as_str() {
            "all" => format!("{version} (4 suites)"),
            _ => format!("{version} (a subset)"),
        }
    }

    fn cited(&self) -> String {
        if self.secondary {
            format!("{} [2nd]", self.source)
        } else {
            self.source.clone()
        }
    }
}

/// A reference file read and checked.
#[derive(Clone, Debug)]
pub struct References {
    /// Where the rows came from, for notes and errors.
    pub file: String,
    pub rows: Vec<Published>,
}

/// Reads `--reference`: `published` (the shipped file) or a CSV file of the same columns.
pub fn load(spec: &str) -> Result<References, ReportError> {
    if spec == PUBLISHED_NAME {
        return parse(PUBLISHED_FILE, PUBLISHED);
    }
    let text = std::fs::read_to_string(spec).map_err(|source| ReportError::ReadReference {
        spec: spec.to_string(),
        source,
    })?;
    parse(spec, &text)
}

/// Parses and checks a reference file; errors name the file, the row and the field.
pub fn parse(file: &str, text: &str) -> Result<References, ReportError> {
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let mut rows = Vec::new();
    for (i, rec) in reader.deserialize::<Published>().enumerate() {
        // Row numbers as a spreadsheet shows them: the header is line 1.
        let line = i + 2;
        let p = rec.map_err(|e| ReportError::Malformed(format!("{file}: row {line}: {e}")))?;
        let bad = |field: &str, why: String| {
            ReportError::Malformed(format!(
                "{file}: row {line} ({}): field `{field}`: {why}",
                p.as_published
            ))
        };
        for (field, v) in [("as_published", &p.as_published), ("source", &p.source)] {
            if v.trim().is_empty() {
                return Err(bad(field, "is empty".into()));
            }
        }
        if !matches!(p.suites.as_str(), "all" | "subset") {
            return Err(bad("suites", format!("`{}`: use all or subset", p.suites)));
        }
        for (field, v) in [("bu", p.bu), ("ua", p.ua), ("asr", p.asr)] {
            if let Some(v) = v
                && !(0.0..=100.0).contains(&v)
            {
                return Err(bad(field, format!("{v} is not a percentage in [0, 100]")));
            }
        }
        if p.bu.is_none() && p.ua.is_none() && p.asr.is_none() {
            return Err(bad(
                "bu",
                "the row has no figure (bu, ua and asr are empty)".into(),
            ));
        }
        rows.push(p);
    }
    Ok(References {
        file: file.to_string(),
        rows,
    })
}

/// Who a row of the table speaks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    Run,
    Published,
}

/// One row of the table: a run's pooled row or a published one.
#[derive(Clone, Debug)]
pub struct BesideRow {
    pub origin: Origin,
    pub defense: String,
    pub model: String,
    pub benchmark: String,
    pub attack: String,
    /// Fractions in [0, 1], with intervals for the run's rows.
    pub asr: Option<f64>,
    pub asr_ci: Option<[f64; 2]>,
    pub ua: Option<f64>,
    pub ua_ci: Option<[f64; 2]>,
    pub bu: Option<f64>,
    pub bu_ci: Option<[f64; 2]>,
    pub n_attacked: Option<u64>,
    /// The run's utility floors (a do-nothing and a read-only agent), when measured;
    /// published rows state none.
    pub floors: Option<sieve_record::Floors>,
    pub source: String,
    pub note: String,
}

impl BesideRow {
    fn of_run(r: &Row, benchmark: String) -> BesideRow {
        BesideRow {
            origin: Origin::Run,
            defense: r.defense.clone(),
            model: r.model.clone(),
            benchmark,
            attack: r.attack.clone(),
            asr: r.asr,
            asr_ci: r.asr_ci,
            ua: r.ua,
            ua_ci: r.ua_ci,
            bu: r.bu,
            bu_ci: r.bu_ci,
            n_attacked: Some(r.n_attacked),
            floors: r.floors,
            source: if r.simulated {
                "this run (simulated)".into()
            } else {
                "this run".into()
            },
            note: String::new(),
        }
    }

    fn of_published(p: &Published) -> BesideRow {
        let pct = |v: Option<f64>| v.map(|x| x / 100.0);
        BesideRow {
            origin: Origin::Published,
            defense: p.as_published.clone(),
            model: if p.model.is_empty() {
                "(not stated)".into()
            } else {
                p.model.clone()
            },
            benchmark: p.benchmark(),
            floors: None,
            // The run's label for the same attack, so one attack reads as one.
            attack: p.run_attack(),
            asr: pct(p.asr),
            asr_ci: None,
            ua: pct(p.ua),
            ua_ci: None,
            bu: pct(p.bu),
            bu_ci: None,
            n_attacked: None,
            source: p.cited(),
            note: p.note.clone(),
        }
    }
}

/// The run's rows of AgentDojo's suites beside the published rows that match them.
pub struct Beside {
    pub grid: Grid,
    pub rows: Vec<BesideRow>,
}

/// The `agentdojo@<version>` families of the summary's suites, each with its suites.
fn families(summary_rows: &[Row]) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for r in summary_rows {
        if r.suite == ALL_SUITES || !is_agentdojo_suite(&r.suite) {
            continue;
        }
        let family = r.suite.split('/').next().unwrap_or(&r.suite).to_string();
        match out.iter_mut().find(|(f, _)| *f == family) {
            Some((_, suites)) if !suites.contains(&r.suite) => suites.push(r.suite.clone()),
            Some(_) => {}
            None => out.push((family, vec![r.suite.clone()])),
        }
    }
    out
}

/// Builds the table. `summary_rows` (in report order) name the defenses, models and
/// attacks; the run's rows pool each family's suites per attack label, as the summary's
/// `all` row does.
pub fn beside(aggregate: &Aggregate, summary_rows: &[Row], refs: &References) -> Beside {
    let mut dm: Vec<(&str, &str)> = Vec::new();
    for r in summary_rows {
        if !dm.contains(&(&r.defense, &r.model)) {
            dm.push((&r.defense, &r.model));
        }
    }
    let attacks = aggregate.labels_of(summary_rows);
    let families = families(summary_rows);
    let mut rows = Vec::new();
    let mut defenses: Vec<&str> = Vec::new();
    for (d, _) in &dm {
        if !defenses.contains(d) {
            defenses.push(d);
        }
    }
    for attack in &attacks {
        for defense in &defenses {
            let matching: Vec<&Published> = refs
                .rows
                .iter()
                .filter(|p| p.run_attack() == attack.to_string() && p.stands_beside(defense))
                .collect();
            if matching.is_empty() {
                continue;
            }
            let before = rows.len();
            for (family, suites) in &families {
                for (_, model) in dm.iter().filter(|(d, _)| d == defense) {
                    let reached = |suite: &str| {
                        summary_rows.iter().any(|r| {
                            r.suite == suite
                                && r.attack == attack.to_string()
                                && r.defense == *defense
                                && r.model == *model
                        })
                    };
                    let keep = |k: &crate::aggregate::Atom| {
                        suites.contains(&k.suite)
                            && if k.attacked {
                                k.label.as_ref() == Some(attack)
                            } else {
                                reached(&k.suite)
                            }
                    };
                    if let Some(r) = aggregate.pooled_row(family, attack, defense, model, keep) {
                        rows.push(BesideRow::of_run(&r, run_benchmark(family, suites)));
                    }
                }
            }
            // Published rows only beside a run row of theirs.
            if rows.len() > before {
                rows.extend(matching.into_iter().map(BesideRow::of_published));
            }
        }
    }
    let grid = grid(&rows, refs, &families);
    Beside { grid, rows }
}

/// The run's version and suites, as the table shows them (`v1.2.2 (banking, slack)`).
fn run_benchmark(family: &str, suites: &[String]) -> String {
    let version = family.split_once('@').map_or(family, |(_, v)| v);
    let names: Vec<&str> = suites
        .iter()
        .map(|s| s.rsplit('/').next().unwrap_or(s))
        .collect();
    if AGENTDOJO_SUITES.iter().all(|s| names.contains(s)) {
        format!("{version} (4 suites)")
    } else {
        format!("{version} ({})", names.join(", "))
    }
}

/// The columns of the table beside published results; `cited` numbers the sources.
fn beside_columns<'a>(cited: &'a [&'a str]) -> Vec<Column<'a, BesideRow>> {
    type C<'a> = Column<'a, BesideRow>;
    let number = move |r: &BesideRow| {
        cited
            .iter()
            .position(|s| *s == r.source)
            .filter(|_| r.origin == Origin::Published)
            .map(|i| i + 1)
    };
    let text = |id: &'static str,
                title: &'static str,
                doc: &'static str,
                f: fn(&BesideRow) -> String| { C::key(id, title, doc, f) };
    vec![
        text(
            "origin",
            "Origin",
            "`this run` or `published` (a figure from the data file, never pooled or ranked with the run's).",
            |r| match r.origin {
                Origin::Run => "this run".into(),
                Origin::Published => "published".into(),
            },
        ),
        text(
            "defense",
            "Defense",
            "The run's defense, or the defense as the source names it.",
            |r| r.defense.clone(),
        ),
        text("model", "Model", "The agent's model.", |r| r.model.clone()),
        text(
            "benchmark",
            "AgentDojo",
            "AgentDojo's benchmark version and the suites the figures pool.",
            |r| r.benchmark.clone(),
        ),
        text("attack", "Attack", "The attack.", |r| r.attack.clone()),
        C::figure(
            "asr",
            "ASR %",
            "Targeted attack success.",
            Show::Default,
            |r| Value::rate(r.asr, r.asr_ci),
        )
        .with_interval(),
        C::figure("ua", "UA %", "Utility under attack.", Show::Default, |r| {
            Value::rate(r.ua, r.ua_ci)
        })
        .with_interval(),
        C::figure("bu", "BU %", "Benign utility.", Show::Default, |r| {
            Value::rate(r.bu, r.bu_ci)
        })
        .with_interval(),
        C::figure(
            "floor_no_op",
            "No-op",
            "User tasks a do-nothing agent solves by the suites' own checks (the run's measurement; docs/agentdojo.md gives each version's).",
            Show::Default,
            |r| {
                r.floors.map_or(Value::Missing, |f| Value::Part {
                    k: f.no_op.solved as u64,
                    n: f.no_op.tasks as u64,
                })
            },
        )
        .drop_if_empty(),
        C::figure(
            "floor_read_only",
            "Read-only",
            "User tasks a read-only agent solves (the reference plan's reads, then its answer).",
            Show::Extra,
            |r| {
                r.floors.map_or(Value::Missing, |f| Value::Part {
                    k: f.read_only.solved as u64,
                    n: f.read_only.tasks as u64,
                })
            },
        )
        .drop_if_empty(),
        C::figure(
            "n_attacked",
            "n",
            "The run's attacked episodes.",
            Show::File,
            |r| r.n_attacked.map_or(Value::Missing, Value::Count),
        ),
        C::figure(
            "ref",
            "Ref",
            "The published row's source, numbered as under the table.",
            Show::Default,
            move |r| number(r).map_or(Value::Missing, |n| Value::Text(format!("[{n}]"))),
        ),
        C::figure(
            "source",
            "Source",
            "Where the figures come from; [2nd] = quoted from a secondary source.",
            Show::File,
            |r| Value::Text(r.source.clone()),
        ),
        C::figure(
            "note",
            "Note",
            "What the source says about the figure.",
            Show::Extra,
            |r| {
                if r.note.is_empty() {
                    Value::Missing
                } else {
                    Value::Text(r.note.clone())
                }
            },
        ),
    ]
}

fn grid(rows: &[BesideRow], refs: &References, families: &[(String, Vec<String>)]) -> Grid {
    // Published sources numbered by first appearance: `[n]` in the table, spelled out
    // in a note (and whole in the `source` field of files).
    let mut cited: Vec<&str> = Vec::new();
    for r in rows.iter().filter(|r| r.origin == Origin::Published) {
        if !cited.contains(&r.source.as_str()) {
            cited.push(&r.source);
        }
    }
    // Every row its own group: nothing is marked best across origins.
    let mut g = Grid::build(
        "reference",
        "Beside published AgentDojo results",
        beside_columns(&cited),
        rows,
        |r| format!("{}|{}|{}", r.defense, r.model, r.source),
    );
    g.footnotes.push(format!(
        "Published rows come from {} as their sources give them (percentages of AgentDojo's own suites, pooled as the AgentDojo column says); they are shown beside this run's rows of the same attack and defense, never pooled, ranked or starred with them. [2nd] = quoted from a secondary source.",
        refs.file
    ));
    // A note line (above the table, in LaTeX's caption), so every format names them.
    if !cited.is_empty() {
        let listed: Vec<String> = cited
            .iter()
            .enumerate()
            .map(|(i, s)| format!("[{}] {s}", i + 1))
            .collect();
        g.notes.push(format!("sources: {}", listed.join("; ")));
    }
    if rows.is_empty() {
        let mut named: Vec<&str> = refs
            .rows
            .iter()
            .flat_map(|p| p.defense.split('|'))
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .collect();
        named.sort();
        named.dedup();
        g.footnotes.push(format!(
            "No published row matches these runs: the rows are for AgentDojo's own suites (agentdojo@…) under the package's own attack (agentdojo:<name>) and the defenses {}.",
            named.join(", ")
        ));
    }
    for (family, suites) in families {
        if suites.len() < AGENTDOJO_SUITES.len() {
            g.footnotes.push(format!(
                "This run's {family} rows cover {} of AgentDojo's four suites; published figures pool all four unless they say a subset.",
                suites.len()
            ));
        }
    }
    g
}

/// `docs/published.md`: how `--reference` works and every row of the shipped file,
/// generated from it so the page cannot drift from the data.
pub fn doc() -> String {
    let refs = parse(PUBLISHED_FILE, PUBLISHED).expect("the shipped file parses");
    let mut out = format!(
        "# Published AgentDojo results\n\n\
         Generated from `{PUBLISHED_FILE}` (a test keeps this page in step; regenerate with\n\
         `UPDATE_DOCS=1 cargo test --lib published_doc`).\n\n\
         `report --reference published` sets these figures beside a run's rows of AgentDojo's own\n\
         suites (`agentdojo@<version>/…`, served by `adapters/agentdojo`) in a table of their own\n\
         (`reference`) and as hollow points in the HTML report's figure. A run row pools the\n\
         run's suites of one AgentDojo version under one attack label; a published row joins it\n\
         when its `attack` is the run's `agentdojo:<attack>` (the package's own rendering, not\n\
         this project's template of the same name) and its `defense` names the run's defense\n\
         (`|` separates names; a name ending in `*` stands for every name it begins, so\n\
         `melon:*` is MELON with any options and `pi_detector:http=*` the DeBERTa classifier\n\
         served over HTTP, not the keyword list). Published rows are never pooled, ranked or\n\
         starred with the run's, and say which benchmark version, suites, model and source they\n\
         have. `--reference <file.csv>` reads a file of the same columns instead (a lab's own\n\
         earlier runs, say); a bad row is refused naming the file, the row and the field.\n\n\
         Columns: `defense` (this harness's names, empty when none is the published defense),\n\
         `as_published`, `model` (a dated snapshot when the source gives one), `version`\n\
         (AgentDojo's benchmark version; empty when not stated), `suites` (`all` four pooled, or\n\
         `subset`), `attack`, `bu`, `ua`, `asr` (percent; empty when the source gives none),\n\
         `source`, `secondary` (quoted from a secondary source, not checked against the paper's\n\
         table: `[2nd]` below and in reports), `note`.\n\n\
         Rows whose attack pools several attacks, or whose defense has no counterpart here, are\n\
         kept for the record but never match a run. Not tabulated: figures without a point value\n\
         (PromptArmor's \"ASR below 1%\") and results on other benchmarks (AgentLure).\n\n\
         | defense (here) | as published | model | version | suites | attack | BU % | UA % | ASR % | source |\n\
         |---|---|---|---|---|---|--:|--:|--:|---|\n"
    );
    let num = |v: Option<f64>| v.map_or("–".to_string(), |x| x.to_string());
    let or_dash = |s: &str| {
        if s.is_empty() {
            "–".to_string()
        } else {
            s.to_string()
        }
    };
    for p in &refs.rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {}{} |\n",
            or_dash(&p.defense.replace('|', " or ")),
            p.as_published,
            or_dash(&p.model),
            or_dash(&p.version),
            p.suites,
            or_dash(&p.attack),
            num(p.bu),
            num(p.ua),
            num(p.asr),
            p.cited(),
            if p.note.is_empty() {
                String::new()
            } else {
                format!("; {}", p.note)
            }
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_doc_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/published.md");
        let want = doc();
        if std::env::var_os("UPDATE_DOCS").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "docs/published.md is stale: UPDATE_DOCS=1 cargo test --lib published_doc"
        );
    }

    #[test]
    fn the_shipped_file_parses_and_every_row_cites_its_source() {
        let refs = load(PUBLISHED_NAME).unwrap();
        assert!(refs.rows.len() >= 20, "{}", refs.rows.len());
        for p in &refs.rows {
            assert!(!p.source.is_empty(), "{p:?}");
        }
        // The leaderboard's undefended GPT-4o row, as published.
        let none = refs
            .rows
            .iter()
            .find(|p| p.defense == "none" && p.model == "gpt-4o-2024-05-13")
            .unwrap();
        assert_eq!(
            (none.bu, none.ua, none.asr),
            (Some(69.07), Some(50.08), Some(47.69))
        );
    }

    #[test]
    fn defense_patterns_match_exactly_or_with_options() {
        let p = |defense: &str| Published {
            defense: defense.into(),
            as_published: "x".into(),
            model: String::new(),
            version: String::new(),
            suites: "all".into(),
            attack: "important_instructions".into(),
            bu: None,
            ua: None,
            asr: Some(1.0),
            source: "s".into(),
            secondary: false,
            note: String::new(),
        };
        assert!(p("melon|melon:*").stands_beside("melon"));
        assert!(p("melon|melon:*").stands_beside("melon:threshold=0.9"));
        assert!(!p("melon|melon:*").stands_beside("melonx"));
        assert!(p("pi_detector:http=*").stands_beside("pi_detector:http=http://x"));
        assert!(!p("pi_detector:http=*").stands_beside("pi_detector"));
        assert!(!p("pi_detector:http=*").stands_beside("pi_detector:lexical"));
        assert!(p("sieve|sieve:full").stands_beside("sieve:full"));
        assert!(!p("sieve|sieve:full").stands_beside("sieve:no-causal"));
        assert!(!p("").stands_beside(""));
        assert!(!p("melon:*").stands_beside("melon"), "options required");
        assert_eq!(p("none").run_attack(), "agentdojo:important_instructions");
    }

    #[test]
    fn bad_rows_name_the_file_row_and_field() {
        let head =
            "defense,as_published,model,version,suites,attack,bu,ua,asr,source,secondary,note\n";
        let e = parse(
            "f.csv",
            &format!("{head}none,x,m,v1,all,a,,,120,src,false,\n"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("f.csv: row 2 (x): field `asr`"), "{e}");
        let e = parse("f.csv", &format!("{head}none,x,m,v1,all,a,1,2,3,,false,\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("field `source`"), "{e}");
        let e = parse(
            "f.csv",
            &format!("{head}none,x,m,v1,some,a,1,2,3,s,false,\n"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("field `suites`"), "{e}");
        let e = parse("f.csv", &format!("{head}none,x,m,v1,all,a,,,,s,false,\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no figure"), "{e}");
        let e = parse("f.csv", "defense,wrong\nnone,x\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("f.csv: row 2"), "{e}");
    }
}
