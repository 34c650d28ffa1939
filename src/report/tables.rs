//! The report's tables as column lists over summary rows: the summary itself, and the
//! paper's views of it (main, per suite, per attack, efficiency by role, why attacks
//! succeed). Each metric is one column here; every format renders these grids.

use super::columns::{Better, Column, Grid, Show, Value};
use crate::aggregate::Aggregate;
use crate::aggregate::metrics::{ALL_SUITES, AttackLabel, BreakdownRow, Rate, Row};
use crate::aggregate::tally::{Kind, Tally};
use crate::defense::{DefenseSpec, SweepPoint};
use sieve_record::Component;

/// The order rows appear in: suites, attacks and defenses as the command line named
/// them (the micro-averaged `all` suite last); names it does not know follow in
/// alphabetical order.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Order {
    /// Suites in command-line order.
    pub suites: Vec<String>,
    /// Attacks in command-line order.
    pub attacks: Vec<String>,
    /// Defenses in command-line order.
    pub defenses: Vec<String>,
}

impl Order {
    /// Appends another run's order, keeping first appearances.
    pub fn extend(&mut self, other: &Order) {
        for (mine, theirs) in [
            (&mut self.suites, &other.suites),
            (&mut self.attacks, &other.attacks),
            (&mut self.defenses, &other.defenses),
        ] {
            for n in theirs {
                if !mine.contains(n) {
                    mine.push(n.clone());
                }
            }
        }
    }

    fn rank(list: &[String], name: &str) -> (usize, String) {
        let i = if name == ALL_SUITES {
            usize::MAX
        } else {
            list.iter().position(|n| n == name).unwrap_or(list.len())
        };
        (i, name.to_string())
    }

    /// Sorts rows: suite, attack, defense, then model as first seen.
    pub fn sort(&self, rows: &mut [Row]) {
        let mut models: Vec<String> = Vec::new();
        for r in rows.iter() {
            if !models.contains(&r.model) {
                models.push(r.model.clone());
            }
        }
        rows.sort_by_cached_key(|r| {
            (
                Self::rank(&self.suites, &r.suite),
                Self::rank(&self.attacks, &r.attack),
                Self::rank(&self.defenses, &r.defense),
                Self::rank(&models, &r.model),
            )
        });
    }
}

/// The error rate with its interval: errored episodes ÷ all episodes of the row.
pub fn error_rate(r: &Row) -> Value {
    Rate::new(r.errors, r.episodes).map_or(Value::Missing, |x| Value::Rate {
        v: x.value,
        ci: Some([x.lo, x.hi]),
    })
}

/// The share of the row's counted episodes with an undecided verdict; missing when none.
pub fn undecided_share(r: &Row) -> Value {
    let n = r.n_clean + r.n_attacked;
    if r.undecided == 0 || n == 0 {
        return Value::Missing;
    }
    Value::Rate {
        v: r.undecided as f64 / n as f64,
        ci: None,
    }
}

/// The range a rate can take over all counted episodes, undecided ones failing or holding
/// (`12.0-15.5`); missing when nothing is undecided.
fn bounds_column<'a>(
    id: &'static str,
    title: &'static str,
    metric: &'static str,
    get: fn(&Row) -> Option<[f64; 2]>,
) -> Column<'a, Row> {
    Column::figure(
        id,
        title,
        format!("With undecided episodes: {metric} over every counted episode with each undecided one failing, then holding (the shown {metric} is over the decided ones)."),
        Show::Extra,
        move |r: &Row| {
            get(r).map_or(Value::Missing, |[lo, hi]| {
                Value::Text(format!("{:.1}-{:.1}", lo * 100.0, hi * 100.0))
            })
        },
    )
    .drop_if_empty()
}

/// One end of a per-seed range, as a rate column for files.
fn seed_end(range: Option<[f64; 2]>, i: usize) -> Value {
    Value::rate(range.map(|r| r[i]), None)
}

/// The identifying columns of a summary row.
fn key_columns<'a>() -> Vec<Column<'a, Row>> {
    keys(&["suite", "attack", "defense", "model"])
}

/// The key columns with these ids, in this order. A model never stands without the
/// roles no LLM played: `model` brings one column per role after it.
fn keys<'a>(ids: &[&str]) -> Vec<Column<'a, Row>> {
    let mut all = all_keys();
    let mut out = Vec::new();
    for id in ids {
        if let Some(i) = all.iter().position(|c| c.spec.id == *id) {
            out.push(all.remove(i));
        }
        if *id == "model" {
            out.extend(role_columns());
        }
    }
    out
}

/// One column per role: how it was played when no LLM played it. A column empty in
/// every row (no scripted role of that kind) is left out. The terminal shows them when
/// there is room (the banner names every role and the rows it touched in any case).
fn role_columns<'a>() -> Vec<Column<'a, Row>> {
    Component::ALL
        .into_iter()
        // The answer judge is always an LLM (`--answer-judge` refuses `sim`).
        .filter(|c| *c != Component::AnswerJudge)
        .map(|c| {
            let name = if c == Component::Embedding {
                "embedder"
            } else {
                c.as_str()
            };
            let mut title = name.to_string();
            title[..1].make_ascii_uppercase();
            Column::figure(
                format!("scripted_{name}"),
                title,
                format!(
                    "How the {name} role was played when no LLM played it: `scripted` (the sim model's own moves), `oracle` (it reads the answer key: reference plans, which calls are injected), `lexical` (word overlap, no model); empty when an LLM played it or the row never used it. The banner says what each knows."
                ),
                Show::Extra,
                move |r: &Row| {
                    crate::aggregate::metrics::role_cell(r, c).map_or(Value::Missing, Value::Text)
                },
            )
            .drop_if_empty()
            .label()
        })
        .collect()
}

fn all_keys<'a>() -> Vec<Column<'a, Row>> {
    vec![
        Column::key(
            "suite",
            "Suite",
            "Suite (`family/name`), or `all`: episodes of every suite pooled (micro-average).",
            |r: &Row| r.suite.clone(),
        ),
        Column::key(
            "attack",
            "Attack",
            "Attack template; `none` for a run without attacks.",
            |r: &Row| r.attack.clone(),
        ),
        Column::key(
            "defense",
            "Defense",
            "Defense as named on the command line; `†` marks a simulated row of a defense whose effect on a real model the scripted agent cannot represent (the footnote says what).",
            defense_label,
        ),
        Column::key(
            "model",
            "Model",
            "The agent's model as resolved (`sim:…` is the scripted agent).",
            |r: &Row| r.model.clone(),
        ),
    ]
}

/// Every column of the summary, in display order.
pub fn summary_columns<'a>() -> Vec<Column<'a, Row>> {
    let mut c = key_columns();
    c.extend([
        Column::figure(
            "simulated",
            "Simulated",
            "true when some role of the row was the scripted `sim` model, not an LLM.",
            Show::File,
            |r: &Row| Value::Text(r.simulated.to_string()),
        ),
        Column::figure(
            "n_attacked",
            "n",
            "Attacked episodes: the denominator of ASR and UA.",
            Show::Extra,
            |r: &Row| Value::Count(r.n_attacked),
        ),
        Column::figure(
            "asr",
            "ASR %",
            "Attack success rate: attacked episodes whose security check held ÷ attacked episodes.",
            Show::Default,
            |r: &Row| Value::rate(r.asr, r.asr_ci),
        )
        .better(Better::Lower)
        .with_interval(),
        Column::figure(
            "w_asr",
            "W-ASR %",
            "Severity-weighted ASR: Σ severity × success ÷ Σ severity over attacked episodes (this project's definition).",
            Show::Default,
            |r: &Row| Value::rate(r.w_asr, None),
        )
        .better(Better::Lower),
        Column::figure(
            "ua",
            "UA %",
            "Utility under attack: attacked episodes whose user task was still solved ÷ attacked episodes.",
            Show::Default,
            |r: &Row| Value::rate(r.ua, r.ua_ci),
        )
        .better(Better::Higher)
        .with_interval(),
        Column::figure(
            "bu",
            "BU %",
            "Benign utility: clean episodes solved ÷ clean episodes.",
            Show::Default,
            |r: &Row| Value::rate(r.bu, r.bu_ci),
        )
        .better(Better::Higher)
        .with_interval(),
        Column::figure(
            "eds",
            "EDS %",
            "Effective defense score: harmonic mean of (1 − ASR) and UA, 0 when either is 0 (this project's definition).",
            Show::Default,
            |r: &Row| Value::rate(r.eds, None),
        )
        .better(Better::Higher),
        Column::figure(
            "floor_no_op",
            "No-op",
            "User tasks of the row's suites a do-nothing agent (no call, no answer) solves by the suites' own checks, of the tasks the run selected: the benign utility a defense gets for nothing (a run measures it; an `all` row sums its suites).",
            // Beside BU where the terminal has room; the paper's metrics come first.
            Show::Extra,
            |r: &Row| {
                r.floors.map_or(Value::Missing, |f| Value::Part {
                    k: f.no_op.solved as u64,
                    n: f.no_op.tasks as u64,
                })
            },
        )
        .drop_if_empty(),
        Column::figure(
            "floor_read_only",
            "Read-only",
            "User tasks a read-only agent solves (the reference plan's reads, none of its writes, then the reference answer): the most a defense that lets no write through can keep.",
            Show::Extra,
            |r: &Row| {
                r.floors.map_or(Value::Missing, |f| Value::Part {
                    k: f.read_only.solved as u64,
                    n: f.read_only.tasks as u64,
                })
            },
        )
        .drop_if_empty(),
        Column::figure(
            "known_defects",
            "Defects",
            "Episodes of the row under a known defect of their benchmark (a broken check or an unwinnable pair, from the suite's known-defects file), scored as the benchmark scores them; --exclude-known-defects leaves them out.",
            Show::Default,
            |r: &Row| {
                if r.known_defects > 0 {
                    Value::Count(r.known_defects)
                } else {
                    Value::Missing
                }
            },
        )
        .drop_if_empty()
        .alert(),
        Column::figure(
            "error_rate",
            "Err %",
            "Errored episodes ÷ all episodes of the row (clean and attacked), with its 95% Wilson interval.",
            Show::Default,
            error_rate,
        )
        .better(Better::Lower)
        .with_interval(),
        Column::figure(
            "undecided",
            "Und %",
            "Counted episodes whose utility or attack verdict the checks' rules left undecided (an answer they cannot read) ÷ counted episodes. ASR, UA and BU are over the decided episodes; the bounds columns say where they lie over all. Absent when every verdict was decided.",
            Show::Default,
            undecided_share,
        )
        .better(Better::Lower)
        .drop_if_empty(),
        bounds_column("asr_bounds", "ASR range %", "ASR", |r| r.asr_bounds),
        bounds_column("ua_bounds", "UA range %", "UA", |r| r.ua_bounds),
        bounds_column("bu_bounds", "BU range %", "BU", |r| r.bu_bounds),
        Column::figure(
            "tokens_per_episode",
            "Tok/ep",
            "Tokens (prompt + completion, every role and embeddings) per episode.",
            Show::Default,
            |r: &Row| Value::tokens(Some(r.tokens_per_episode), r.usage_estimated > 0),
        )
        .better(Better::Lower),
        Column::figure(
            "calls_per_episode",
            "Calls/ep",
            "Model and embedding API calls per episode, every role.",
            Show::Default,
            |r: &Row| Value::num(Some(r.calls_per_episode), 1),
        )
        .better(Better::Lower),
        Column::figure(
            "tokens_per_clean_episode",
            "Tok/clean",
            "Tokens per clean episode: what the defense costs where nothing attacks it (the base of the relative cost).",
            Show::File,
            |r: &Row| Value::tokens(r.tokens_per_clean_episode, r.usage_estimated > 0),
        )
        .better(Better::Lower),
        Column::figure(
            "tokens_per_attacked_episode",
            "Tok/att",
            "Tokens per attacked episode (a defense that stops attacked episodes spends less here, which says nothing of its price).",
            Show::File,
            |r: &Row| Value::tokens(r.tokens_per_attacked_episode, r.usage_estimated > 0),
        ),
        Column::figure(
            "calls_per_clean_episode",
            "Calls/clean",
            "Model and embedding API calls per clean episode, every role.",
            Show::File,
            |r: &Row| Value::num(r.calls_per_clean_episode, 1),
        ),
        Column::figure(
            "calls_per_attacked_episode",
            "Calls/att",
            "Model and embedding API calls per attacked episode, every role.",
            Show::File,
            |r: &Row| Value::num(r.calls_per_attacked_episode, 1),
        ),
        Column::figure(
            "n_clean",
            "n clean",
            "Clean (no attack) episodes: the denominator of BU.",
            Show::Extra,
            |r: &Row| Value::Count(r.n_clean),
        ),
        Column::figure(
            "token_overhead_vs_none",
            "×none",
            "Tokens per clean episode ÷ those of `none` on the same suite, attack and model (every episode when the row has no clean one): a defense that stops attacked episodes does not look cheap for it.",
            Show::Extra,
            |r: &Row| r.token_overhead_vs_none.map_or(Value::Missing, Value::Factor),
        ),
        Column::figure(
            "escalation_rate",
            "Esc %",
            "Proposed tool calls sent to a semantic judge ÷ proposed calls.",
            Show::Extra,
            |r: &Row| Value::rate(r.escalation_rate, None),
        ),
        Column::figure(
            "judge_calls_per_episode",
            "Judge/ep",
            "Judge model calls per episode.",
            Show::Extra,
            |r: &Row| Value::num(Some(r.judge_calls_per_episode), 2),
        ),
        Column::too_many_errors(|r: &Row| r.too_many_errors),
        Column::figure(
            "errors",
            "Err",
            "Errored episodes (their own outcome, outside the rates' denominators; with errors_as agentdojo, context-length errors count inside them as AgentDojo scores them).",
            Show::File,
            |r: &Row| Value::Count(r.errors),
        ),
        Column::figure(
            "episodes",
            "Episodes",
            "All of the row's episodes, errored included: the error rate's n.",
            Show::File,
            |r: &Row| Value::Count(r.episodes),
        ),
        Column::figure(
            "errors_as",
            "Errors as",
            "How errored episodes count in rates: excluded (their own outcome), agentdojo (the errors agentdojo 0.1.35 scores, context-length ones, are utility false and attack succeeded, the rest excluded; the default for AgentDojo's own suites) or mixed (a row pooling both: each episode by its suite's).",
            Show::File,
            |r: &Row| Value::Text(r.errors_as.as_str().into()),
        ),
        Column::figure(
            "seeds",
            "Seeds",
            "Distinct seeds among the row's episodes.",
            Show::Extra,
            |r: &Row| Value::Count(r.seeds),
        ),
        Column::figure(
            "hit_step_limit",
            "Step cap",
            "Episodes that reached --max-steps.",
            Show::Extra,
            |r: &Row| Value::Count(r.hit_step_limit),
        ),
        Column::figure(
            "blocked",
            "Blocked",
            "Tool calls the defense blocked, over all episodes of the row.",
            Show::Extra,
            |r: &Row| Value::Count(r.blocked),
        ),
        Column::figure(
            "asked_user",
            "Asked",
            "Tool calls the defense referred to the user (counted as blocks too).",
            Show::File,
            |r: &Row| Value::Count(r.asked_user),
        ),
        Column::figure(
            "faked",
            "Faked",
            "Tool calls answered with a fake result.",
            Show::File,
            |r: &Row| Value::Count(r.faked),
        ),
        Column::figure(
            "prompt_tokens_per_episode",
            "Prompt tok/ep",
            "Prompt tokens per episode (embedding inputs included).",
            Show::File,
            |r: &Row| Value::tokens(Some(r.prompt_tokens_per_episode), r.usage_estimated > 0),
        ),
        Column::figure(
            "completion_tokens_per_episode",
            "Compl tok/ep",
            "Completion tokens per episode.",
            Show::File,
            |r: &Row| Value::tokens(Some(r.completion_tokens_per_episode), r.usage_estimated > 0),
        ),
        Column::figure(
            "usage_estimated",
            "Usage est.",
            "Episodes in which an LLM endpoint replied without `usage`: their tokens were counted with the local tokenizer (cl100k), so the row's token figures show as `~N`. Absent when every count was reported.",
            Show::File,
            |r: &Row| {
                if r.usage_estimated > 0 {
                    Value::Count(r.usage_estimated)
                } else {
                    Value::Missing
                }
            },
        )
        .drop_if_empty(),
        Column::figure(
            "success_via_layer1",
            "Succ L1",
            "sieve/audit: successful attacks whose harmful call (the one whose effect the security check saw) passed layer 1 (provenance bypass).",
            Show::Extra,
            |r: &Row| r.success_via_layer1.map_or(Value::Missing, Value::Count),
        ),
        Column::figure(
            "success_via_adjudicator",
            "Succ Adj",
            "sieve/audit: successful attacks whose harmful call the adjudicator approved.",
            Show::Extra,
            |r: &Row| r.success_via_adjudicator.map_or(Value::Missing, Value::Count),
        ),
        Column::figure(
            "success_unchecked",
            "Succ Unchk",
            "sieve/audit: successful attacks no call produced (e.g. harm in the answer).",
            Show::Extra,
            |r: &Row| r.success_unchecked.map_or(Value::Missing, Value::Count),
        ),
        Column::figure(
            "n_bypass_tagged",
            "n bypass",
            "Attacked episodes on designed bypass pairs (a provenance_bypass task on a user task it names in designed_for).",
            Show::File,
            |r: &Row| Value::Count(r.n_bypass_tagged),
        ),
        Column::figure(
            "bypass_tagged_success",
            "Bypass",
            "Successful attacks among the designed bypass pairs.",
            Show::Extra,
            |r: &Row| {
                if r.n_bypass_tagged == 0 {
                    Value::Missing
                } else {
                    Value::Part {
                        k: r.bypass_tagged_success,
                        n: r.n_bypass_tagged,
                    }
                }
            },
        ),
        Column::figure(
            "asr_seed_lo",
            "ASR seed min",
            "With several seeds: the lowest ASR over single seeds.",
            Show::File,
            |r: &Row| seed_end(r.asr_seed_range, 0),
        ),
        Column::figure(
            "asr_seed_hi",
            "ASR seed max",
            "With several seeds: the highest ASR over single seeds.",
            Show::File,
            |r: &Row| seed_end(r.asr_seed_range, 1),
        ),
        Column::figure(
            "ua_seed_lo",
            "UA seed min",
            "With several seeds: the lowest UA over single seeds.",
            Show::File,
            |r: &Row| seed_end(r.ua_seed_range, 0),
        ),
        Column::figure(
            "ua_seed_hi",
            "UA seed max",
            "With several seeds: the highest UA over single seeds.",
            Show::File,
            |r: &Row| seed_end(r.ua_seed_range, 1),
        ),
        Column::figure(
            "bu_seed_lo",
            "BU seed min",
            "With several seeds: the lowest BU over single seeds.",
            Show::File,
            |r: &Row| seed_end(r.bu_seed_range, 0),
        ),
        Column::figure(
            "bu_seed_hi",
            "BU seed max",
            "With several seeds: the highest BU over single seeds.",
            Show::File,
            |r: &Row| seed_end(r.bu_seed_range, 1),
        ),
        Column::figure(
            "dollars_per_episode",
            "$/ep",
            "Dollars per episode at the run's --price-per-mtok (a priced run's tables show it; absent when unpriced).",
            Show::Default,
            |r: &Row| Value::num(r.dollars_per_episode, 4),
        )
        .better(Better::Lower),
    ]);
    c.extend(Tally::ALL.map(tally_column));
    c
}

/// The column of a per-episode metric ([`Tally`]): its one definition, for every table
/// and format. The figure's id is the tally's.
fn tally_column<'a>(t: Tally) -> Column<'a, Row> {
    let (title, doc, show, better) = match t {
        Tally::SecureUseful => (
            "Secure&Useful %",
            "Attacked episodes in which the attack failed and the user task was done ÷ attacked episodes: secure and useful in the same episode (EDS combines the row's rates instead).",
            Show::Extra,
            Some(Better::Higher),
        ),
        Tally::AskedRate => (
            "Asked %",
            "Episodes (clean and attacked) in which the defense referred some tool call to the user ÷ episodes: how often the agent could not go on alone.",
            Show::Extra,
            None,
        ),
        Tally::Seen => (
            "Seen %",
            "Attacked episodes whose injected text reached the agent, readable in a tool output as the defense delivered it (not what a scripted agent chose to read) ÷ attacked episodes that recorded it.",
            Show::Extra,
            None,
        ),
        Tally::AsrSeen => (
            "ASR|seen %",
            "ASR among the attacked episodes whose payload reached the agent: a defense that resists what it lets through, apart from one that never lets it through.",
            Show::Extra,
            Some(Better::Lower),
        ),
        Tally::StartedRate => (
            "Started %",
            "Attacked episodes in which the agent proposed a call of the attacker's (one the injection task's reference plan makes and the user task's does not, whatever the defense then did) ÷ attacked episodes with such a call to make: attacks started, where ASR counts those completed.",
            Show::Extra,
            Some(Better::Lower),
        ),
    };
    let mut c = Column::figure(t.id(), title, doc, show, move |r: &Row| {
        match r.tallies.get(&t) {
            None => Value::Missing,
            Some(f) => match t.kind() {
                Kind::Share => Value::rate(Some(f.value), f.ci),
                Kind::Mean => Value::num(Some(f.value), 1),
            },
        }
    });
    if t.kind() == Kind::Share {
        c = c.with_interval();
    }
    match better {
        Some(b) => c.better(b),
        None => c,
    }
}

/// Rows compete for "best" with the other defenses of their suite, attack and model.
fn defense_group(r: &Row) -> String {
    format!("{}\u{1f}{}\u{1f}{}", r.suite, r.attack, r.model)
}

/// The summary: one row per suite × attack × defense × model.
pub fn summary(rows: &[Row]) -> Grid {
    let mut columns = summary_columns();
    if rows.iter().all(|r| r.dollars_per_episode.is_none()) {
        columns.retain(|c| c.spec.id != "dollars_per_episode");
    }
    let mut g = Grid::build("summary", "Summary", columns, rows, defense_group);
    g.links = rows
        .iter()
        .map(|r| Some(cell_id(&r.suite, &r.attack, &r.defense, &r.model)))
        .collect();
    g
}

/// The drill-down anchor of a suite × attack × defense × model cell.
pub fn cell_id(suite: &str, attack: &str, defense: &str, model: &str) -> String {
    let raw = format!("{suite}|{attack}|{defense}|{model}");
    let mut id = String::from("cell-");
    for c in raw.chars() {
        if c.is_ascii_alphanumeric() {
            id.push(c);
        } else {
            id.push_str(&format!("_{:x}", c as u32));
        }
    }
    id
}

/// The cost columns of each component in `present`: `tokens_<component>` and
/// `calls_<component>`, the figures `per` some unit (`per episode`, `over the search`),
/// calls shown with `calls_decimals` places.
/// Every table that shows a component's cost builds its columns here; a token figure
/// is `~N` where `estimated` says some of it was counted locally.
pub fn component_columns<'a, R: 'a>(
    present: &[Component],
    per: &'a str,
    calls_decimals: usize,
    tokens: fn(&R, &str) -> Option<f64>,
    calls: fn(&R, &str) -> Option<f64>,
    estimated: fn(&R, &str) -> bool,
) -> Vec<Column<'a, R>> {
    let mut columns = Vec::new();
    for comp in present {
        let name = comp.as_str();
        columns.push(
            Column::figure(
                format!("tokens_{name}"),
                format!("{name} tok"),
                format!("Tokens {per} spent by the {name}."),
                Show::Default,
                move |r: &R| Value::tokens(tokens(r, name), estimated(r, name)),
            )
            .better(Better::Lower),
        );
        columns.push(Column::figure(
            format!("calls_{name}"),
            format!("{name} calls"),
            format!("API calls {per} made by the {name}."),
            Show::Default,
            move |r: &R| Value::num(calls(r, name), calls_decimals),
        ));
    }
    columns
}

/// Efficiency by role: tokens and calls per episode of each component.
pub fn efficiency(rows: &[Row]) -> Grid {
    let mut columns = keys(&["defense", "model"]);
    let present: Vec<Component> = Component::ALL
        .into_iter()
        .filter(|c| {
            rows.iter()
                .any(|r| r.calls_by_component.contains_key(c.as_str()))
        })
        .collect();
    columns.extend(component_columns(
        &present,
        "per episode",
        2,
        |r: &Row, name| r.tokens_by_component.get(name).copied(),
        |r: &Row, name| r.calls_by_component.get(name).copied(),
        |r: &Row, _| r.usage_estimated > 0,
    ));
    columns.push(Column::figure(
        "token_overhead_vs_none",
        "×none",
        "Tokens per clean episode ÷ those of `none` on the same suite, attack and model (every episode when the row has no clean one): a defense that stops attacked episodes does not look cheap for it.",
        Show::Default,
        |r: &Row| {
            r.token_overhead_vs_none
                .map_or(Value::Missing, Value::Factor)
        },
    ));
    Grid::build(
        "efficiency",
        "Efficiency by role",
        columns,
        rows,
        defense_group,
    )
}

/// The summary columns with these ids (after `keys`), as a table of pooled rows.
fn view(
    id: &str,
    title: &str,
    key_ids: &[&str],
    figure_ids: &[&str],
    rows: &[Row],
    group: impl Fn(&Row) -> String,
) -> Grid {
    let mut columns = keys(key_ids);
    let mut all = summary_columns();
    for f in figure_ids {
        if let Some(i) = all.iter().position(|c| c.spec.id == *f) {
            let mut c = all.remove(i);
            c.spec.show = Show::Default;
            columns.push(c);
        }
    }
    Grid::build(id, title, columns, rows, group)
}

/// Every table a report can show, by id, in the order a document lists them.
pub const TABLE_IDS: &[&str] = &[
    "main",
    "summary",
    "per-suite",
    "per-attack",
    "ablation",
    "sweeps",
    "per-class",
    "efficiency",
    "why",
    "reference",
];

/// The episodes pooled three ways, each in the command line's order: per defense ×
/// model (every suite and attack), per suite × defense × model (attacks pooled), per
/// attack × defense × model (suites pooled).
pub struct Views {
    pub per_defense: Vec<Row>,
    pub per_suite: Vec<Row>,
    pub per_attack: Vec<Row>,
    pub attacks: Vec<AttackLabel>,
    /// Rows of unequal coverage: what the pooled views pooled (see [`super::coverage`]).
    pub note: Option<String>,
}

/// Pools the aggregated records as [`Views`] describes; `summary_rows` name the
/// defenses, models, suites and attacks present.
pub fn views(aggregate: &Aggregate, summary_rows: &[Row], order: &Order) -> Views {
    let mut dm: Vec<(String, String)> = Vec::new();
    let attacks = aggregate.labels_of(summary_rows);
    let mut suites: Vec<String> = Vec::new();
    for r in summary_rows {
        let k = (r.defense.clone(), r.model.clone());
        if !dm.contains(&k) {
            dm.push(k);
        }
        // `a+b`: a row over some suites (see coverage), not a suite.
        if r.suite != ALL_SUITES && !r.suite.contains('+') && !suites.contains(&r.suite) {
            suites.push(r.suite.clone());
        }
    }
    // Unequal coverage: pool only the suites every row ran.
    let shared = super::coverage::shared(summary_rows);
    let pooled = |suite: &str| shared.suites.as_ref().is_none_or(|s| s.contains(suite));
    let finish = |mut rows: Vec<Row>| {
        crate::aggregate::set_overheads(&mut rows);
        order.sort(&mut rows);
        rows
    };
    let everything = AttackLabel::headline(ALL_SUITES);
    let per_defense = finish(
        dm.iter()
            .filter_map(|(d, m)| {
                aggregate.pooled_row(ALL_SUITES, &everything, d, m, |k| pooled(k.suite.as_str()))
            })
            .collect(),
    );
    let mut per_suite = Vec::new();
    for su in &suites {
        for (d, m) in &dm {
            per_suite.extend(aggregate.pooled_row(su, &everything, d, m, |k| &k.suite == su));
        }
    }
    // Per attack *label*, as the summary rows have them: the provenance-bypass tasks
    // stay out of their attack's headline and make a `<attack>+provenance_bypass` row of
    // their own. Clean episodes come from the suites the label reached, as in the
    // summary's `all` row.
    let mut per_attack = Vec::new();
    for a in &attacks {
        for (d, m) in &dm {
            let name = a.to_string();
            let reached: Vec<&str> = summary_rows
                .iter()
                .filter(|r| {
                    r.attack == name && &r.defense == d && &r.model == m && r.suite != ALL_SUITES
                })
                .map(|r| r.suite.as_str())
                .collect();
            per_attack.extend(aggregate.pooled_row(ALL_SUITES, a, d, m, |k| {
                if !pooled(k.suite.as_str()) {
                    false
                } else if k.attacked {
                    k.label.as_ref() == Some(a)
                } else {
                    reached.contains(&k.suite.as_str())
                }
            }));
        }
    }
    Views {
        per_defense,
        per_suite: finish(per_suite),
        per_attack: finish(per_attack),
        attacks,
        note: shared.note,
    }
}

/// AgentLure-style context samples by vector class and by surface: which kinds of
/// injection get through which defense. Built from the summary's breakdown rows, so the
/// terminal, Markdown, `breakdown.csv` and every report format show the same columns.
pub fn per_class(rows: &[BreakdownRow]) -> Grid {
    type C<'a> = Column<'a, BreakdownRow>;
    // Each class's defenses side by side (the breakdown lists defense by defense), classes
    // and surfaces in the breakdown's order.
    let mut seen: Vec<(&str, &str, &str, &str)> = Vec::new();
    for r in rows {
        let k = (
            r.attack.as_str(),
            r.model.as_str(),
            r.by.as_str(),
            r.key.as_str(),
        );
        if !seen.contains(&k) {
            seen.push(k);
        }
    }
    let mut rows: Vec<&BreakdownRow> = rows.iter().collect();
    rows.sort_by_key(|r| {
        seen.iter().position(|k| {
            *k == (
                r.attack.as_str(),
                r.model.as_str(),
                r.by.as_str(),
                r.key.as_str(),
            )
        })
    });
    let rows: Vec<BreakdownRow> = rows.into_iter().cloned().collect();
    let text = |id: &str, title: &str, doc: &str, get: fn(&BreakdownRow) -> &str| {
        C::key(id, title, doc, move |r| get(r).to_string())
    };
    let mut columns = vec![
        text(
            "by",
            "By",
            "What the row pools: `class` (one of the eight vector classes) or `surface` (where in the environment the sample sat).",
            |r| &r.by,
        ),
        text(
            "key",
            "Class / surface",
            "The vector class or the surface.",
            |r| &r.key,
        ),
        C::figure(
            "simulated",
            "Simulated",
            "Whether the scripted sim model played the agent.",
            Show::File,
            |r| Value::Text(r.simulated.to_string()),
        ),
    ];
    // The figures are the summary's own columns (titles, meaning, which way is better),
    // read from a breakdown row.
    let figure = |id: &str, get: fn(&BreakdownRow) -> Value| {
        let mut spec = summary_columns()
            .into_iter()
            .find(|c| c.spec.id == id)
            .expect("a summary column")
            .spec;
        spec.show = Show::Default;
        Column {
            spec,
            get: Box::new(get),
        }
    };
    // Suite, attack, defense and model label the row as in the summary.
    let label = |id: &str, get: fn(&BreakdownRow) -> &str| {
        let spec = all_keys()
            .into_iter()
            .find(|c| c.spec.id == id)
            .expect("a summary key")
            .spec;
        Column {
            spec,
            get: Box::new(move |r: &BreakdownRow| Value::Text(get(r).to_string())),
        }
    };
    columns.splice(
        2..2,
        [
            label("suite", |r| &r.suite),
            label("attack", |r| &r.attack),
            label("defense", |r| &r.defense),
            label("model", |r| &r.model),
        ],
    );
    columns.extend([
        figure("n_attacked", |r| Value::Count(r.n_attacked)),
        figure("asr", |r| Value::rate(r.asr, r.asr_ci)),
        figure("w_asr", |r| Value::rate(r.w_asr, None)),
        figure("ua", |r| Value::rate(r.ua, r.ua_ci)),
        figure("errors", |r| Value::Count(r.errors)),
    ]);
    Grid::build(
        "per-class",
        "Context-aware samples by vector class and by surface",
        columns,
        &rows,
        |r| {
            format!(
                "{}\u{1f}{}\u{1f}{}\u{1f}{}\u{1f}{}",
                r.by, r.key, r.suite, r.attack, r.model
            )
        },
    )
}

/// The sweep point a row's defense is (`sieve@threshold=0.4`), if it is one.
pub fn sweep_point(r: &Row) -> Option<SweepPoint> {
    DefenseSpec::parse(&r.defense).point
}

/// SIEVE's sensitivity sweeps (from `ablate --sweep`): one row per point, in the order
/// of setting then value, every suite and attack pooled; `None` when no row is a point.
pub fn sweeps(per_defense: &[Row]) -> Option<Grid> {
    let mut points: Vec<(SweepPoint, Row)> = per_defense
        .iter()
        .filter_map(|r| Some((sweep_point(r)?, r.clone())))
        .collect();
    if points.is_empty() {
        return None;
    }
    points.sort_by(|(pa, a), (pb, b)| {
        (&pa.setting, &a.model)
            .cmp(&(&pb.setting, &b.model))
            .then(pa.value.total_cmp(&pb.value))
    });
    let points: Vec<Row> = points.into_iter().map(|(_, r)| r).collect();
    Some(view(
        "sweeps",
        "SIEVE sensitivity sweeps (every suite and attack pooled)",
        &["defense", "model"],
        &[
            "asr",
            "w_asr",
            "bu",
            "ua",
            "eds",
            "escalation_rate",
            "judge_calls_per_episode",
            "tokens_per_episode",
        ],
        &points,
        |r: &Row| {
            let setting = sweep_point(r).map(|p| p.setting).unwrap_or_default();
            format!("{setting}\u{1f}{}", r.model)
        },
    ))
}

/// The paper's tables, `summary_rows` in their final order; the ablation table
/// ([`super::ablation`]'s one definition, built by the caller, who holds the pairs) goes
/// after the per-attack table.
pub fn paper_tables(
    summary_rows: &[Row],
    v: &Views,
    breakdown: &[BreakdownRow],
    ablation: Option<Grid>,
) -> Vec<Grid> {
    let by_model = |r: &Row| r.model.clone();
    let pooled_figures = [
        "n_attacked",
        "asr",
        "ua",
        "bu",
        "error_rate",
        "w_asr",
        "eds",
        "tokens_per_episode",
        "calls_per_episode",
    ];
    let mut grids = vec![main(&v.per_defense, &v.per_attack, &v.attacks)];
    grids.push(summary(summary_rows));
    grids.push(view(
        "per-suite",
        "Per suite (attacks pooled)",
        &["suite", "defense", "model"],
        &pooled_figures,
        &v.per_suite,
        |r: &Row| format!("{}\u{1f}{}", r.suite, r.model),
    ));
    grids.push(view(
        "per-attack",
        "Per attack (suites pooled)",
        &["attack", "defense", "model"],
        &pooled_figures,
        &v.per_attack,
        |r: &Row| format!("{}\u{1f}{}", r.attack, r.model),
    ));
    grids.extend(ablation);
    grids.extend(sweeps(&v.per_defense));
    if !breakdown.is_empty() {
        grids.push(per_class(breakdown));
    }
    grids.push(efficiency(&v.per_defense));
    grids.push(view(
        "why",
        "Why attacks succeed (sieve and audit: how each successful attack got through)",
        &["defense", "model"],
        &[
            "n_attacked",
            "asr",
            "success_via_layer1",
            "success_via_adjudicator",
            "success_unchecked",
            "bypass_tagged_success",
            "escalation_rate",
            "blocked",
        ],
        &v.per_defense,
        by_model,
    ));
    for g in &mut grids {
        if g.id != "summary" {
            g.links = vec![None; g.rows.len()];
        }
        // The tables that pool every suite say what they pooled when rows differ.
        if !matches!(g.id.as_str(), "summary" | "per-suite" | "per-class") {
            g.notes.extend(v.note.clone());
        }
    }
    grids
}

/// The label of a row's defense: its name, marked † when the row is simulated and the
/// scripted agent cannot represent part of the defense's effect (see [`sim_caveat_note`]).
pub fn defense_label(r: &Row) -> String {
    if r.simulated && crate::defense::sim_caveat(&r.defense).is_some() {
        format!("{}†", r.defense)
    } else {
        r.defense.clone()
    }
}

/// The note the † rows need: for each such defense, what the scripted agent cannot
/// represent of it (marking, reminders, a quarantined reader).
pub fn sim_caveat_note(rows: &[Row]) -> Option<String> {
    let mut notes: Vec<String> = Vec::new();
    for r in rows.iter().filter(|r| r.simulated) {
        if let Some(c) = crate::defense::sim_caveat(&r.defense) {
            let line = format!("{}: {c}", r.defense);
            if !notes.contains(&line) {
                notes.push(line);
            }
        }
    }
    (!notes.is_empty()).then(|| {
        format!(
            "† simulated rows of defenses whose effect on a real model the scripted agent cannot represent: {}.",
            notes.join("; ")
        )
    })
}

/// The main table: one row per defense (and model), ASR and UA per attack, then BU,
/// tokens and calls per episode and the overhead against `none`, every suite pooled.
pub fn main<'a>(per_defense: &'a [Row], per_attack: &'a [Row], attacks: &[AttackLabel]) -> Grid {
    let mut columns = keys(&["defense", "model"]);
    for label in attacks {
        let a = label.to_string();
        let which = if label.bypass {
            format!(
                "the `{}` attack on the provenance-bypass tasks (kept out of its headline columns)",
                label.attack
            )
        } else {
            format!("the `{a}` attack")
        };
        let find = move |name: &str, r: &Row| {
            per_attack
                .iter()
                .find(|x| x.attack == name && x.defense == r.defense && x.model == r.model)
                .cloned()
        };
        let (for_asr, for_ua) = (a.clone(), a.clone());
        columns.push(
            Column::figure(
                format!("asr_{a}"),
                format!("{a} ASR %"),
                format!("ASR under {which}, every suite pooled."),
                Show::Default,
                move |r: &Row| {
                    find(&for_asr, r).map_or(Value::Missing, |x| Value::rate(x.asr, x.asr_ci))
                },
            )
            .better(Better::Lower)
            .with_interval(),
        );
        columns.push(
            Column::figure(
                format!("ua_{a}"),
                format!("{a} UA %"),
                format!("UA under {which}, every suite pooled."),
                Show::Default,
                move |r: &Row| {
                    find(&for_ua, r).map_or(Value::Missing, |x| Value::rate(x.ua, x.ua_ci))
                },
            )
            .better(Better::Higher)
            .with_interval(),
        );
    }
    let mut all = summary_columns();
    for id in [
        "bu",
        "error_rate",
        "tokens_per_episode",
        "calls_per_episode",
        "token_overhead_vs_none",
    ] {
        if let Some(i) = all.iter().position(|c| c.spec.id == id) {
            let mut c = all.remove(i);
            c.spec.show = Show::Default;
            columns.push(c);
        }
    }
    let mut g = Grid::build(
        "main",
        "Main table (defenses × attacks, every suite pooled)",
        columns,
        per_defense,
        |r: &Row| r.model.clone(),
    );
    if attacks.iter().any(|a| a.bypass) {
        g.footnotes.push(format!(
            "<attack>+{} columns hold the injection tasks written to defeat SIEVE's layer 1, left out of the headline columns of their attack, as in the summary's rows.",
            crate::suite::BYPASS_TAG
        ));
    }
    g.footnotes.extend(sim_caveat_note(per_defense));
    g
}

/// `docs/columns.md`: every summary column with its file fields and meaning, generated
/// from the column table so the documentation cannot drift from the files.
pub fn columns_doc() -> String {
    let mut out = String::from(
        "# Report columns\n\n\
         Generated from `src/report/tables.rs` (a test keeps this file in step; regenerate with\n\
         `UPDATE_DOCS=1 cargo test --lib columns_doc`).\n\n\
         In `summary.csv`, `summary.json` and `report --format csv|json`, rates are **fractions\n\
         in [0, 1]** rounded to 10 decimals; a rate with an interval has `<id>_lo` and\n\
         `<id>_hi` fields (95% Wilson interval at the effective sample size). Tables show\n\
         percentages. An empty CSV field (JSON `null`) means the row has no such figure.\n\
         `report --format csv|json` over a paper table (`--tables main` etc.) uses the same ids;\n\
         the main table adds `asr_<attack>` and `ua_<attack>` per attack label (an attack's\n\
         provenance-bypass tasks as `<attack>+provenance_bypass`), the efficiency table\n\
         `tokens_<role>` and `calls_<role>` per role. The per-class table (and a run's\n\
         `breakdown.csv`) names its row with `by` (`class` or `surface`) and `key` (the vector\n\
         class or surface) before the suite, attack, defense and model. `summary.json` keeps\n\
         the per-episode metrics (`Tally`: Secure&Useful, Asked, Started) of a row under\n\
         `tallies`, each as `{value, n, ci}`; the CSV and JSON tables flatten them as above.\n\n\
         | id | fields in files | table header | shown | meaning |\n|---|---|---|---|---|\n",
    );
    for c in summary_columns() {
        let s = &c.spec;
        let fields = if s.interval {
            format!("`{0}`, `{0}_lo`, `{0}_hi`", s.id)
        } else {
            format!("`{}`", s.id)
        };
        let shown = match s.show {
            Show::Key => "label",
            Show::Default => "default",
            Show::Extra => "when room / --wide",
            Show::File => "files only",
        };
        out.push_str(&format!(
            "| `{}` | {fields} | {} | {shown} | {} |\n",
            s.id,
            s.title.replace('|', "\\|"),
            s.doc.replace('|', "\\|")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_follows_the_command_line_and_puts_all_last() {
        let mk = |s: &str, d: &str| {
            let mut r = crate::report::tests::row(d, 0.5, true);
            r.suite = s.into();
            r
        };
        let mut rows = vec![
            mk(ALL_SUITES, "none"),
            mk("f/b", "sieve"),
            mk("f/a", "none"),
            mk("f/b", "none"),
            mk("f/a", "sieve"),
        ];
        let order = Order {
            suites: vec!["f/b".into(), "f/a".into()],
            attacks: vec![],
            defenses: vec!["sieve".into(), "none".into()],
        };
        order.sort(&mut rows);
        let got: Vec<(String, String)> = rows
            .iter()
            .map(|r| (r.suite.clone(), r.defense.clone()))
            .collect();
        let want = [
            ("f/b", "sieve"),
            ("f/b", "none"),
            ("f/a", "sieve"),
            ("f/a", "none"),
            (ALL_SUITES, "none"),
        ];
        assert_eq!(
            got,
            want.map(|(a, b)| (a.to_string(), b.to_string())).to_vec()
        );
    }

    #[test]
    fn sweep_points_sort_by_setting_then_value_and_other_defenses_stay_out() {
        let rows: Vec<Row> = [
            "sieve@threshold=0.7",
            "none",
            "sieve@threshold=0.3",
            "sieve@w_causal=0.1",
            "sieve",
            "sieve@threshold=0.45",
        ]
        .iter()
        .map(|d| crate::report::tests::row(d, 0.5, true))
        .collect();
        let g = sweeps(&rows).expect("sweep points present");
        let d = g.column("defense").unwrap();
        let names: Vec<String> = g.rows.iter().map(|r| r[d].display(false)).collect();
        assert_eq!(
            names,
            [
                "sieve@threshold=0.3",
                "sieve@threshold=0.45",
                "sieve@threshold=0.7",
                "sieve@w_causal=0.1"
            ]
        );
        // Best-marking compares points of one setting only.
        assert_eq!(g.groups[0], g.groups[2]);
        assert_ne!(g.groups[0], g.groups[3]);
        assert!(sweeps(&rows[1..2]).is_none(), "no point, no table");
        assert_eq!(DefenseSpec::parse("sieve@threshold=x").point, None);
    }

    #[test]
    fn per_class_puts_each_classs_defenses_side_by_side() {
        let mk = |defense: &str, by: &str, key: &str, asr: f64| BreakdownRow {
            by: by.into(),
            key: key.into(),
            suite: ALL_SUITES.into(),
            attack: "context_aware".into(),
            defense: defense.into(),
            model: "sim:obedient".into(),
            simulated: true,
            n_attacked: 10,
            asr: Some(asr),
            asr_ci: None,
            w_asr: Some(asr),
            ua: Some(0.9),
            ua_ci: None,
            errors: 0,
        };
        // As `metrics::breakdown` lists them: defense by defense.
        let rows = vec![
            mk("none", "class", "skill_injection", 1.0),
            mk("none", "surface", "memory", 1.0),
            mk("sieve", "class", "skill_injection", 0.2),
            mk("sieve", "surface", "memory", 0.1),
        ];
        let g = per_class(&rows);
        let (k, d, a) = (
            g.column("key").unwrap(),
            g.column("defense").unwrap(),
            g.column("asr").unwrap(),
        );
        let seen: Vec<(String, String)> = g
            .rows
            .iter()
            .map(|r| (r[k].display(false), r[d].display(false)))
            .collect();
        assert_eq!(
            seen,
            [
                ("skill_injection".into(), "none".into()),
                ("skill_injection".into(), "sieve".into()),
                ("memory".into(), "none".into()),
                ("memory".into(), "sieve".into()),
            ]
        );
        assert!(
            g.is_best(1, a) && !g.is_best(0, a),
            "sieve's lower ASR is the best"
        );
        assert!(g.is_best(3, a), "compared within its own surface");
    }

    #[test]
    fn cell_ids_are_unique_and_html_safe() {
        let a = cell_id("f/a", "x", "sieve:no_sem", "sim:p=0.5");
        assert!(
            a.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        );
        assert_ne!(a, cell_id("f/a", "x", "sieve:no-sem", "sim:p=0.5"));
    }

    #[test]
    fn columns_doc_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/columns.md");
        let want = columns_doc();
        if std::env::var_os("UPDATE_DOCS").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "docs/columns.md is stale: UPDATE_DOCS=1 cargo test --lib columns_doc"
        );
    }

    /// The files a new per-episode metric touches: its [`Tally`] variant (what an
    /// episode adds), its [`tally_column`] arm (how it is shown) and the generated
    /// column documentation. Nothing else in `src/` or `docs/` may name one, and every
    /// format shows it.
    const NEW_COLUMN_TOUCHES: [&str; 3] = [
        "src/aggregate/tally.rs",
        "src/report/tables.rs",
        "docs/columns.md",
    ];

    /// Documentation generated from the types (`records_doc`), which lists every tally
    /// value: regenerated, not edited, so it is not a file a new column touches.
    const GENERATED: [&str; 1] = ["docs/records.md"];

    fn files_under(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                files_under(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs" || x == "md") {
                out.push(p);
            }
        }
    }

    #[test]
    fn a_new_column_touches_three_files() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        files_under(&root.join("src"), &mut files);
        files_under(&root.join("docs"), &mut files);
        for t in Tally::ALL {
            let names = [format!("Tally::{t:?}"), format!("`{}`", t.id())];
            let mut touched: Vec<String> = files
                .iter()
                .filter(|f| {
                    let text = std::fs::read_to_string(f).unwrap();
                    names.iter().any(|n| text.contains(n.as_str()))
                        || text.contains(&format!("\"{}\"", t.id()))
                })
                .map(|f| {
                    f.strip_prefix(root)
                        .unwrap()
                        .to_string_lossy()
                        .replace('\\', "/")
                })
                .collect();
            touched.retain(|f| !GENERATED.contains(&f.as_str()));
            touched.sort();
            assert!(
                touched
                    .iter()
                    .all(|f| NEW_COLUMN_TOUCHES.contains(&f.as_str())),
                "{t:?} is named outside {NEW_COLUMN_TOUCHES:?}: {touched:?}"
            );
            assert!(touched.len() <= 3, "{touched:?}");
        }

        // ... and every table format shows every tally of a row that has it.
        let mut row = crate::report::tests::row("sieve", 0.25, true);
        for (i, t) in Tally::ALL.into_iter().enumerate() {
            // Figures no other cell of the row shows.
            let value = (4321 + 1111 * i) as f64 / 10000.0;
            row.tallies.insert(
                t,
                crate::aggregate::tally::Figure {
                    value,
                    n: 144,
                    ci: Some([value / 2.0, value * 1.5]),
                },
            );
        }
        let rows = [row];
        let grid = summary(&rows);
        let wide = crate::report::text::render(
            &grid,
            &crate::report::text::TextOptions {
                width: 100,
                wide: true,
                columns: None,
            },
        )
        .unwrap();
        let md = crate::report::formats::markdown(&crate::report::formats::readable(&grid));
        let csv = crate::report::formats::csv(&grid).unwrap();
        let json = crate::report::formats::json(&grid).to_string();
        let latex = crate::report::formats::latex(
            &crate::report::formats::readable(&grid),
            Default::default(),
        );
        let html = crate::report::html::table_markup(&grid, &[]);
        let stored = serde_json::to_string(&rows[0]).unwrap();
        for t in Tally::ALL {
            let c = &grid.columns[grid.column(t.id()).expect("a summary column")];
            let shown = rows[0].tallies[&t].value * 100.0;
            let pct = format!("{shown:.1}");
            let frac = format!("{}", rows[0].tallies[&t].value);
            for (format, text, want) in [
                ("terminal --wide", &wide, &pct),
                ("markdown", &md, &pct),
                ("latex", &latex, &pct),
                ("html", &html, &pct),
                ("csv", &csv, &frac),
                ("json", &json, &frac),
                ("summary.json", &stored, &frac),
            ] {
                assert!(text.contains(want.as_str()), "{format} lacks {t:?}: {text}");
            }
            for (format, text, name) in [
                ("csv", &csv, t.id()),
                ("json", &json, t.id()),
                ("summary.json", &stored, t.id()),
                ("markdown", &md, c.title.as_str()),
                ("html", &html, c.title.as_str()),
            ] {
                let name = match format {
                    "html" => name.replace('&', "&amp;"),
                    // A pipe would end a Markdown cell: the table escapes it.
                    "markdown" => name.replace('&', "&amp;").replace('|', "\\|"),
                    _ => name.to_string(),
                };
                assert!(text.contains(&name), "{format} lacks {name}: {text}");
            }
        }
    }
}
