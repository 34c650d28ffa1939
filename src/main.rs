//! Command-line entry point: parses arguments and dispatches to `sieve_bench::commands`.

use clap::{Args, Parser, Subcommand, ValueEnum};
use sieve_bench::commands::{self, CliError, Paths, ablate::AblateArgs, run::RunArgs};
use sieve_bench::report::compare::Thresholds;
use std::path::PathBuf;
use std::process::ExitCode;

/// Benchmark harness for defenses of tool-using LLM agents against indirect prompt injection.
///
/// Runs agent episodes over task suites under attacks and defenses, and reports attack
/// success (ASR, W-ASR), utility (clean and under attack), EDS, tokens and API calls.
/// The default model is `sim`, a scripted agent: every command runs offline and
/// deterministically, and every report says when results were simulated.
#[derive(Parser, Debug)]
#[command(name = "sieve-bench", version, about, long_about)]
struct Cli {
    /// Folder of suites (`<family>/<suite>/suite.yaml`). Default: `$SIEVE_BENCH_HOME/suites`, else `./suites`.
    #[arg(long, global = true, value_name = "DIR")]
    suites_dir: Option<PathBuf>,
    /// Folder of attack templates. Default: `$SIEVE_BENCH_HOME/attacks`, else `./attacks`.
    #[arg(long, global = true, value_name = "DIR")]
    attacks_dir: Option<PathBuf>,
    /// Root holding suites/, attacks/ and configs/.
    #[arg(
        long,
        global = true,
        env = "SIEVE_BENCH_HOME",
        value_name = "DIR",
        hide_env_values = true
    )]
    home: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run episodes and print the summary table. Rerunning the same command resumes.
    Run(Box<RunCli>),
    /// Run `none`, `audit` and every SIEVE variant on the same episodes and print the
    /// ablation table (also written as CSV, JSON and Markdown under --out).
    Ablate(Box<AblateCli>),
    /// Prove every suite sound: reference plans solve their tasks, checks can fail,
    /// every user task is injectable. Exits 2 on any problem.
    CheckSuites {
        /// Suites to check: `all`, a family, `family/suite` or a suite name; comma-separated.
        #[arg(long, default_value = "all")]
        suite: String,
    },
    /// List what can be selected.
    List {
        #[arg(value_enum)]
        what: ListWhat,
    },
    /// Re-render a run's table and summary files from its episodes.jsonl alone.
    Report {
        /// The run directory (what `run --out` names).
        run: PathBuf,
    },
    /// Join shard directories (from `run --shard k/n`) into one run directory and summarise it.
    Merge {
        /// The merged run directory (created if missing; episodes already there are kept).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Shard run directories.
        #[arg(required = true)]
        shards: Vec<PathBuf>,
    },
    /// Compare two runs per suite × attack × defense; exit 1 when a threshold is crossed.
    Compare {
        /// The baseline run directory.
        base: PathBuf,
        /// The new run directory.
        new: PathBuf,
        /// Fail when ASR rises by more than this many percentage points in any row.
        #[arg(long, value_name = "PTS")]
        max_asr_increase: Option<f64>,
        /// Fail when BU or UA falls by more than this many percentage points in any row.
        #[arg(long, value_name = "PTS")]
        max_utility_drop: Option<f64>,
    },
}

#[derive(ValueEnum, Clone, Debug)]
enum ListWhat {
    Suites,
    Attacks,
    Defenses,
    Models,
}

#[derive(Args, Debug)]
struct RunCli {
    /// Suites: `all`, a family (`dojo-style`), `family/suite`, or a suite name; comma-separated.
    #[arg(long, default_value = "all")]
    suite: String,
    /// Attacks by name or alias, comma-separated; `all`; or `none` for clean episodes only.
    #[arg(long, default_value = "important")]
    attack: String,
    /// Defenses, comma-separated (see `list defenses`).
    #[arg(long, default_value = "none")]
    defense: String,
    /// The agent's model: `sim:obedient` (default), `sim:oracle`, `sim:p=<x>` (see `list models`).
    #[arg(long, default_value = "sim:obedient")]
    model: String,
    /// Model for defenses' planners (default: --model).
    #[arg(long)]
    planner_model: Option<String>,
    /// Model for defenses' judges (default: --model).
    #[arg(long)]
    judge_model: Option<String>,
    /// Number of seeds per episode.
    #[arg(long, default_value_t = 1)]
    seeds: u64,
    /// First seed; seeds are seed, seed+1, ….
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Episodes in flight at once.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
    /// Cap on agent model turns per episode; an episode that reaches it ends unsolved.
    #[arg(long, default_value_t = 30)]
    max_steps: usize,
    /// Only these user task ids (comma-separated).
    #[arg(long, value_delimiter = ',')]
    user_tasks: Option<Vec<String>>,
    /// Only these injection task ids (comma-separated).
    #[arg(long, value_delimiter = ',')]
    injection_tasks: Option<Vec<String>>,
    /// Skip the no-attack episodes (clean utility will be missing).
    #[arg(long)]
    no_clean: bool,
    /// Write the run into this directory (default: results/<run-id>/).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Run only shard k of n of the matrix (`k/n`, 0-based), for array jobs.
    #[arg(long, value_name = "K/N")]
    shard: Option<String>,
    /// Do not print the table.
    #[arg(long)]
    quiet: bool,
    /// SIEVE config: variants, thresholds, trust and risk tables (default: configs/sieve.toml).
    #[arg(long, value_name = "FILE")]
    sieve_config: Option<PathBuf>,
    /// Ad-hoc S_align weights for `sieve` and `audit`, e.g. `w_sem=0.2,w_causal=0.6`
    /// (unnamed weights are 0; renormalised to sum to 1).
    #[arg(long, value_name = "W=X,..")]
    weights: Option<String>,
    /// Seconds an `exec:` defense plugin may take to answer one hook; past it, that
    /// episode errors and the run goes on.
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    plugin_timeout: f64,
    #[command(flatten)]
    models: sieve_bench::model::config::ModelFlags,
}

fn run_command(paths: &Paths, r: RunCli) -> Result<(), CliError> {
    let shard = r
        .shard
        .as_deref()
        .map(commands::run::parse_shard)
        .transpose()
        .map_err(CliError::bad_input)?;
    let args = RunArgs {
        suite: r.suite,
        attack: r.attack,
        defense: r.defense,
        model: r.model,
        planner_model: r.planner_model,
        judge_model: r.judge_model,
        seeds: r.seeds,
        seed: r.seed,
        concurrency: r.concurrency,
        max_steps: r.max_steps,
        user_tasks: r.user_tasks,
        injection_tasks: r.injection_tasks,
        out: r.out,
        results_dir: PathBuf::from("results"),
        shard,
        clean: !r.no_clean,
        sieve_config: r.sieve_config,
        weights: r.weights,
        plugin_timeout: r.plugin_timeout,
        model_options: r.models.into_options().map_err(CliError::bad_input)?,
    };
    let report = runtime()?.block_on(commands::run::run(paths, args))?;
    if !r.quiet {
        print!("{}", sieve_bench::report::table(&report.summary));
    }
    finish(&report)
}

fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError {
            code: 1,
            message: format!("cannot start the async runtime: {e}"),
        })
}

/// Reports how a run ended; fatal and interrupted runs exit non-zero.
fn finish(report: &commands::run::RunReport) -> Result<(), CliError> {
    let o = &report.outcome;
    eprintln!(
        "{} episode(s) run, {} already recorded, {} errored; results in {}",
        o.ran,
        o.skipped,
        o.errored,
        report.out.display()
    );
    if o.dropped_partial_line {
        eprintln!(
            "note: a half-written last line from an interrupted run was dropped; that episode ran again"
        );
    }
    if let Some(f) = &o.fatal {
        return Err(CliError {
            code: 1,
            message: format!("run stopped: {f}"),
        });
    }
    if o.interrupted {
        return Err(CliError {
            code: 130,
            message: "interrupted; rerun the same command to resume".into(),
        });
    }
    Ok(())
}

#[derive(Args, Debug)]
struct AblateCli {
    /// Suites: `all`, a family, `family/suite`, or a suite name; comma-separated.
    #[arg(long, default_value = "all")]
    suite: String,
    /// Attacks by name or alias, comma-separated.
    #[arg(long, default_value = "important")]
    attack: String,
    /// Only these SIEVE variants (comma-separated; `full` is always run as the reference).
    #[arg(long, value_delimiter = ',')]
    variants: Option<Vec<String>>,
    /// The agent's model (see `list models`).
    #[arg(long, default_value = "sim:obedient")]
    model: String,
    /// Model for the planner (default: --model).
    #[arg(long)]
    planner_model: Option<String>,
    /// Model for the judge (default: --model).
    #[arg(long)]
    judge_model: Option<String>,
    /// SIEVE config (default: configs/sieve.toml).
    #[arg(long, value_name = "FILE")]
    sieve_config: Option<PathBuf>,
    /// Number of seeds per episode.
    #[arg(long, default_value_t = 1)]
    seeds: u64,
    /// First seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Episodes in flight at once.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
    /// Cap on agent model turns per episode.
    #[arg(long, default_value_t = 30)]
    max_steps: usize,
    /// Only these user task ids (comma-separated).
    #[arg(long, value_delimiter = ',')]
    user_tasks: Option<Vec<String>>,
    /// Only these injection task ids (comma-separated).
    #[arg(long, value_delimiter = ',')]
    injection_tasks: Option<Vec<String>>,
    /// Write the run and ablation.{csv,json,md} here (default: results/ablate__...).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Do not print the table.
    #[arg(long)]
    quiet: bool,
    #[command(flatten)]
    models: sieve_bench::model::config::ModelFlags,
}

fn ablate_command(paths: &Paths, a: AblateCli) -> Result<(), CliError> {
    let args = AblateArgs {
        run: RunArgs {
            suite: a.suite,
            attack: a.attack,
            defense: String::new(),
            model: a.model,
            planner_model: a.planner_model,
            judge_model: a.judge_model,
            seeds: a.seeds,
            seed: a.seed,
            concurrency: a.concurrency,
            max_steps: a.max_steps,
            user_tasks: a.user_tasks,
            injection_tasks: a.injection_tasks,
            out: a.out,
            results_dir: PathBuf::from("results"),
            shard: None,
            clean: true,
            sieve_config: a.sieve_config,
            weights: None,
            plugin_timeout: 30.0,
            model_options: a.models.into_options().map_err(CliError::bad_input)?,
        },
        variants: a.variants,
    };
    let report = runtime()?.block_on(commands::ablate::ablate(paths, args))?;
    if !a.quiet {
        print!("{}", commands::ablate::table(&report.ablation));
    }
    finish(&report.run)
}

fn dispatch(cli: Cli) -> Result<(), CliError> {
    let paths = Paths::resolve(cli.suites_dir, cli.attacks_dir, cli.home);
    match cli.command {
        Command::Run(r) => run_command(&paths, *r)?,
        Command::Ablate(a) => ablate_command(&paths, *a)?,
        Command::CheckSuites { suite } => {
            print!("{}", commands::check_suites::check_suites(&paths, &suite)?);
        }
        Command::List { what } => match what {
            ListWhat::Suites => print!("{}", commands::list::list_suites(&paths)?),
            ListWhat::Attacks => print!("{}", commands::list::list_attacks(&paths)?),
            ListWhat::Defenses => print!("{}", commands::list::list_defenses()),
            ListWhat::Models => print!("{}", commands::list::list_models(&paths)?),
        },
        Command::Report { run } => print!("{}", commands::report_cmd::report(&run)?),
        Command::Merge { out, shards } => {
            let added = commands::merge::merge(&out, &shards)?;
            eprintln!("{added} episode(s) merged into {}", out.display());
            print!("{}", commands::report_cmd::report(&out)?);
        }
        Command::Compare {
            base,
            new,
            max_asr_increase,
            max_utility_drop,
        } => {
            let (text, failed) = commands::report_cmd::compare(
                &base,
                &new,
                Thresholds {
                    max_asr_increase,
                    max_utility_drop,
                },
            )?;
            print!("{text}");
            if failed {
                return Err(CliError {
                    code: 1,
                    message: "compare: a threshold was crossed".into(),
                });
            }
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match dispatch(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", e.message);
            ExitCode::from(e.code.clamp(1, 255) as u8)
        }
    }
}
