//! Planning a real-model run: `--dry-run` estimates, the prices budgets charge, and the
//! lineage of served models.
//!
//! A dry run builds the run exactly as `run` would (suites, attacks, defenses, models,
//! filters, shard), then runs the matrix with the scripted model standing in for every
//! role an LLM would play, into a temporary folder, and sends nothing. The prompts the
//! stand-in receives are the prompts the real model would receive (system prompt, tool
//! schemas, tool outputs, injected payloads), and their tokens are real cl100k counts, so
//! prompt tokens and calls per role follow the matrix. The stand-in does each user task
//! by its reference plan and also carries out every injected instruction it reads
//! (`sim:obedient`), so attacked episodes are priced at their longest: a robust model
//! spends less on them, a model that wanders or retries spends more.

use super::run::{args::RunArgs, config::RunConfig};
use super::{CliError, Paths};
use crate::model::config::NamedEndpoint;
use crate::model::{ChatModel, Models};
use crate::report::columns::{Column, Grid, Show, Value};
use crate::report::text::{self, TextOptions};
use crate::runner::budget::Prices;
use crate::runner::{self, RunPlan};
use sieve_record::{Component, Lineage};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::sync::Arc;

/// The scripted profile that stands in for real roles in a dry run.
pub const STAND_IN: &str = "obedient";

/// The spec a role's model was given on the command line (`None`: the default embedder).
fn spec_of(args: &RunArgs, c: Component) -> Option<&str> {
    match c {
        Component::Agent => Some(args.models.model.as_str()),
        Component::Planner => Some(args.models.planner()),
        Component::Judge | Component::Detector => Some(args.models.judge()),
        Component::Embedding => args.model_options.embedder.as_deref(),
        Component::AnswerJudge => args.answer_judge.as_deref(),
        // `run` has no attacker (only `attack search` does).
        Component::Attacker => None,
    }
}

/// Whether an LLM (not the scripted model or the lexical embedder) plays `c`.
fn real(models: &Models, c: Component) -> bool {
    if c == Component::AnswerJudge {
        // Not one of the episode's roles: `dry_run` refuses `--answer-judge`.
        return false;
    }
    match models.chat_for(c) {
        Some(m) => !m.simulated(),
        None => models.embedder.scripted().is_none(),
    }
}

/// Per role: `--price-per-mtok`, else the named endpoint's `price_per_mtok`. With
/// `--budget-usd`, every role an LLM plays must have a price.
pub fn prices(
    args: &RunArgs,
    named: &BTreeMap<String, NamedEndpoint>,
    models: &Models,
) -> Result<Prices, CliError> {
    let mut p = Prices::default();
    let mut unpriced = Vec::new();
    for c in Component::ALL {
        let price = args
            .model_options
            .price_per_mtok
            .map(|(i, o)| [i, o])
            .or_else(|| {
                spec_of(args, c)
                    .and_then(|s| named.get(s))
                    .and_then(|e| e.price_per_mtok)
            });
        match price {
            Some(x) => {
                p.by_role.insert(c, x);
            }
            None if real(models, c) => unpriced.push(c.as_str()),
            None => {}
        }
    }
    if args.budget_usd.is_some() && !unpriced.is_empty() {
        return Err(CliError::bad_input(format!(
            "--budget-usd needs a price for every role an LLM plays; no price for: {}. Pass --price-per-mtok IN,OUT or set price_per_mtok = [IN, OUT] on the endpoint in configs/models.toml",
            unpriced.join(", ")
        )));
    }
    Ok(p)
}

/// Per role an LLM plays, the model id it requests.
pub fn requested_models(models: &Models) -> BTreeMap<Component, String> {
    Component::ALL
        .into_iter()
        .filter_map(|c| {
            let m = models.chat_for(c).filter(|m| !m.simulated())?;
            let id = m.identity().model_name()?.to_string();
            Some((c, id))
        })
        .collect()
}

/// Adds the models that served this invocation's episodes to the manifest's lineage.
pub fn record_lineage(
    lineage: &mut BTreeMap<Component, Lineage>,
    requested: &BTreeMap<Component, String>,
    served: &BTreeMap<Component, BTreeSet<String>>,
) {
    for (c, ids) in served {
        let l = lineage.entry(*c).or_insert_with(|| Lineage {
            requested: requested.get(c).cloned().unwrap_or_default(),
            served: BTreeSet::new(),
        });
        l.served.extend(ids.iter().cloned());
    }
}

/// Expected spending of one role.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct RoleEstimate {
    pub role: String,
    /// Who plays it in the real run (`openai:gpt-4o`, `sim:oracle` …, `templates`).
    pub played_by: String,
    /// Whether an LLM plays it (only then are calls sent).
    pub llm: bool,
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// `None` when the role has no price.
    pub dollars: Option<f64>,
    /// The role whose model serves these requests (its endpoint's rate limits apply).
    #[serde(skip)]
    pub on: Option<Component>,
}

/// A dry run's result.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Estimate {
    /// (suite, attack, defense, episodes) in matrix order.
    pub matrix: Vec<(String, String, String, u64)>,
    pub episodes: u64,
    pub roles: Vec<RoleEstimate>,
    /// LLM calls and tokens, every role.
    pub llm_calls: u64,
    pub llm_tokens: u64,
    pub dollars: Option<f64>,
    /// Minutes the endpoints' `--rpm` / `--tpm` allow at the least, and minutes at
    /// `--concurrency` with `--call-seconds` per call.
    pub minutes_rate_limits: Option<f64>,
    pub minutes_concurrency: f64,
    pub concurrency: usize,
    pub call_seconds: f64,
    /// `--batch`: the rounds the run takes (the most model calls one episode makes);
    /// dollars above are then at batch prices.
    pub batch_rounds: Option<u64>,
}

impl Estimate {
    /// Expected wall time in minutes: the slower of the two bounds.
    pub fn minutes(&self) -> f64 {
        self.minutes_concurrency
            .max(self.minutes_rate_limits.unwrap_or(0.0))
    }

    /// The role's estimate.
    pub fn role(&self, c: Component) -> Option<&RoleEstimate> {
        self.roles.iter().find(|r| r.role == c.as_str())
    }
}

/// The scripted stand-ins for every role an LLM would play.
fn stand_ins(models: &Models) -> Result<Models, CliError> {
    let sim: Arc<dyn ChatModel> = Arc::new(crate::model::sim::SimModel::new(
        crate::model::sim::SimProfile::parse(STAND_IN).map_err(CliError::failed)?,
        models.tokens.clone(),
    ));
    let swap = |m: &Arc<dyn ChatModel>| {
        if m.simulated() {
            m.clone()
        } else {
            sim.clone()
        }
    };
    Ok(Models {
        agent: swap(&models.agent),
        planner: swap(&models.planner),
        judge: swap(&models.judge),
        embedder: if models.embedder.scripted().is_some() {
            models.embedder.clone()
        } else {
            Arc::new(crate::embed::Lexical)
        },
        tokens: models.tokens.clone(),
    })
}

/// Runs the matrix of `config` with scripted stand-ins for every LLM role, into a
/// temporary folder, and returns its records. Nothing is sent.
pub async fn stand_in_records(
    config: &RunConfig,
) -> Result<Vec<sieve_record::EpisodeRecord>, CliError> {
    let dir = tempfile::tempdir()
        .map_err(|e| CliError::failed(format!("cannot create a temporary folder: {e}")))?;
    let plan = RunPlan {
        run_id: "dry-run".into(),
        out: dir.path().to_path_buf(),
        models: stand_ins(&config.models)?,
        concurrency: std::thread::available_parallelism().map_or(2, |n| n.get() * 4),
        retry_errors: true,
        budget: Default::default(),
        answer_judge: None,
        ..config.plan()
    };
    let outcome = runner::execution::execute(plan)
        .await
        .map_err(|e| match e {
            runner::RunError::NothingToRun(m) => CliError::NothingToRun(m),
            other => CliError::failed(format!("dry run: {other}")),
        })?;
    if outcome.interrupted {
        return Err(CliError::Interrupted);
    }
    let mut records = Vec::new();
    crate::record::for_each_record(
        &dir.path().join(sieve_record::EPISODES),
        |p| {
            records.push(
                p.record
                    .map_err(|e| CliError::failed(format!("dry run: {e}")))?,
            );
            Ok(())
        },
        |e| CliError::failed(format!("dry run: {e}")),
    )?;
    Ok(records)
}

/// Each episode's expected dollars and tokens under the stand-in, by cell, for the
/// budget's admission.
pub fn expected_costs(
    records: &[sieve_record::EpisodeRecord],
    prices: &Prices,
) -> std::collections::HashMap<String, runner::budget::Cost> {
    records
        .iter()
        .map(|r| {
            let key = runner::JobKey {
                suite: r.suite.clone(),
                user_task: r.user_task.clone(),
                injection_task: r.injection_task.clone(),
                attack: r.attack.clone(),
                defense: r.defense.clone(),
                model: r.model.clone(),
                seed: r.seed,
            };
            (
                runner::budget::cell_key(&key),
                (prices.dollars(&r.defense, &r.cost), r.cost.total().tokens()),
            )
        })
        .collect()
}

/// `--dry-run`: the estimate of what `args` would run, sending nothing.
pub async fn dry_run(paths: &Paths, args: &RunArgs) -> Result<Estimate, CliError> {
    refuse_answer_judge(args)?;
    estimate(&super::run::config::resolve(paths, args).await?).await
}

/// `--dry-run` does not price the answer judge.
pub fn refuse_answer_judge(args: &RunArgs) -> Result<(), CliError> {
    if args.answer_judge.is_some() {
        return Err(CliError::bad_input(
            "--dry-run does not estimate --answer-judge yet (one judge call per judged answer: every answer the checks read with --answer-judge-on all, only the undecided ones by default; its prompt the request, reference, facts and answer); estimate without it",
        ));
    }
    Ok(())
}

/// The estimate of a resolved run, sending nothing.
pub async fn estimate(p: &RunConfig) -> Result<Estimate, CliError> {
    refuse_answer_judge(&p.args)?;
    let args = &p.args;
    let mut prices = prices(args, &p.named, &p.models)?;
    if args.batch.batch.is_some() {
        prices = prices.scaled(super::run::batch::BATCH_PRICE);
    }
    let roles_by: Vec<(Component, String, bool)> = Component::ALL
        .into_iter()
        .map(|c| {
            let who = match (c, p.models.chat_for(c)) {
                (_, Some(m)) => m.name().to_string(),
                (Component::Embedding, None) => p.models.embedder.name().to_string(),
                // No role of an episode: a dry run refuses `--answer-judge`.
                (_, None) => "none".to_string(),
            };
            (c, who, real(&p.models, c))
        })
        .collect();
    let limits = rate_limits(args, p);
    let records = stand_in_records(p).await?;
    let mut est = tally(&records, &roles_by, &prices);
    est.concurrency = args.concurrency.n;
    est.call_seconds = args.call_seconds;
    est.minutes_concurrency =
        est.llm_calls as f64 * args.call_seconds / est.concurrency as f64 / 60.0;
    est.minutes_rate_limits = limits.minutes(&est);
    if args.batch.batch.is_some() {
        let real: Vec<Component> = roles_by.iter().filter(|r| r.2).map(|r| r.0).collect();
        est.batch_rounds = Some(
            records
                .iter()
                .map(|r| {
                    r.cost
                        .by_component
                        .iter()
                        .filter(|(c, _)| {
                            real.contains(&crate::defense::model_role(&r.defense, **c))
                        })
                        .map(|(_, t)| t.calls)
                        .sum::<u64>()
                })
                .max()
                .unwrap_or(0),
        );
    }
    Ok(est)
}

/// Sums the stand-in run's records into the matrix and per-role figures.
fn tally(
    records: &[sieve_record::EpisodeRecord],
    roles_by: &[(Component, String, bool)],
    prices: &Prices,
) -> Estimate {
    let mut est = Estimate::default();
    for r in records {
        let cell = (
            r.suite.clone(),
            r.attack.clone().unwrap_or_else(|| "clean".into()),
            r.defense.clone(),
        );
        match est
            .matrix
            .iter_mut()
            .find(|m| (&m.0, &m.1, &m.2) == (&cell.0, &cell.1, &cell.2))
        {
            Some(m) => m.3 += 1,
            None => est.matrix.push((cell.0, cell.1, cell.2, 1)),
        }
    }
    est.episodes = records.len() as u64;
    // Each component's tokens under the role whose model served them: MELON's masked run
    // is metered as `detector` and runs on the agent's model.
    let mut served: BTreeMap<(Component, Component), sieve_record::CostTotals> = BTreeMap::new();
    for r in records {
        for (c, t) in &r.cost.by_component {
            let on = crate::defense::model_role(&r.defense, *c);
            served.entry((*c, on)).or_default().add(t);
        }
    }
    let mut rows: Vec<(String, Component, sieve_record::CostTotals)> = roles_by
        .iter()
        .map(|(c, _, _)| {
            let t = served.get(&(*c, *c)).copied().unwrap_or_default();
            (c.as_str().to_string(), *c, t)
        })
        .collect();
    rows.extend(
        served
            .iter()
            .filter(|((c, on), _)| c != on)
            .map(|((c, on), t)| {
                (
                    format!("{} (on the {}'s model)", c.as_str(), on.as_str()),
                    *on,
                    *t,
                )
            }),
    );
    let mut dollars = Some(0.0);
    for (role, on, t) in rows {
        let Some((_, who, llm)) = roles_by.iter().find(|(c, _, _)| *c == on) else {
            continue;
        };
        let price = prices.by_role.get(&on);
        let d =
            price.map(|[i, o]| (t.prompt_tokens as f64 * i + t.completion_tokens as f64 * o) / 1e6);
        if *llm {
            est.llm_calls += t.calls;
            est.llm_tokens += t.tokens();
            dollars = match (dollars, d) {
                (Some(a), Some(b)) => Some(a + b),
                (a, None) if t.calls == 0 => a,
                _ => None,
            };
        }
        est.roles.push(RoleEstimate {
            role,
            played_by: who.clone(),
            llm: *llm,
            calls: t.calls,
            prompt_tokens: t.prompt_tokens,
            completion_tokens: t.completion_tokens,
            dollars: if *llm { d } else { None },
            on: Some(on),
        });
    }
    est.roles.push(RoleEstimate {
        role: "attacker".into(),
        played_by: "templates, rendered locally".into(),
        ..Default::default()
    });
    est.dollars = dollars;
    est
}

/// Per distinct model spec of the LLM roles: its `--rpm` / `--tpm` (flag, else named
/// endpoint). Roles with the same spec share one endpoint and its limits.
struct Limits {
    by_spec: Vec<SpecLimits>,
}

/// One model spec: the roles that use it and its requests and tokens per minute.
struct SpecLimits {
    spec: String,
    roles: Vec<Component>,
    rpm: Option<u32>,
    tpm: Option<u32>,
}

fn rate_limits(args: &RunArgs, p: &RunConfig) -> Limits {
    let mut by_spec: Vec<SpecLimits> = Vec::new();
    for c in Component::ALL {
        if !real(&p.models, c) {
            continue;
        }
        let spec = spec_of(args, c).unwrap_or("").to_string();
        if let Some(e) = by_spec.iter_mut().find(|e| e.spec == spec) {
            e.roles.push(c);
            continue;
        }
        let named = p.named.get(&spec);
        let rpm = args.model_options.rpm.or(named.and_then(|n| n.rpm));
        let tpm = args.model_options.tpm.or(named.and_then(|n| n.tpm));
        by_spec.push(SpecLimits {
            spec,
            roles: vec![c],
            rpm,
            tpm,
        });
    }
    Limits { by_spec }
}

impl Limits {
    /// The least minutes the rate limits allow for the estimated calls and tokens.
    fn minutes(&self, est: &Estimate) -> Option<f64> {
        let mut worst: Option<f64> = None;
        for SpecLimits {
            roles, rpm, tpm, ..
        } in &self.by_spec
        {
            let (mut calls, mut tokens) = (0u64, 0u64);
            for r in est
                .roles
                .iter()
                .filter(|r| r.on.is_some_and(|on| roles.contains(&on)))
            {
                calls += r.calls;
                tokens += r.prompt_tokens + r.completion_tokens;
            }
            let by_rpm = rpm.filter(|n| *n > 0).map(|n| calls as f64 / n as f64);
            let by_tpm = tpm.filter(|n| *n > 0).map(|n| tokens as f64 / n as f64);
            for m in [by_rpm, by_tpm].into_iter().flatten() {
                worst = Some(worst.map_or(m, |w: f64| w.max(m)));
            }
        }
        worst
    }
}

fn minutes_text(m: f64) -> String {
    if m < 1.0 {
        format!("{:.0} s", m * 60.0)
    } else if m < 120.0 {
        format!("{m:.1} min")
    } else {
        format!("{:.1} h", m / 60.0)
    }
}

/// The matrix the dry run played: one row per suite, attack and defense, with its
/// episodes.
fn matrix_grid(est: &Estimate) -> Grid {
    type Cell = (String, String, String, u64);
    let columns: Vec<Column<'_, Cell>> = vec![
        Column::key("suite", "Suite", "The suite.", |c: &Cell| c.0.clone()),
        Column::key(
            "attack",
            "Attack",
            "The attack (`clean`: no injection).",
            |c: &Cell| c.1.clone(),
        ),
        Column::key("defense", "Defense", "The defense.", |c: &Cell| c.2.clone()),
        Column::figure(
            "episodes",
            "Episodes",
            "Episodes the run would play in this cell.",
            Show::Default,
            |c: &Cell| Value::Count(c.3),
        ),
    ];
    Grid::build(
        "estimate-matrix",
        "Run matrix",
        columns,
        &est.matrix,
        |_| String::new(),
    )
}

/// The roles: who plays each, and the calls, tokens and dollars the run would spend on
/// it. Only an LLM role sends calls; a scripted role's calls are counted apart
/// (`0 (N scripted)`), the attacker's templates cost nothing.
fn roles_grid(est: &Estimate) -> Grid {
    let scripted = |r: &RoleEstimate| !r.llm && r.role != "attacker";
    let tokens = |n: u64, r: &RoleEstimate| {
        if r.llm {
            Value::Count(n)
        } else {
            Value::Missing
        }
    };
    let columns: Vec<Column<'_, RoleEstimate>> = vec![
        Column::key("role", "Role", "The role.", |r: &RoleEstimate| {
            r.role.clone()
        }),
        Column::figure(
            "played_by",
            "Played by",
            "The model (or scripted stand-in, or templates) that plays the role in the real run.",
            Show::Default,
            |r: &RoleEstimate| Value::Text(r.played_by.clone()),
        )
        .label(),
        Column::figure(
            "calls",
            "Calls",
            "Model calls the role would send; a scripted role's calls are answered locally.",
            Show::Default,
            move |r: &RoleEstimate| {
                if scripted(r) {
                    Value::Text(format!("0 ({} scripted)", r.calls))
                } else {
                    Value::Count(if r.llm { r.calls } else { 0 })
                }
            },
        ),
        Column::figure(
            "prompt_tokens",
            "Prompt tok",
            "Prompt tokens (cl100k) the role would send.",
            Show::Default,
            move |r: &RoleEstimate| tokens(r.prompt_tokens, r),
        ),
        Column::figure(
            "completion_tokens",
            "Compl tok",
            "Completion tokens the role would receive.",
            Show::Default,
            move |r: &RoleEstimate| tokens(r.completion_tokens, r),
        ),
        Column::figure(
            "dollars",
            "$",
            "Dollars at the role's price; `no price` when it has none.",
            Show::Default,
            |r: &RoleEstimate| match (r.llm, r.dollars) {
                (false, _) => Value::Missing,
                (true, Some(v)) => Value::Num { v, decimals: 2 },
                (true, None) => Value::Text("no price".into()),
            },
        ),
    ];
    Grid::build("estimate-roles", "Roles", columns, &est.roles, |_| {
        String::new()
    })
}

/// The estimate as text; its tables are rendered as every report table is, each
/// column shown (an estimate has no column to spare).
pub fn render(est: &Estimate) -> String {
    let opts = TextOptions {
        wide: true,
        ..TextOptions::detect()
    };
    let table = |g: Grid| text::render(&g, &opts).expect("no --columns to mistype");
    let mut out = String::new();
    writeln!(
        out,
        "dry run: nothing was sent. Estimated by running the same matrix with the scripted model (sim:{STAND_IN}) in place of every LLM role; prompt tokens are cl100k counts of the prompts those roles would receive."
    )
    .unwrap();
    write!(out, "{}", table(matrix_grid(est))).unwrap();
    writeln!(out, "{} episode(s) in all.", est.episodes).unwrap();
    write!(out, "{}", table(roles_grid(est))).unwrap();
    writeln!(
        out,
        "LLM calls {}, tokens {}, dollars {}.",
        est.llm_calls,
        est.llm_tokens,
        est.dollars
            .map_or("unknown (a role has no price: --price-per-mtok or price_per_mtok in configs/models.toml)".into(), |d| format!("{d:.2}"))
    )
    .unwrap();
    write!(
        out,
        "Wall time: about {} at --concurrency {} and {} s per call",
        minutes_text(est.minutes_concurrency),
        est.concurrency,
        est.call_seconds
    )
    .unwrap();
    match est.minutes_rate_limits {
        Some(r) => writeln!(
            out,
            "; the --rpm/--tpm limits alone need {}: expect {}.",
            minutes_text(r),
            minutes_text(est.minutes())
        )
        .unwrap(),
        None => writeln!(out, " (no --rpm/--tpm limit given).").unwrap(),
    }
    if let Some(n) = est.batch_rounds {
        writeln!(
            out,
            "batch: about {n} round(s) (the most model calls one episode makes), each one provider batch to wait for (often minutes, at most 24 h); the dollars above are batch prices (half)."
        )
        .unwrap();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(role: &str, played_by: &str, llm: bool, calls: u64) -> RoleEstimate {
        RoleEstimate {
            role: role.into(),
            played_by: played_by.into(),
            llm,
            calls,
            prompt_tokens: if llm { 1200 } else { 0 },
            completion_tokens: if llm { 80 } else { 0 },
            dollars: None,
            on: None,
        }
    }

    /// The row of `role` in the rendered role table, cell by cell.
    fn cells<'a>(text: &'a str, role: &str) -> Vec<&'a str> {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{role}  ")))
            .unwrap_or_else(|| panic!("no {role} row: {text}"));
        line.split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect()
    }

    #[test]
    fn the_dry_run_tables_are_report_grids_with_every_fact() {
        let mut priced = role("agent", "openai:gpt-4o-mini", true, 31);
        priced.dollars = Some(0.0125);
        let est = Estimate {
            matrix: vec![
                (
                    "dojo-style/banking".into(),
                    "important_instructions".into(),
                    "sieve".into(),
                    13,
                ),
                ("dojo-style/slack".into(), "clean".into(), "sieve".into(), 1),
            ],
            episodes: 14,
            roles: vec![
                priced,
                role("judge", "openai:gpt-4o", true, 4),
                role("embedding", "lexical", false, 24),
                role("attacker", "templates, rendered locally", false, 0),
            ],
            ..Default::default()
        };
        let text = render(&est);
        assert!(
            !text.contains('│') && !text.contains('┆'),
            "no box drawing: {text}"
        );
        let header = |first: &str| text.lines().find(|l| l.starts_with(first)).unwrap();
        let matrix: Vec<&str> = header("Suite").split_whitespace().collect();
        assert_eq!(matrix, ["Suite", "Attack", "Defense", "Episodes"], "{text}");
        assert!(header("Role").contains("Prompt tok"), "{text}");
        // As in every report table, the family every suite shares is said once.
        assert!(text.contains("suites: dojo-style/…"), "{text}");
        assert!(
            text.lines()
                .any(|l| l.starts_with("banking  important_instructions  sieve"))
        );
        assert!(text.contains("14 episode(s) in all."), "{text}");
        assert_eq!(
            cells(&text, "agent"),
            ["agent", "openai:gpt-4o-mini", "31", "1200", "80", "0.01"]
        );
        assert_eq!(
            cells(&text, "judge"),
            ["judge", "openai:gpt-4o", "4", "1200", "80", "no price"]
        );
        assert_eq!(
            cells(&text, "embedding"),
            ["embedding", "lexical", "0 (24 scripted)", "–", "–", "–"]
        );
        assert_eq!(
            cells(&text, "attacker"),
            [
                "attacker",
                "templates, rendered locally",
                "0",
                "–",
                "–",
                "–"
            ]
        );
        assert!(text.contains("LLM calls 0, tokens 0"), "{text}");
    }
}
