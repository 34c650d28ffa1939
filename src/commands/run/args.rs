//! `run`'s flags: the one definition of each run option (its help, default and
//! parser), the run id a command line names, and the flags' own errors.

use crate::model::answer_judge::JudgeFormat;
use crate::model::config::ModelOptions;
use sieve_record::{JudgeOn, UtilityFrom};
use std::path::PathBuf;

/// A flag's value that its parser refuses (clap prints it after the flag's name).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FlagError {
    #[error(
        "--concurrency must be at least 1 and at most {MAX_CONCURRENCY} (each episode in flight may hold its own provider or plugin process), got `{0}`"
    )]
    Concurrency(String),
    #[error("`{0}` is not an amount of dollars (a finite number >= 0)")]
    Dollars(String),
    #[error("`{0}` is not a number of seconds (finite, >= 0)")]
    Seconds(String),
    #[error("`{0}` is not a number of seconds in (0, {1}]")]
    PluginTimeout(String, f64),
    #[error("`{0}` is not a percentage in [0, 100]")]
    Percent(String),
    #[error("--shard must look like k/n, got `{0}`")]
    ShardForm(String),
    #[error("bad shard index `{0}`")]
    ShardIndex(String),
    #[error("bad shard count `{0}`")]
    ShardCount(String),
    #[error("--shard needs 0 <= k < n, got {0}/{1}")]
    ShardRange(usize, usize),
}

/// The models of an episode's roles, one definition for every command that runs
/// episodes (`run`, `ablate`, `attack search`, `attack transfer`).
#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct RoleModels {
    /// The agent's model: `sim:obedient` (default), `sim:oracle`, `sim:p=<x>`,
    /// `openai:<model>` or a named endpoint (see `list models`).
    #[arg(long, default_value = "sim:obedient")]
    pub model: String,
    /// Model for defenses' planners (default: --model).
    #[arg(long)]
    pub planner_model: Option<String>,
    /// Model for defenses' judges (default: --model).
    #[arg(long)]
    pub judge_model: Option<String>,
}

impl RoleModels {
    /// The agent's model alone, the other roles following it.
    pub fn agent(model: &str) -> Self {
        RoleModels {
            model: model.to_string(),
            planner_model: None,
            judge_model: None,
        }
    }

    /// The planners' model: `--planner-model`, else the agent's.
    pub fn planner(&self) -> &str {
        self.planner_model.as_deref().unwrap_or(&self.model)
    }

    /// The judges' model: `--judge-model`, else the agent's.
    pub fn judge(&self) -> &str {
        self.judge_model.as_deref().unwrap_or(&self.model)
    }
}

/// How much runs at once, one definition for every command that runs episodes or
/// requests in parallel (`run`, `ablate`, `calibrate`).
#[derive(clap::Args, Clone, Copy, Debug, PartialEq)]
pub struct Concurrency {
    /// Episodes in flight at once (`calibrate`: judge requests); at least 1.
    #[arg(long = "concurrency", default_value_t = 8, value_parser = parse_concurrency)]
    pub n: usize,
}

/// `--concurrency`: a count of at least 1 and at most [`MAX_CONCURRENCY`].
pub fn parse_concurrency(s: &str) -> Result<usize, FlagError> {
    s.trim()
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=MAX_CONCURRENCY).contains(n))
        .ok_or_else(|| FlagError::Concurrency(s.to_string()))
}

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
    #[command(flatten)]
    pub models: RoleModels,
    /// Number of seeds per episode.
    #[arg(long, default_value_t = 1)]
    pub seeds: u64,
    /// First seed; seeds are seed, seed+1, ….
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[command(flatten)]
    pub concurrency: Concurrency,
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
    /// Which calls of an episode reach a bridged package's trace (the call list its
    /// trace-based checks read): `all`, every call the agent made, failed ones too, as
    /// AgentDojo keeps it (the default), or `executed`, only calls that ran without
    /// error. Part of the run's identity; only providers that offer it accept `executed`.
    #[arg(long, value_enum, default_value = "all")]
    pub trace: crate::external::protocol::TraceMode,
    /// Leave out of every table the episodes that fall under a known defect of their
    /// benchmark (a broken check, an unwinnable pair: the suite's known-defects file);
    /// each table says how many it left out. Without it, rows holding some are marked.
    #[arg(long)]
    pub exclude_known_defects: bool,
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
    /// Grade answers with this model too (`openai:<model>` or a named endpoint; never
    /// `sim`): by default only the answers whose verdict the checks' rules left undecided,
    /// which its verdict then settles (see --answer-judge-on). Records keep both verdicts
    /// (docs/answer-judge.md).
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
    /// Which answers the judge grades: `undecided` (only where the checks' rules could not
    /// decide; its verdict counts there and the checks' everywhere else) or `all` (every
    /// answer the checks read, to measure agreement; --utility-from says what counts).
    #[arg(
        long,
        value_enum,
        default_value = "undecided",
        help_heading = "Answer judge"
    )]
    pub answer_judge_on: JudgeOn,
    /// With --answer-judge-on all, which verdict the utility columns count: `checks`
    /// (deterministic), `judge` (the answer judge for the answer, the checks for the rest)
    /// or `both` (both must hold); rows not counted by the checks alone say so beside the
    /// model.
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
    /// The provider batch API (`--batch submit|collect|auto`).
    #[command(flatten)]
    pub batch: super::batch::BatchArgs,
}

fn parse_budget_usd(s: &str) -> Result<f64, FlagError> {
    s.trim()
        .trim_start_matches('$')
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x >= 0.0)
        .ok_or_else(|| FlagError::Dollars(s.to_string()))
}

fn parse_call_seconds(s: &str) -> Result<f64, FlagError> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x >= 0.0 && *x < 1e6)
        .ok_or_else(|| FlagError::Seconds(s.to_string()))
}

use sieve_record::{ErrorPolicy, ErrorsAs};

impl RunArgs {
    /// The error convention of this run's rows: `--errors-as` for all, else each family's.
    pub fn error_policy(&self) -> ErrorPolicy {
        self.errors_as
            .map_or(ErrorPolicy::ByFamily, ErrorPolicy::All)
    }
}

pub(super) fn parse_plugin_timeout(s: &str) -> Result<f64, FlagError> {
    let max = crate::defense::plugin::MAX_TIMEOUT_SECS;
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|t| t.is_finite() && *t > 0.0 && *t <= max)
        .ok_or_else(|| FlagError::PluginTimeout(s.to_string(), max))
}

pub fn parse_percent(s: &str) -> Result<f64, FlagError> {
    s.trim()
        .trim_end_matches('%')
        .parse::<f64>()
        .ok()
        .filter(|p| p.is_finite() && (0.0..=100.0).contains(p))
        .ok_or_else(|| FlagError::Percent(s.to_string()))
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
        slug(&a.models.model)
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
    shorten_id(id)
}

/// The longest default run id kept whole: a folder name well under the 255 bytes most
/// file systems allow.
pub const MAX_RUN_ID: usize = 200;

/// A run id over [`MAX_RUN_ID`] bytes: its first part, then a hash of the whole, so two
/// long command lines still name two folders and the same one names the same.
fn shorten_id(id: String) -> String {
    if id.len() <= MAX_RUN_ID {
        return id;
    }
    let hash = crate::attack::mutate::hash_text(&id);
    let mut keep = MAX_RUN_ID - hash.len() - 2;
    while !id.is_char_boundary(keep) {
        keep -= 1;
    }
    format!("{}__{hash}", &id[..keep])
}

/// Parses `k/n` with 0 ≤ k < n.
pub fn parse_shard(s: &str) -> Result<(usize, usize), FlagError> {
    let (k, n) = s
        .split_once('/')
        .ok_or_else(|| FlagError::ShardForm(s.to_string()))?;
    let (k, n): (usize, usize) = (
        k.trim()
            .parse()
            .map_err(|_| FlagError::ShardIndex(k.to_string()))?,
        n.trim()
            .parse()
            .map_err(|_| FlagError::ShardCount(n.to_string()))?,
    );
    if n == 0 || k >= n {
        return Err(FlagError::ShardRange(k, n));
    }
    Ok((k, n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

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

    #[test]
    fn flag_errors_keep_their_words() {
        assert_eq!(
            parse_shard("2/2").unwrap_err().to_string(),
            "--shard needs 0 <= k < n, got 2/2"
        );
        assert_eq!(
            parse_shard("x").unwrap_err(),
            FlagError::ShardForm("x".into())
        );
        assert_eq!(
            parse_percent("101").unwrap_err().to_string(),
            "`101` is not a percentage in [0, 100]"
        );
        assert!(parse_budget_usd("$-1").is_err());
        let long = RunArgs {
            defense: (0..40)
                .map(|i| format!("exec:./plugin{i}.py"))
                .collect::<Vec<_>>()
                .join(","),
            ..RunArgs::default()
        };
        let id = default_run_id(&long);
        assert_eq!(id.len(), MAX_RUN_ID, "{id}");
        assert_eq!(
            id,
            default_run_id(&long),
            "the same command, the same folder"
        );
        let other = RunArgs {
            defense: format!("{},none", long.defense),
            ..RunArgs::default()
        };
        assert_ne!(id, default_run_id(&other));
        assert_eq!(parse_budget_usd("$2.5"), Ok(2.5));
    }
}
