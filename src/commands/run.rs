//! `run`: plan the matrix, run what is not yet recorded, summarise everything recorded.

use super::{CliError, Paths};
use crate::model::answer_judge::{AnswerJudge, JudgeFormat, UtilityFrom};
use crate::model::config::{ModelFactory, ModelOptions};
use crate::model::{Models, tokens::TokenCounter};
use crate::report::{self, Summary};
use crate::runner::identity::{RunSettings, short_hash};
use crate::runner::manifest::Manifest;
use crate::runner::{self, RunOutcome, RunPlan};
use std::path::PathBuf;
use std::sync::Arc;

/// The options of `run` (and, flattened, of `ablate`): the one definition of each run
/// flag, its help, default and parser. `RunArgs::default()` is what an empty command line
/// gives, so tests and library callers write only what they change.
#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct RunArgs {
    /// Suites: `all`, a family (`dojo-style`), `family/suite`, or a suite name; comma-separated.
    #[arg(long, default_value = "all")]
    pub suite: String,
    /// Attacks by name or alias, comma-separated; `all`; or `none` for clean episodes only.
    #[arg(long, default_value = "important")]
    pub attack: String,
    /// Defenses, comma-separated (see `list defenses`).
    #[arg(long, default_value = "none")]
    pub defense: String,
    /// The agent's model: `sim:obedient` (default), `sim:oracle`, `sim:p=<x>` (see `list models`).
    #[arg(long, default_value = "sim:obedient")]
    pub model: String,
    /// Model for defenses' planners (default: --model).
    #[arg(long)]
    pub planner_model: Option<String>,
    /// Model for defenses' judges (default: --model).
    #[arg(long)]
    pub judge_model: Option<String>,
    /// Number of seeds per episode.
    #[arg(long, default_value_t = 1)]
    pub seeds: u64,
    /// First seed; seeds are seed, seed+1, ….
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Episodes in flight at once.
    #[arg(long, default_value_t = 8)]
    pub concurrency: usize,
    /// Cap on agent model turns per episode; an episode that reaches it ends unsolved.
    #[arg(long, default_value_t = 30)]
    pub max_steps: usize,
    /// Only these user task ids (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub user_tasks: Option<Vec<String>>,
    /// Only these injection task ids (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub injection_tasks: Option<Vec<String>>,
    /// Skip the no-attack episodes (clean utility will be missing).
    #[arg(long)]
    pub no_clean: bool,
    /// Write the run into this directory (default: results/<run-id>/).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Where default run directories go.
    #[arg(skip = PathBuf::from("results"))]
    pub results_dir: PathBuf,
    /// Run only shard k of n of the matrix (`k/n`, 0-based), for array jobs.
    #[arg(long, value_name = "K/N", value_parser = parse_shard)]
    pub shard: Option<(usize, usize)>,
    /// Do not print the table.
    #[arg(long)]
    pub quiet: bool,
    /// SIEVE config: variants, thresholds, trust and risk tables (default: configs/sieve.toml).
    #[arg(long, value_name = "FILE")]
    pub sieve_config: Option<PathBuf>,
    /// Ad-hoc S_align weights for `sieve` and `audit`, e.g. `w_sem=0.2,w_causal=0.6`
    /// (unnamed weights are 0; renormalised to sum to 1).
    #[arg(long, value_name = "W=X,..")]
    pub weights: Option<String>,
    /// Seconds an `exec:` defense plugin may take to answer one hook (at most a day);
    /// past it, that episode errors and the run goes on.
    #[arg(long, value_name = "SECS", default_value_t = 30.0, value_parser = parse_plugin_timeout)]
    pub plugin_timeout: f64,
    /// The longest reply line an `exec:` defense plugin may send, in MiB (1 to 1024); a
    /// longer one errors that episode.
    #[arg(long, value_name = "MIB", default_value_t = 8, value_parser = clap::value_parser!(u64).range(*PLUGIN_MAX_REPLY_MIB.start()..=*PLUGIN_MAX_REPLY_MIB.end()))]
    pub plugin_max_reply: u64,
    /// Discard what the results folder holds (episodes, traces, summary, manifest) and
    /// start over: the way to rerun into a folder recorded under other settings.
    #[arg(long)]
    pub fresh: bool,
    /// On resume, keep episodes that errored instead of running them again.
    #[arg(long)]
    pub keep_errors: bool,
    /// How errored episodes count in every row's rates: `excluded` (their own outcome,
    /// outside every denominator) or `agentdojo` (the errors agentdojo 0.1.35 scores,
    /// context-length ones, are utility false and attack succeeded; the rest stay outside,
    /// as they would abort its run). Unset, each suite family's own: `agentdojo` for
    /// AgentDojo's own suites (`agentdojo@…`), `excluded` for the rest.
    #[arg(long, value_enum)]
    pub errors_as: Option<ErrorsAs>,
    /// Mark rows whose error rate exceeds this percentage and exit 3 when any does.
    #[arg(long, value_name = "PCT", default_value_t = 5.0, value_parser = parse_percent)]
    pub max_error_rate: f64,
    /// Accept a real agent with a scripted (`sim`) planner or judge. Scripted planners and
    /// judges start from the answer key (reference plans, which calls are injected), so
    /// every row they touch says so: "oracle judge" / "oracle planner" at full quality,
    /// "scripted judge (judge_auc=…)" / "scripted planner (planner_recall=…)" below it.
    #[arg(long)]
    pub allow_oracle_roles: bool,
    /// The model name attacks write into `{model}` (default: derived from --model without
    /// provider, path, alias or tool format, e.g. `openai:org/X@local+prompted` → `X`).
    #[arg(long, value_name = "NAME")]
    pub attack_model_name: Option<String>,
    /// Send nothing: print the matrix and, per role, the expected model calls, tokens,
    /// dollars and wall time, estimated offline by running the same matrix with the
    /// scripted model (see docs/real-model-runs.md).
    #[arg(long)]
    pub dry_run: bool,
    /// Seconds one model call is assumed to take, for --dry-run's wall time.
    #[arg(long, value_name = "SECS", default_value_t = 2.0, value_parser = parse_call_seconds)]
    pub call_seconds: f64,
    /// Stop admitting episodes once the next could take the folder's spending past this
    /// many dollars (needs prices); finish those in flight, write everything, exit 6.
    #[arg(long, value_name = "USD", value_parser = parse_budget_usd)]
    pub budget_usd: Option<f64>,
    /// As --budget-usd, in tokens (prompt + completion, every role and embeddings).
    #[arg(long, value_name = "N")]
    pub budget_tokens: Option<u64>,
    /// Grade every answer with this model too (`openai:<model>` or a named endpoint; never
    /// `sim`): records keep its verdict beside the checks' and the summary shows how far
    /// they agree (docs/answer-judge.md).
    #[arg(long, value_name = "MODEL", help_heading = "Answer judge")]
    pub answer_judge: Option<String>,
    /// How the answer judge is asked for JSON: `schema` (response_format json_schema) or
    /// `plain` (for servers without it); either way the reply is parsed strictly.
    #[arg(
        long,
        value_enum,
        default_value = "schema",
        help_heading = "Answer judge"
    )]
    pub answer_judge_format: JudgeFormat,
    /// Which verdict the utility columns count: `checks` (deterministic), `judge` (the
    /// answer judge for the answer, the checks for the rest) or `both` (both must hold);
    /// rows not counted by the checks alone say so beside the model.
    #[arg(
        long,
        value_enum,
        default_value = "checks",
        help_heading = "Answer judge"
    )]
    pub utility_from: UtilityFrom,
    /// Endpoint, generation, cache/replay, embedder and price settings.
    #[command(flatten)]
    pub model_options: ModelOptions,
}

fn parse_budget_usd(s: &str) -> Result<f64, String> {
    s.trim()
        .trim_start_matches('$')
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x >= 0.0)
        .ok_or_else(|| format!("`{s}` is not an amount of dollars (a finite number >= 0)"))
}

fn parse_call_seconds(s: &str) -> Result<f64, String> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x >= 0.0 && *x < 1e6)
        .ok_or_else(|| format!("`{s}` is not a number of seconds (finite, >= 0)"))
}

pub use crate::aggregate::metrics::{ErrorPolicy, ErrorsAs};

impl RunArgs {
    /// The error convention of this run's rows: `--errors-as` for all, else each family's.
    pub fn error_policy(&self) -> ErrorPolicy {
        self.errors_as
            .map_or(ErrorPolicy::ByFamily, ErrorPolicy::All)
    }
}

fn parse_plugin_timeout(s: &str) -> Result<f64, String> {
    let max = crate::defense::plugin::MAX_TIMEOUT_SECS;
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|t| t.is_finite() && *t > 0.0 && *t <= max)
        .ok_or_else(|| format!("`{s}` is not a number of seconds in (0, {max}]"))
}

pub fn parse_percent(s: &str) -> Result<f64, String> {
    s.trim()
        .trim_end_matches('%')
        .parse::<f64>()
        .ok()
        .filter(|p| p.is_finite() && (0.0..=100.0).contains(p))
        .ok_or_else(|| format!("`{s}` is not a percentage in [0, 100]"))
}

impl Default for RunArgs {
    /// What an empty command line gives: the defaults live in the clap attributes only.
    fn default() -> Self {
        use clap::{Args, FromArgMatches};
        let cmd = RunArgs::augment_args(clap::Command::new("run"));
        let matches = cmd
            .try_get_matches_from(["run"])
            .expect("the defaults parse");
        RunArgs::from_arg_matches(&matches).expect("the defaults parse")
    }
}

/// The most seeds one run takes: far beyond any useful repeat count, and small enough
/// that the matrix of seeds fits in memory.
pub const MAX_SEEDS: u64 = 100_000;

/// The range of `--plugin-max-reply`, in MiB.
pub const PLUGIN_MAX_REPLY_MIB: std::ops::RangeInclusive<u64> = 1..=1024;

/// The most episodes in flight: each may hold a provider process and a plugin process.
pub const MAX_CONCURRENCY: usize = 10_000;

/// What `run` produced.
pub struct RunReport {
    pub out: PathBuf,
    pub outcome: RunOutcome,
    pub summary: Summary,
    /// `--max-error-rate`, in percent.
    pub max_error_rate: f64,
    /// The answer judge's agreement with the checks, as Markdown (judged runs only).
    pub judge_agreement: Option<String>,
}

impl RunReport {
    /// A line on what ran, for the terminal.
    pub fn status(&self) -> String {
        let o = &self.outcome;
        let mut s = format!(
            "{} episode(s) run, {} already recorded, {} errored; results in {}",
            o.ran,
            o.skipped,
            o.errored,
            self.out.display()
        );
        if o.dropped_partial_line {
            s.push_str("\nnote: a half-written last line from an interrupted run was dropped; that episode ran again");
        }
        s
    }

    /// How the run ended, as the command's result: a fatal stop, an interruption, or
    /// rows above `--max-error-rate` are errors with their own exit codes.
    pub fn verdict(&self) -> Result<(), CliError> {
        let o = &self.outcome;
        if let Some(f) = &o.fatal {
            return Err(CliError::failed(format!("run stopped: {f}")));
        }
        if o.interrupted {
            return Err(CliError::Interrupted);
        }
        if let Some(why) = &o.budget_stop {
            return Err(CliError::BudgetSpent(format!(
                "budget reached ({why}); every episode run is written, {} of the matrix not run. Rerun the same command with a higher budget to resume within it",
                o.planned.saturating_sub(o.skipped + o.ran)
            )));
        }
        let over: Vec<String> = self
            .summary
            .rows
            .iter()
            .filter(|r| r.too_many_errors)
            .map(|r| {
                format!(
                    "{}/{}/{} ({} of {} episodes errored)",
                    r.suite, r.attack, r.defense, r.errors, r.episodes
                )
            })
            .collect();
        if !over.is_empty() {
            return Err(CliError::TooManyErrors(format!(
                "error rate above --max-error-rate {}% in: {}. Their rates rest on the episodes that did not error; see the errors in episodes.jsonl, fix the cause and rerun the same command (errored episodes run again)",
                self.max_error_rate,
                over.join("; ")
            )));
        }
        Ok(())
    }
}

fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// The default run id: readable and a function of the command line, so rerunning the
/// same command finds the same directory and resumes.
pub fn default_run_id(a: &RunArgs) -> String {
    let mut id = format!(
        "{}__{}__{}__{}",
        slug(&a.suite),
        slug(&a.attack),
        slug(&a.defense),
        slug(&a.model)
    );
    if a.seed != 0 || a.seeds != 1 {
        id.push_str(&format!("__seed{}x{}", a.seed, a.seeds));
    }
    if let Some(w) = &a.weights {
        id.push_str(&format!("__w-{}", slug(w)));
    }
    if let Some(c) = &a.sieve_config {
        let stem = c.file_stem().map_or("cfg".into(), |s| s.to_string_lossy());
        id.push_str(&format!("__cfg-{}", slug(&stem)));
    }
    if let Some((k, n)) = a.shard {
        id.push_str(&format!("__shard{k}of{n}"));
    }
    id
}

/// Parses `k/n` with 0 ≤ k < n.
pub fn parse_shard(s: &str) -> Result<(usize, usize), String> {
    let (k, n) = s
        .split_once('/')
        .ok_or_else(|| format!("--shard must look like k/n, got `{s}`"))?;
    let (k, n): (usize, usize) = (
        k.trim()
            .parse()
            .map_err(|_| format!("bad shard index `{k}`"))?,
        n.trim()
            .parse()
            .map_err(|_| format!("bad shard count `{n}`"))?,
    );
    if n == 0 || k >= n {
        return Err(format!("--shard needs 0 <= k < n, got {k}/{n}"));
    }
    Ok((k, n))
}

/// Builds the models for every role from their specs, with default settings.
pub fn build_models(
    model: &str,
    planner: Option<&str>,
    judge: Option<&str>,
) -> Result<Models, CliError> {
    let tokens = Arc::new(TokenCounter::new()?);
    let factory = ModelFactory::new(ModelOptions::default(), Default::default(), tokens)
        .map_err(CliError::bad_input)?;
    build_models_with(&factory, model, planner, judge)
}

/// Builds the models for every role with a factory (flags, named endpoints, cache).
/// Roles on the same endpoint share its connection pool and rate limits.
pub fn build_models_with(
    factory: &ModelFactory,
    model: &str,
    planner: Option<&str>,
    judge: Option<&str>,
) -> Result<Models, CliError> {
    let make = |spec: &str| factory.chat(spec).map_err(CliError::bad_input);
    let agent = make(model)?;
    let planner = match planner {
        Some(p) => make(p)?,
        None => agent.clone(),
    };
    let judge = match judge {
        Some(j) => make(j)?,
        None => agent.clone(),
    };
    let embedder = factory
        .embedder(factory.options().embedder.as_deref())
        .map_err(CliError::bad_input)?;
    Ok(Models {
        agent,
        planner,
        judge,
        embedder,
        tokens: factory.tokens(),
    })
}

/// The answer judge of `--answer-judge`, with its own request fields; `--utility-from`
/// other than `checks` needs one.
pub fn build_answer_judge(
    factory: &ModelFactory,
    spec: Option<&str>,
    format: JudgeFormat,
    utility_from: UtilityFrom,
) -> Result<Option<Arc<AnswerJudge>>, CliError> {
    let Some(spec) = spec else {
        if utility_from != UtilityFrom::Checks {
            return Err(CliError::bad_input(format!(
                "--utility-from {} needs --answer-judge MODEL",
                utility_from.as_str()
            )));
        }
        return Ok(None);
    };
    let body = match format {
        JudgeFormat::Schema => crate::model::answer_judge::response_format()
            .as_object()
            .cloned()
            .unwrap_or_default(),
        JudgeFormat::Plain => Default::default(),
    };
    let model = factory
        .chat_with(spec, body)
        .map_err(|e| CliError::bad_input(format!("--answer-judge: {e}")))?;
    AnswerJudge::new(model, utility_from, format)
        .map(|j| Some(Arc::new(j)))
        .map_err(CliError::bad_input)
}

/// Writes the answer judge's agreement with the checks (`answer_judge.json`, `.md`) and
/// returns the Markdown; `None` when no record of the folder was judged.
fn write_agreement(out: &std::path::Path) -> Result<Option<String>, CliError> {
    let mut by_key = std::collections::HashMap::new();
    crate::record::for_each_record(
        &out.join(crate::record::EPISODES),
        |p| {
            if let Ok(r) = p.record {
                by_key.insert(r.key.clone(), r);
            }
            Ok(())
        },
        |e| CliError::failed(format!("reading {}: {e}", out.display())),
    )?;
    let mut records: Vec<_> = by_key.into_values().collect();
    records.sort_by(|a, b| a.key.cmp(&b.key));
    let Some(rep) = crate::aggregate::agreement::agreement(&records) else {
        return Ok(None);
    };
    let md = report::agreement::markdown(&rep);
    let json = serde_json::to_string_pretty(&rep).expect("agreement serialises");
    for (name, text) in [("answer_judge.json", json), ("answer_judge.md", md.clone())] {
        std::fs::write(out.join(name), text).map_err(|e| {
            CliError::failed(format!("cannot write {}: {e}", out.join(name).display()))
        })?;
    }
    Ok(Some(md))
}

/// Defense options from the run's flags: the SIEVE config (an explicit file, else
/// `configs/sieve.toml` under the home directory, else the built-in copy) and `--weights`.
pub fn defense_options(
    paths: &Paths,
    sieve_config: Option<&std::path::Path>,
    weights: Option<&str>,
) -> Result<crate::defense::BuildOptions, CliError> {
    use crate::defense::sieve::config::{SieveConfig, Weights};
    let default = paths.configs.join("sieve.toml");
    let config = match sieve_config {
        Some(p) => SieveConfig::load(p)?,
        None if default.is_file() => SieveConfig::load(&default)?,
        None => SieveConfig::builtin(),
    };
    let weights = weights.map(Weights::parse_adhoc).transpose()?;
    Ok(crate::defense::BuildOptions {
        sieve_config: Some(Arc::new(config)),
        weights,
        ..Default::default()
    })
}

/// Refuses a SIEVE config whose `[risk]` or `[trust.tools]` table names a tool no
/// domain of this build and no selected suite has: a misspelt tool would otherwise keep
/// its default risk or trust in silence.
fn check_tool_tables(
    options: &crate::defense::BuildOptions,
    suites: &[crate::suite::Suite],
) -> Result<(), CliError> {
    let Some(config) = &options.sieve_config else {
        return Ok(());
    };
    let mut known: std::collections::BTreeSet<String> = crate::tools::DOMAINS
        .iter()
        .filter_map(|d| crate::tools::domain_tools(d))
        .flatten()
        .map(|t| t.name.as_str().to_string())
        .collect();
    known.extend(
        suites
            .iter()
            .flat_map(|s| s.tools.names().map(|n| n.as_str().to_string())),
    );
    for (table, names) in [
        ("[risk]", config.risk.keys().collect::<Vec<_>>()),
        ("[trust.tools]", config.trust.tools.keys().collect()),
    ] {
        if let Some(bad) = names.into_iter().find(|n| !known.contains(*n)) {
            return Err(CliError::bad_input(format!(
                "{}: {table} names `{bad}`, which no tool domain and no selected suite has{}",
                config.source,
                crate::suggest::did_you_mean(bad, known.iter().map(String::as_str))
            )));
        }
    }
    Ok(())
}

/// One cheap request to every endpoint in use (agent, planner, judge, embedder) before
/// the matrix: what would fail every episode stops the run now, naming the URL and role.
async fn preflight(models: &Models, tools: &[crate::tools::ToolSchema]) -> Result<(), CliError> {
    let mut seen: Vec<&Arc<dyn crate::model::ChatModel>> = Vec::new();
    for (role, m) in [
        ("agent", &models.agent),
        ("planner", &models.planner),
        ("judge", &models.judge),
    ] {
        if seen.iter().any(|s| Arc::ptr_eq(s, m)) {
            continue;
        }
        seen.push(m);
        // Only the agent is offered tools; planners and judges answer in JSON.
        let offered = if role == "agent" { tools } else { &[] };
        let warnings = m
            .preflight(offered)
            .await
            .map_err(|e| CliError::failed(format!("{role}: {e}")))?;
        for w in warnings {
            eprintln!("warning: {role} {w}");
        }
    }
    models
        .embedder
        .preflight()
        .await
        .map_err(|e| CliError::failed(format!("embedder: {e}")))
}

/// The hash of the defenses' configuration (the resolved SIEVE config and `--weights`)
/// in its serialised form, which a field added with `skip_serializing_if` at its
/// default leaves as it was (see `SieveConfig`).
fn defense_config(options: &crate::defense::BuildOptions) -> String {
    let form = serde_json::json!({
        "sieve": options.sieve_config.as_deref(),
        "weights": options.weights,
    });
    short_hash(form.to_string().as_bytes())
}

/// What folders recorded before [`defense_config`] hold instead: the hash of the
/// configuration's `Debug` text. Only read, to recognise such a folder as recorded with
/// this very configuration (see `open_manifest`).
fn defense_config_as_debug_text(options: &crate::defense::BuildOptions) -> String {
    let mut text = String::new();
    if let Some(c) = &options.sieve_config {
        let mut c = (**c).clone();
        c.source.clear();
        text.push_str(&format!("{c:?}"));
    }
    text.push_str(&format!("|weights={:?}", options.weights));
    short_hash(text.as_bytes())
}

/// The settings of this invocation that decide outcomes (see `runner::identity`).
fn run_settings(
    models: &Models,
    suites: &[crate::suite::Suite],
    options: &crate::defense::BuildOptions,
    args: &RunArgs,
) -> RunSettings {
    let defense_config = defense_config(options);
    RunSettings {
        harness_version: env!("CARGO_PKG_VERSION").to_string(),
        agent: models.agent.identity(),
        planner: models.planner.identity(),
        judge: models.judge.identity(),
        embedder: models.embedder.identity(),
        max_steps: args.max_steps,
        defense_config,
        system_prompts: suites
            .iter()
            .map(|s| {
                (
                    s.qualified_name(),
                    short_hash(crate::episode::system_prompt(s).as_bytes()),
                )
            })
            .collect(),
        extra: Default::default(),
    }
}

/// Which roles are scripted. Scripted planners and judges read the answer key, so beside
/// a real agent they are oracles and every row says so.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Roles {
    pub agent_scripted: bool,
    pub planner_scripted: bool,
    pub judge_scripted: bool,
    /// The labels rows carry for the scripted planner and judge (`oracle judge`, …).
    pub helper_labels: Vec<String>,
}

impl Roles {
    pub fn of(models: &Models) -> Roles {
        use crate::model::Component;
        Roles {
            agent_scripted: models.agent.simulated(),
            planner_scripted: models.planner.simulated(),
            judge_scripted: models.judge.simulated(),
            helper_labels: [
                models.planner.scripted(Component::Planner),
                models.judge.scripted(Component::Judge),
            ]
            .into_iter()
            .flatten()
            .map(|r| r.label)
            .collect(),
        }
    }

    fn scripted_helpers(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.planner_scripted {
            v.push("planner");
        }
        if self.judge_scripted {
            v.push("judge");
        }
        v
    }

    /// A real agent beside a scripted planner or judge.
    pub fn oracle_with_real_agent(&self) -> bool {
        !self.agent_scripted && (self.planner_scripted || self.judge_scripted)
    }

    /// "oracle planner", "oracle judge": what rows of such a run say.
    pub fn oracle_labels(&self) -> Vec<String> {
        self.helper_labels.clone()
    }

    /// The roles that are scripted, by name (`agent`, `planner`, `judge`).
    pub fn scripted(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.agent_scripted {
            v.push("agent");
        }
        v.extend(self.scripted_helpers());
        v
    }
}

/// Removes what a run writes into a folder (`--fresh`); other files are left alone.
fn clear_folder(out: &std::path::Path) -> Result<(), CliError> {
    use runner::files::{LOCK, RUN_FILES};
    // The lock stays: this process holds it.
    for name in RUN_FILES.iter().filter(|n| **n != LOCK) {
        let p = out.join(name);
        match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(CliError::failed(format!(
                    "--fresh: cannot remove {}: {e}",
                    p.display()
                )));
            }
        }
    }
    Ok(())
}

/// The folder's manifest for this invocation: the recorded one when its settings match
/// (with this invocation appended), a new one for an empty folder, and a refusal naming
/// every changed setting otherwise.
fn open_manifest(
    out: &std::path::Path,
    run_id: &str,
    settings: RunSettings,
    defense_config_before: &str,
    roles: &Roles,
    models: &Models,
    args: &RunArgs,
) -> Result<Manifest, CliError> {
    use runner::manifest::{Found, Invocation, now, read};
    let has_records = std::fs::metadata(out.join(crate::record::EPISODES))
        .map(|m| m.len() > 0)
        .unwrap_or(false);
    let ways_out = format!(
        "Rerun into a new folder (--out DIR), or pass --fresh to discard what {} holds and start over",
        out.display()
    );
    let invocation = Invocation {
        command: std::env::args().collect(),
        started: now(),
        finished: None,
        ran: 0,
        errored: 0,
        outcome: "running".into(),
    };
    let recorded = match read(out) {
        Found::Manifest(m) => Some(*m),
        Found::None if has_records => {
            return Err(CliError::bad_input(format!(
                "{} holds episodes but no {}: the settings they were recorded under are unknown. {ways_out}.",
                out.display(),
                crate::record::RUN_INFO
            )));
        }
        Found::Unreadable(why) if has_records => {
            return Err(CliError::bad_input(format!(
                "{why}: this manifest is not readable (made by an older version?), so the settings of the episodes recorded there are unknown. {ways_out}."
            )));
        }
        _ => None,
    };
    let errors_as = args.error_policy().as_str().to_string();
    let price = args.model_options.price_per_mtok.map(|(i, o)| [i, o]);
    match recorded {
        Some(mut m) => {
            // A folder recorded before the identity hashed the serialised configuration
            // holds the hash of its `Debug` text: the same configuration, so the same run.
            if m.settings.defense_config == defense_config_before {
                m.settings.defense_config = settings.defense_config.clone();
            }
            let changes: Vec<String> = settings
                .changes_from(&m.settings)
                .iter()
                .map(ToString::to_string)
                .collect();
            if !changes.is_empty() && has_records {
                return Err(CliError::bad_input(format!(
                    "{} was recorded under other settings; reusing its episodes would report them as this run's. Changed:\n  {}\n{ways_out}.",
                    out.display(),
                    changes.join("\n  ")
                )));
            }
            m.settings = settings.merged_with(&m.settings);
            m.identity = m.settings.fingerprint();
            m.errors_as = errors_as;
            m.price_per_mtok = price.or(m.price_per_mtok);
            m.roles = serde_json::to_value(roles).expect("roles serialise");
            m.simulated = m.simulated || models.any_simulated();
            if m.shard != args.shard && has_records {
                return Err(CliError::bad_input(format!(
                    "{} holds {}; this run is {}. Shards go into folders of their own (then `merge`). {ways_out}.",
                    out.display(),
                    shard_name(m.shard),
                    shard_name(args.shard)
                )));
            }
            m.shard = args.shard;
            m.finished = None;
            m.invocations.push(invocation);
            Ok(m)
        }
        None => Ok(Manifest {
            run_id: run_id.to_string(),
            crate_version: env!("CARGO_PKG_VERSION").to_string(),
            git_commit: runner::manifest::git_commit(),
            identity: settings.fingerprint(),
            settings,
            roles: serde_json::to_value(roles).expect("roles serialise"),
            simulated: models.any_simulated(),
            errors_as,
            price_per_mtok: price,
            shard: args.shard,
            started: invocation.started.clone(),
            finished: None,
            invocations: vec![invocation],
            budget: Default::default(),
            budget_parts: Default::default(),
            served_models: Default::default(),
        }),
    }
}

/// A provider-rendered attack (`agentdojo:important_instructions`) needs every selected
/// suite to come from that package's provider, and the provider to know the attack.
fn check_provider_attacks(
    suites: &[crate::suite::Suite],
    attacks: &[crate::attack::Attack],
) -> Result<(), CliError> {
    for a in attacks {
        let Some(name) = &a.provider_attack else {
            continue;
        };
        for s in suites {
            let ok = crate::external::served(s)
                .filter(|x| x.hello.package == a.family)
                .map(|x| (x.attacks.contains(name), x.attacks.join(", ")));
            match ok {
                Some((true, _)) => {}
                Some((false, known)) => {
                    let hint = crate::suggest::did_you_mean(
                        name,
                        crate::external::served(s)
                            .into_iter()
                            .flat_map(|x| x.attacks.iter().map(String::as_str)),
                    );
                    return Err(CliError::bad_input(format!(
                        "attack `{}`: the provider of `{}` has no attack `{name}`{hint}; it has: {known}",
                        a.name,
                        s.qualified_name()
                    )));
                }
                None => {
                    return Err(CliError::bad_input(format!(
                        "attack `{}` is rendered by the `{}` provider, but suite `{}` is not one of its suites",
                        a.name,
                        a.family,
                        s.qualified_name()
                    )));
                }
            }
        }
    }
    Ok(())
}

/// A provider's suites get their data-only attacks only when a run asks for them: the
/// derivation replays every injectable user task's plan in the provider's process.
async fn derive_provider_data_only(suites: &mut [crate::suite::Suite]) -> Result<(), CliError> {
    for s in suites.iter_mut().filter(|s| s.external.is_some()) {
        s.data_only = crate::external::data_only::derive(s).await.map_err(|e| {
            CliError::bad_input(format!(
                "{}: cannot derive the data-only attacks: {e}",
                s.qualified_name()
            ))
        })?;
    }
    Ok(())
}

fn shard_name(s: Option<(usize, usize)>) -> String {
    s.map_or("the whole matrix".into(), |(k, n)| format!("shard {k}/{n}"))
}

/// Everything a run is built from, checked: what `run` executes and `--dry-run` estimates.
pub struct Prepared {
    pub suites: Vec<crate::suite::Suite>,
    pub selection: crate::attack::Selection,
    pub options: crate::defense::BuildOptions,
    pub defenses: Vec<Arc<dyn crate::defense::Defense>>,
    pub models: Models,
    pub attack_model_name: String,
    pub roles: Roles,
    pub last_seed: u64,
    /// The named endpoints of `configs/models.toml`.
    pub named: std::collections::BTreeMap<String, crate::model::config::NamedEndpoint>,
    /// The model-graded answer judge (`--answer-judge`), if any.
    pub answer_judge: Option<Arc<crate::model::answer_judge::AnswerJudge>>,
}

/// The counts `run` takes (concurrency, steps, seeds) in range; the last seed.
fn check_counts(args: &RunArgs) -> Result<u64, CliError> {
    if args.concurrency == 0 {
        return Err(CliError::bad_input("--concurrency must be at least 1"));
    }
    if args.concurrency > MAX_CONCURRENCY {
        return Err(CliError::bad_input(format!(
            "--concurrency must be at most {MAX_CONCURRENCY} (episodes in flight, each with its own provider or plugin process), got {}",
            args.concurrency
        )));
    }
    if args.max_steps == 0 {
        return Err(CliError::bad_input("--max-steps must be at least 1"));
    }
    if args.seeds == 0 || args.seeds > MAX_SEEDS {
        return Err(CliError::bad_input(format!(
            "--seeds must be between 1 and {MAX_SEEDS}, got {}",
            args.seeds
        )));
    }
    args.seed.checked_add(args.seeds - 1).ok_or_else(|| {
        CliError::bad_input(format!(
            "--seed {} with --seeds {} runs past the largest seed ({}); lower one of them",
            args.seed,
            args.seeds,
            u64::MAX
        ))
    })
}

/// `--user-tasks` and `--injection-tasks` name tasks of the selected suites.
fn check_task_filters(args: &RunArgs, suites: &[crate::suite::Suite]) -> Result<(), CliError> {
    for (flag, filter, ids) in [
        (
            "--user-tasks",
            &args.user_tasks,
            suites
                .iter()
                .flat_map(|s| s.user_tasks.iter().map(|t| t.id.0.clone()))
                .collect::<Vec<_>>(),
        ),
        (
            "--injection-tasks",
            &args.injection_tasks,
            suites
                .iter()
                .flat_map(|s| s.injection_tasks.iter().map(|t| t.id.0.clone()))
                .collect(),
        ),
    ] {
        if let Some(f) = filter
            && let Some(bad) = f.iter().find(|x| !ids.contains(x))
        {
            return Err(CliError::bad_input(format!(
                "{flag}: no task `{bad}` in the selected suites"
            )));
        }
    }
    Ok(())
}

/// The defenses `--defense` names, each once.
fn build_defenses(
    args: &RunArgs,
    options: &crate::defense::BuildOptions,
) -> Result<Vec<Arc<dyn crate::defense::Defense>>, CliError> {
    let mut defenses: Vec<Arc<dyn crate::defense::Defense>> = Vec::new();
    for d in crate::defense::expand(&args.defense) {
        let built = crate::defense::build_with(&d, options)?;
        // `none,none` or `sieve,sieve:full` name one defense: running it twice would
        // count every episode twice.
        if !defenses.iter().any(|x| x.name() == built.name()) {
            defenses.push(built);
        }
    }
    if defenses.is_empty() {
        return Err(CliError::bad_input("--defense names no defense"));
    }
    Ok(defenses)
}

/// Loads and checks what `args` select (suites, attacks, defenses, models), before any
/// request is sent.
pub async fn prepare(paths: &Paths, args: &RunArgs) -> Result<Prepared, CliError> {
    let last_seed = check_counts(args)?;
    // Its tables are built in the background while the suites load.
    let tokens = paths.token_counter()?;
    let suites = super::load_selected(paths, &args.suite, args.concurrency).await?;
    let build = paths.proof_build();
    let problems: Vec<String> = suites
        .iter()
        // An external suite's tasks are proved by its provider (and by the oracle run).
        .filter(|s| s.external.is_none())
        .flat_map(|s| {
            // Proved once per suite fingerprint and build (see `suite::proof_cache`).
            crate::suite::proof_cache::prove(s, paths.proofs.as_deref(), build.as_deref())
                .0
                .into_iter()
                .map(move |p| format!("{}/{p}", s.dir.display()))
        })
        .collect();
    if !problems.is_empty() {
        return Err(CliError::bad_input(format!(
            "the selected suites fail validation (see `sieve-bench check-suites`):\n  {}",
            problems.join("\n  ")
        )));
    }
    let all_attacks =
        crate::attack::load_all(&paths.attacks).map_err(|e| CliError::bad_input(e.to_string()))?;
    let selection =
        crate::attack::select(&all_attacks, &args.attack).map_err(CliError::bad_input)?;
    check_provider_attacks(&suites, &selection.templates)?;
    let mut suites = suites;
    if selection.data_only {
        derive_provider_data_only(&mut suites).await?;
    }
    let mut options =
        defense_options(paths, args.sieve_config.as_deref(), args.weights.as_deref())?;
    check_tool_tables(&options, &suites)?;
    // Library callers skip the flag's parser: the same range holds for them.
    parse_plugin_timeout(&args.plugin_timeout.to_string())
        .map_err(|e| CliError::bad_input(format!("--plugin-timeout: {e}")))?;
    options.plugin_timeout = Some(std::time::Duration::from_secs_f64(args.plugin_timeout));
    if !PLUGIN_MAX_REPLY_MIB.contains(&args.plugin_max_reply) {
        return Err(CliError::bad_input(format!(
            "--plugin-max-reply: must be 1 to {} MiB, got {}",
            PLUGIN_MAX_REPLY_MIB.end(),
            args.plugin_max_reply
        )));
    }
    options.plugin_max_reply = Some((args.plugin_max_reply as usize) << 20);
    let defenses = build_defenses(args, &options)?;
    check_task_filters(args, &suites)?;
    let named = crate::model::config::load_named(&paths.configs).map_err(CliError::bad_input)?;
    let factory = ModelFactory::new(args.model_options.clone(), named.clone(), tokens)
        .map_err(CliError::bad_input)?;
    let models = build_models_with(
        &factory,
        &args.model,
        args.planner_model.as_deref(),
        args.judge_model.as_deref(),
    )?;
    let attack_model_name = match &args.attack_model_name {
        Some(n) if n.trim().is_empty() => {
            return Err(CliError::bad_input("--attack-model-name: empty name"));
        }
        Some(n) => n.trim().to_string(),
        None => crate::attack::plain_model_name(models.agent.name()),
    };
    let roles = Roles::of(&models);
    if roles.oracle_with_real_agent() && !args.allow_oracle_roles {
        return Err(CliError::bad_input(format!(
            "the agent {} is a real model but the {} scripted: a scripted planner or judge starts from the answer key (the reference plans, which calls are injected), so its rows would not measure the defense as deployed. Give it a real model (--planner-model / --judge-model), or pass --allow-oracle-roles to accept rows marked {}",
            models.agent.name(),
            roles.scripted_helpers().join(" and ")
                + if roles.scripted_helpers().len() > 1 {
                    " are"
                } else {
                    " is"
                },
            roles.oracle_labels().join(" / ")
        )));
    }
    let answer_judge = build_answer_judge(
        &factory,
        args.answer_judge.as_deref(),
        args.answer_judge_format,
        args.utility_from,
    )?;
    Ok(Prepared {
        suites,
        selection,
        options,
        defenses,
        models,
        attack_model_name,
        roles,
        last_seed,
        named,
        answer_judge,
    })
}

/// The run's folder: `--out`, or the run id under the results folder; refused when it
/// holds something other than a run, created when missing.
fn out_folder(args: &RunArgs, run_id: &str) -> Result<std::path::PathBuf, CliError> {
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| args.results_dir.join(run_id));
    if let runner::files::Folder::Foreign(holds) = runner::files::inspect(&out)
        .map_err(|e| CliError::bad_input(format!("cannot read {}: {e}", out.display())))?
    {
        return Err(CliError::bad_input(runner::files::not_a_run(
            &out, &holds, "run",
        )));
    }
    std::fs::create_dir_all(&out)
        .map_err(|e| CliError::bad_input(format!("cannot create {}: {e}", out.display())))?;
    Ok(out)
}

/// The order of this command line's suites, attacks and defenses, for the tables.
fn order_of(
    suites: &[crate::suite::Suite],
    selection: &crate::attack::Selection,
    defenses: &[Arc<dyn crate::defense::Defense>],
) -> report::Order {
    report::Order {
        suites: suites.iter().map(|s| s.qualified_name()).collect(),
        attacks: selection
            .templates
            .iter()
            .map(|a| a.name.clone())
            .chain(
                selection
                    .context
                    .then(|| crate::attack::CONTEXT.to_string()),
            )
            .chain(
                selection
                    .data_only
                    .then(|| crate::suite::data_only::ATTACK.to_string()),
            )
            .collect(),
        defenses: defenses.iter().map(|d| d.name().to_string()).collect(),
    }
}

fn write_manifest(out: &std::path::Path, manifest: &Manifest) -> Result<(), CliError> {
    runner::manifest::write(out, manifest).map_err(|e| {
        CliError::failed(format!(
            "cannot write {}: {e}",
            out.join(crate::record::RUN_INFO).display()
        ))
    })
}

/// What the invocation came to, and the run's budget ledger and served models, in the
/// manifest.
fn finish_manifest(
    manifest: &mut Manifest,
    result: &Result<RunOutcome, runner::RunError>,
    requested: &std::collections::BTreeMap<crate::model::Component, String>,
) {
    let invocation = manifest.invocations.last_mut().expect("pushed above");
    invocation.finished = Some(runner::manifest::now());
    invocation.outcome = match result {
        Ok(o) if o.interrupted => "interrupted".into(),
        Ok(o) => o
            .fatal
            .as_ref()
            .map_or("done".into(), |f| format!("stopped: {f}")),
        Err(e) => format!("refused: {e}"),
    };
    if let Ok(o) = result {
        invocation.ran = o.ran;
        invocation.errored = o.errored;
        if o.budget_stop.is_some() {
            invocation.outcome = "stopped: budget".into();
        }
        manifest.budget = o.ledger.clone();
        super::estimate::record_lineage(&mut manifest.served_models, requested, &o.served);
    }
    manifest.finished = Some(runner::manifest::now());
}

/// Runs (or resumes) and summarises.
pub async fn run(paths: &Paths, args: RunArgs) -> Result<RunReport, CliError> {
    let Prepared {
        suites,
        selection,
        options,
        defenses,
        models,
        attack_model_name,
        roles,
        last_seed,
        named,
        answer_judge,
    } = prepare(paths, &args).await?;
    if let Some(first) = suites.first() {
        preflight(&models, &first.tools.schemas()).await?;
    }
    let mut settings = run_settings(&models, &suites, &options, &args);
    if let Some(j) = &answer_judge {
        j.model()
            .preflight(&[])
            .await
            .map_err(|e| CliError::failed(format!("answer judge: {e}")))?;
        settings.extra.insert("answer_judge".into(), j.identity());
    }
    let run_id = default_run_id(&args);
    let out = out_folder(&args, &run_id)?;
    let order = order_of(&suites, &selection, &defenses);
    let _lock = runner::files::FolderLock::acquire(&out).map_err(|e| match e {
        runner::files::LockError::Busy(_) => CliError::Locked(e.to_string()),
        runner::files::LockError::Io(..) => CliError::failed(e.to_string()),
    })?;
    if args.fresh {
        clear_folder(&out)?;
    }
    let mut manifest = open_manifest(
        &out,
        &run_id,
        settings,
        &defense_config_as_debug_text(&options),
        &roles,
        &models,
        &args,
    )?;
    let suites: Vec<Arc<crate::suite::Suite>> = suites.into_iter().map(Arc::new).collect();
    let mut budget = runner::budget::Budget::new(
        args.budget_usd,
        args.budget_tokens,
        super::estimate::prices(&args, &named, &models)?,
        manifest.budget.clone(),
    );
    if budget.limited() {
        // What each episode could cost: its dry-run estimate (nothing is sent).
        let records = super::estimate::stand_in_records(
            &args,
            super::estimate::StandIn {
                suites: &suites,
                selection: &selection,
                defenses: &defenses,
                models: &models,
                attack_model_name: &attack_model_name,
                last_seed,
            },
        )
        .await?;
        budget.expected = super::estimate::expected_costs(&records, &budget.prices);
    }
    let requested = super::estimate::requested_models(&models);
    write_manifest(&out, &manifest)?;
    let plan = RunPlan {
        run_id,
        out: out.clone(),
        suites,
        attacks: selection.templates,
        context: selection.context,
        data_only: selection.data_only,
        clean: !args.no_clean,
        defenses,
        models,
        seeds: (args.seed..=last_seed).collect(),
        user_tasks: args.user_tasks.clone(),
        injection_tasks: args.injection_tasks.clone(),
        max_steps: args.max_steps,
        concurrency: args.concurrency,
        shard: args.shard,
        retry_errors: !args.keep_errors,
        attack_model_name,
        budget,
        answer_judge,
    };
    let result = runner::execute(plan).await;
    finish_manifest(&mut manifest, &result, &requested);
    write_manifest(&out, &manifest)?;
    let outcome = result.map_err(|e| match e {
        runner::RunError::Stale(m) => CliError::bad_input(m),
        runner::RunError::NothingToRun(m) => CliError::NothingToRun(m),
        e @ runner::RunError::Panicked { .. } => CliError::Panicked(e.to_string()),
        runner::RunError::Io(e) => {
            CliError::failed(format!("writing results to {}: {e}", out.display()))
        }
    })?;
    let summary = summarise(&out, &args, &manifest, order)?;
    let judge_agreement = write_agreement(&out)?;
    Ok(RunReport {
        out,
        outcome,
        summary,
        max_error_rate: args.max_error_rate,
        judge_agreement,
    })
}

/// The folder's summary as this command line shows it: served-model footnotes, prices,
/// the error-rate flag and this command line's row order; written in every format.
fn summarise(
    out: &std::path::Path,
    args: &RunArgs,
    manifest: &Manifest,
    order: report::Order,
) -> Result<Summary, CliError> {
    let mut summary = report::from_dir(out)?;
    summary
        .footnotes
        .extend(runner::manifest::lineage_notes(&manifest.served_models));
    if let Some((i, o)) = args.model_options.price_per_mtok {
        summary.apply_price(i, o);
    }
    summary.mark_error_rates(args.max_error_rate);
    // This command line's order, even when resuming a run recorded with another.
    let mut order_now = order;
    order_now.extend(&summary.order);
    summary.set_order(order_now);
    report::write_all(out, &summary)
        .map_err(|e| CliError::failed(format!("writing summary to {}: {e}", out.display())))?;
    Ok(summary)
}

/// What `run` prints when it ends: the summary table and, for a comparison of three or
/// more defenses (e.g. `--defense all`), the paper's main table with one row per defense.
/// `--columns` names the summary's columns only, so it leaves the main table out.
pub fn summary_text(report: &RunReport, options: &report::TextOptions) -> Result<String, CliError> {
    let mut text = tables_text(&report.summary, &report.out, options)?;
    if let Some(a) = &report.judge_agreement {
        text.push_str(a);
    }
    Ok(text)
}

/// The summary table of the run folder `out`, and with more than two defenses the paper's
/// main table after it, fitted to `options`: what `run` and `merge` print.
pub fn tables_text(
    summary: &report::Summary,
    out: &std::path::Path,
    options: &report::TextOptions,
) -> Result<String, CliError> {
    let mut text = report::table(summary, options)?;
    let mut defenses: Vec<&str> = summary.rows.iter().map(|r| r.defense.as_str()).collect();
    defenses.sort();
    defenses.dedup();
    if defenses.len() > 2 && options.columns.is_none() {
        // The records are written: a main table that cannot be built is a warning,
        // never a failure (`report RUN --tables main` can retry it).
        match main_table(out, options) {
            Ok(main) => text.push_str(&main),
            Err(e) => eprintln!("warning: the main table could not be built: {e}"),
        }
    }
    Ok(text)
}

/// The paper's main table of a finished run, with its title.
fn main_table(
    out: &std::path::Path,
    options: &report::TextOptions,
) -> Result<String, report::ReportError> {
    let doc = report::document(std::slice::from_ref(&out.to_path_buf()), 0, None)?;
    let Some(mut main) = doc.tables.into_iter().find(|g| g.id == "main") else {
        return Ok(String::new());
    };
    main.hoist_constant_keys();
    let rendered = report::text::render(&main, options)?;
    Ok(format!("\n{}\n{rendered}", main.title))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn the_committed_baseline_is_recognised_under_either_identity_of_its_config() {
        // results/baseline was recorded with the built-in SIEVE config and no --weights,
        // before or after the identity hashed a serialised form: either way it resumes.
        let home = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let paths = Paths::resolve(None, None, Some(home.clone()));
        let options = defense_options(&paths, None, None).unwrap();
        let m = match runner::manifest::read(&home.join("results/baseline")) {
            runner::manifest::Found::Manifest(m) => m,
            _ => panic!("results/baseline/run.json is unreadable"),
        };
        let (now, before) = (
            defense_config(&options),
            defense_config_as_debug_text(&options),
        );
        assert_ne!(now, before);
        assert!(
            [&now, &before].contains(&&m.settings.defense_config),
            "recorded {}, now {now}, as Debug text {before}",
            m.settings.defense_config
        );
        // The note a config carries about its origin is no part of it.
        let mut moved = (**options.sieve_config.as_ref().unwrap()).clone();
        moved.source = "elsewhere.toml".into();
        let elsewhere = crate::defense::BuildOptions {
            sieve_config: Some(std::sync::Arc::new(moved)),
            ..Default::default()
        };
        assert_eq!(defense_config(&elsewhere), now);
    }

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }

    #[test]
    fn default_is_the_empty_command_line_and_flags_parse_typed() {
        let d = RunArgs::default();
        assert_eq!(d.defense, "none");
        assert_eq!(d.results_dir, PathBuf::from("results"));
        assert_eq!(Cli::parse_from(["x"]).run, d);
        let r = Cli::parse_from([
            "x",
            "--shard",
            "1/3",
            "--price-per-mtok",
            "0.15,0.6",
            "--tool-format",
            "prompted",
            "--extra-body",
            r#"{"a":1}"#,
        ])
        .run;
        assert_eq!(r.shard, Some((1, 3)));
        assert_eq!(r.model_options.price_per_mtok, Some((0.15, 0.6)));
        assert_eq!(
            r.model_options.tool_format,
            Some(crate::model::openai::ToolFormat::Prompted)
        );
        assert!(r.model_options.extra_body.is_some());
        for bad in [
            &["x", "--shard", "3/3"][..],
            &["x", "--temperature", "NaN"],
            &["x", "--extra-body", "[1]"],
            &["x", "--seeds", "18446744073709551616"],
        ] {
            assert!(Cli::try_parse_from(bad).is_err(), "{bad:?}");
        }
    }

    #[tokio::test]
    async fn seed_range_past_u64_max_is_refused_before_anything_runs() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::resolve(None, None, Some(PathBuf::from(".")));
        let err = run(
            &paths,
            RunArgs {
                seed: u64::MAX,
                seeds: 2,
                out: Some(dir.path().join("r")),
                ..RunArgs::default()
            },
        )
        .await
        .err()
        .expect("refused");
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("--seed"), "{err}");
        assert!(!dir.path().join("r").exists());
    }

    /// A library caller skips the flags' parsers: the same ranges hold, refused (never
    /// clamped) before anything runs.
    #[tokio::test]
    async fn plugin_limits_out_of_range_are_refused_for_library_callers_too() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::resolve(None, None, Some(PathBuf::from(".")));
        for (args, flag) in [
            (
                RunArgs {
                    plugin_max_reply: 4096,
                    ..RunArgs::default()
                },
                "--plugin-max-reply",
            ),
            (
                RunArgs {
                    plugin_timeout: 1e30,
                    ..RunArgs::default()
                },
                "--plugin-timeout",
            ),
        ] {
            let err = run(
                &paths,
                RunArgs {
                    out: Some(dir.path().join("r")),
                    ..args
                },
            )
            .await
            .err()
            .expect("refused");
            assert_eq!(err.exit_code(), 2);
            assert!(err.to_string().contains(flag), "{err}");
            assert!(!dir.path().join("r").exists());
        }
    }
}
