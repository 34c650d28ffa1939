//! `run`: plan the matrix, run what is not yet recorded, summarise everything recorded.

use super::{CliError, Paths, load_suites};
use crate::model::config::{ModelFactory, ModelOptions};
use crate::model::{Models, tokens::TokenCounter};
use crate::report::{self, Summary};
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
    /// Seconds an `exec:` defense plugin may take to answer one hook; past it, that
    /// episode errors and the run goes on.
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    pub plugin_timeout: f64,
    /// Endpoint, generation, cache/replay, embedder and price settings.
    #[command(flatten)]
    pub model_options: ModelOptions,
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

/// What `run` produced.
pub struct RunReport {
    pub out: PathBuf,
    pub outcome: RunOutcome,
    pub summary: Summary,
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
    let tokens = Arc::new(TokenCounter::new().map_err(CliError::bad_input)?);
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
        Some(p) => SieveConfig::load(p).map_err(CliError::bad_input)?,
        None if default.is_file() => SieveConfig::load(&default).map_err(CliError::bad_input)?,
        None => SieveConfig::builtin(),
    };
    let weights = weights
        .map(Weights::parse_adhoc)
        .transpose()
        .map_err(CliError::bad_input)?;
    Ok(crate::defense::BuildOptions {
        sieve_config: Some(Arc::new(config)),
        weights,
        ..Default::default()
    })
}

/// Runs (or resumes) and summarises.
pub async fn run(paths: &Paths, args: RunArgs) -> Result<RunReport, CliError> {
    if args.concurrency == 0 {
        return Err(CliError::bad_input("--concurrency must be at least 1"));
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
    if args.seed.checked_add(args.seeds).is_none() {
        return Err(CliError::bad_input(format!(
            "--seed {} with --seeds {} runs past the largest seed ({}); lower one of them",
            args.seed,
            args.seeds,
            u64::MAX
        )));
    }
    let suites = load_suites(paths, &args.suite)?;
    let problems: Vec<String> = suites
        .iter()
        .flat_map(|s| {
            crate::suite::validate::validate(s)
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
    let attacks = crate::attack::select(&all_attacks, &args.attack).map_err(CliError::bad_input)?;
    let mut options =
        defense_options(paths, args.sieve_config.as_deref(), args.weights.as_deref())?;
    if !(args.plugin_timeout.is_finite() && args.plugin_timeout > 0.0) {
        return Err(CliError::bad_input(
            "--plugin-timeout must be a positive number of seconds",
        ));
    }
    options.plugin_timeout = Some(std::time::Duration::from_secs_f64(args.plugin_timeout));
    let mut defenses = Vec::new();
    for d in crate::defense::expand(&args.defense) {
        defenses.push(crate::defense::build_with(&d, &options).map_err(CliError::bad_input)?);
    }
    if defenses.is_empty() {
        return Err(CliError::bad_input("--defense names no defense"));
    }
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
    let named = crate::model::config::load_named(&paths.configs).map_err(CliError::bad_input)?;
    let tokens = Arc::new(TokenCounter::new().map_err(CliError::bad_input)?);
    let factory = ModelFactory::new(args.model_options.clone(), named, tokens)
        .map_err(CliError::bad_input)?;
    let models = build_models_with(
        &factory,
        &args.model,
        args.planner_model.as_deref(),
        args.judge_model.as_deref(),
    )?;
    let run_id = default_run_id(&args);
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| args.results_dir.join(&run_id));
    std::fs::create_dir_all(&out)
        .map_err(|e| CliError::bad_input(format!("cannot create {}: {e}", out.display())))?;
    let info = out.join(runner::record::RUN_INFO);
    if !info.exists() {
        let meta = serde_json::json!({
            "run_id": run_id,
            "command": std::env::args().collect::<Vec<_>>(),
            "suite": args.suite, "attack": args.attack, "defense": args.defense, "model": args.model,
            "planner_model": args.planner_model, "judge_model": args.judge_model,
            "seed": args.seed, "seeds": args.seeds, "max_steps": args.max_steps,
            "sieve_config": options.sieve_config.as_ref().map(|c| c.source.clone()),
            "weights": args.weights,
            "simulated": models.any_simulated(),
            "agent_model": models.agent.name(), "embedder": models.embedder.name(),
            "replay": args.model_options.replay,
            "price_per_mtok": args.model_options.price_per_mtok.map(|(i, o)| [i, o]),
            "version": env!("CARGO_PKG_VERSION"),
        });
        std::fs::write(
            &info,
            serde_json::to_string_pretty(&meta).expect("json") + "\n",
        )
        .map_err(|e| CliError::bad_input(format!("cannot write {}: {e}", info.display())))?;
    }
    let plan = RunPlan {
        run_id,
        out: out.clone(),
        suites: suites.into_iter().map(Arc::new).collect(),
        attacks,
        clean: !args.no_clean,
        defenses,
        models,
        seeds: (args.seed..args.seed + args.seeds).collect(),
        user_tasks: args.user_tasks.clone(),
        injection_tasks: args.injection_tasks.clone(),
        max_steps: args.max_steps,
        concurrency: args.concurrency,
        shard: args.shard,
    };
    let outcome = runner::execute(plan).await.map_err(|e| match e {
        runner::RunError::Stale(m) => CliError::bad_input(m),
        runner::RunError::NothingToRun(m) => CliError::NothingToRun(m),
        runner::RunError::Io(e) => {
            CliError::failed(format!("writing results to {}: {e}", out.display()))
        }
    })?;
    let mut summary = report::from_dir(&out).map_err(CliError::failed)?;
    if let Some((i, o)) = args.model_options.price_per_mtok {
        summary.apply_price(i, o);
    }
    report::write_all(&out, &summary)
        .map_err(|e| CliError::failed(format!("writing summary to {}: {e}", out.display())))?;
    Ok(RunReport {
        out,
        outcome,
        summary,
    })
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

    #[tokio::test]
    async fn seed_range_past_u64_max_is_refused_before_anything_runs() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::resolve(None, None, Some(PathBuf::from(".")));
        let err = run(
            &paths,
            RunArgs {
                seed: u64::MAX,
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
}
