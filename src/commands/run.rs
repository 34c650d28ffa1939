//! `run`: plan the matrix, run what is not yet recorded, summarise everything recorded.

use super::{CliError, Paths, load_suites};
use crate::model::config::{ModelFactory, ModelOptions};
use crate::model::{Models, tokens::TokenCounter};
use crate::report::{self, Summary};
use crate::runner::{self, RunOutcome, RunPlan};
use std::path::PathBuf;
use std::sync::Arc;

/// `run`'s options, as parsed by the CLI.
#[derive(Clone, Debug)]
pub struct RunArgs {
    pub suite: String,
    pub attack: String,
    pub defense: String,
    pub model: String,
    pub planner_model: Option<String>,
    pub judge_model: Option<String>,
    pub seeds: u64,
    pub seed: u64,
    pub concurrency: usize,
    pub max_steps: usize,
    pub user_tasks: Option<Vec<String>>,
    pub injection_tasks: Option<Vec<String>>,
    pub out: Option<PathBuf>,
    pub results_dir: PathBuf,
    pub shard: Option<(usize, usize)>,
    pub clean: bool,
    /// SIEVE config file (`--sieve-config`); default `configs/sieve.toml`, else built in.
    pub sieve_config: Option<PathBuf>,
    /// Ad-hoc SIEVE weights (`--weights w_sem=..,w_causal=..`).
    pub weights: Option<String>,
    /// Seconds an `exec:` plugin may take per hook (`--plugin-timeout`).
    pub plugin_timeout: f64,
    /// Endpoint, generation, cache/replay, embedder and price settings.
    pub model_options: ModelOptions,
}

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
    if args.seeds == 0 {
        return Err(CliError::bad_input("--seeds must be at least 1"));
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
        clean: args.clean,
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
        runner::RunError::Io(e) => CliError {
            code: 1,
            message: format!("writing results to {}: {e}", out.display()),
        },
    })?;
    let mut summary = report::from_dir(&out).map_err(|e| CliError {
        code: 1,
        message: e,
    })?;
    if let Some((i, o)) = args.model_options.price_per_mtok {
        summary.apply_price(i, o);
    }
    report::write_all(&out, &summary).map_err(|e| CliError {
        code: 1,
        message: format!("writing summary to {}: {e}", out.display()),
    })?;
    Ok(RunReport {
        out,
        outcome,
        summary,
    })
}
