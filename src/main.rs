//! Command-line entry point: parses arguments and dispatches to `sieve_bench::commands`.

use clap::{Parser, Subcommand, ValueEnum};
use sieve_bench::commands::{self, CliError, Paths, ablate::AblateArgs, run::args::RunArgs};
use sieve_bench::escape;
use sieve_bench::report::compare::Thresholds;
use sieve_bench::report::text::TableFlags;
use std::path::PathBuf;
use std::process::ExitCode;

// A scripted run allocates and frees small JSON values and strings by the million (the
// environment of every episode is cloned and patched); mimalloc's thread-local free
// lists make that a fraction of glibc's cost on the run's worker threads.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
    #[command(
        after_help = run_after_help()
    )]
    Run {
        #[command(flatten)]
        args: Box<RunArgs>,
        #[command(flatten)]
        table: TableFlags,
    },
    /// Run `none`, `audit` and every SIEVE variant on the same episodes and print the
    /// ablation table (also written as CSV, JSON and Markdown under --out).
    #[command(
        after_help = "Examples:\n  sieve-bench ablate --suite all --attack important\n  sieve-bench ablate --suite banking --variants no-causal,layer1-only"
    )]
    #[command(mut_arg("defense", |a| a.hide(true)), mut_arg("weights", |a| a.hide(true)))]
    Ablate {
        #[command(flatten)]
        args: Box<AblateArgs>,
        #[command(flatten)]
        table: TableFlags,
    },
    /// Prove every suite sound: reference plans solve their tasks, checks can fail,
    /// every user task is injectable. Exits 2 on any problem.
    #[command(
        after_help = "Examples:\n  sieve-bench check-suites\n  sieve-bench check-suites --suite dojo-style/banking"
    )]
    CheckSuites {
        /// Suites to check: `all`, a family, `family/suite` or a suite name; comma-separated.
        #[arg(long, default_value = "all")]
        suite: String,
    },
    /// List what can be selected.
    #[command(
        after_help = "Examples:\n  sieve-bench list suites\n  sieve-bench list tasks --suite banking\n  sieve-bench list samples --suite lure-style\n  sieve-bench list defenses"
    )]
    List {
        /// What to list.
        #[arg(value_enum)]
        what: ListWhat,
        /// For `tasks` and `samples`: which suites (`all`, a family, `family/suite` or a name).
        #[arg(long, default_value = "all")]
        suite: String,
    },
    /// Render one or many runs as tables (terminal, Markdown, CSV, JSON, LaTeX) or a
    /// self-contained HTML report, from their episodes.jsonl alone.
    #[command(
        after_help = "Examples:\n  sieve-bench report results/my-run\n  sieve-bench report results/run-a results/run-b --format md --out report.md\n  sieve-bench report results/run-a --format html --out report.html\n  sieve-bench report results/run-a --format latex --tables main,per-suite\n  sieve-bench report results/run-a --format csv --tables main\n\nCSV and JSON carry rates as fractions in [0, 1] with <id>_lo/<id>_hi 95% interval\nfields; tables show percentages. Every column is documented in docs/columns.md."
    )]
    Report(Box<commands::report_cmd::ReportArgs>),
    /// Join shard directories (from `run --shard k/n`) into one run directory and summarise it.
    #[command(
        after_help = "Example (what scripts/shard_local.sh does, the shards run at once):\n  sieve-bench run --suite all --shard 0/2 --out results/s0\n  sieve-bench run --suite all --shard 1/2 --out results/s1\n  sieve-bench merge --out results/all results/s0 results/s1"
    )]
    Merge {
        /// The merged run directory (created if missing; episodes already there are kept).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Shard run directories.
        #[arg(required = true)]
        shards: Vec<PathBuf>,
        /// Merge even when shards of the split are missing (the rows then cover part of
        /// the matrix).
        #[arg(long)]
        partial: bool,
        /// Mark rows whose error rate exceeds this percentage (`!`), as `run` does.
        #[arg(long, value_name = "PCT", default_value_t = 5.0, value_parser = commands::run::args::parse_percent)]
        max_error_rate: f64,
        #[command(flatten)]
        table: TableFlags,
    },
    /// Measure how far a model-graded answer judge and the deterministic checks can be
    /// trusted: both judge the generated corpus, the hand-written variants.yaml corpus and
    /// any labelled file, and the table shows per set how often each is right.
    #[command(
        after_help = "Examples:\n  sieve-bench calibrate --answer-judge openai:gpt-4o-mini\n  sieve-bench calibrate --answer-judge local-qwen --suite dojo-style --labelled dojo-style/banking=my-labels.yaml\n  sieve-bench calibrate --answer-judge openai:gpt-4o-mini --cache cache/ --replay\n\nSee docs/answer-judge.md for the rubric and its limits."
    )]
    Calibrate(Box<commands::calibrate::CalibrateArgs>),
    /// Compare two runs per suite × attack × defense. With a threshold it gates: exit 1
    /// when a row crosses one or is missing from the new run; without, it only compares.
    #[command(
        after_help = "Rows pair on suite, attack, defense and model (a model change is paired with a warning\nwhen the cell has one row). --pair BASE=NEW pairs defense BASE of the base run with\ndefense NEW of the new run instead, per suite and attack; give the same folder twice to\ncompare two defenses of one run. With the records of both runs the table shows exact\nMcNemar p-values over the episodes both rows ran; --significance gates on them.\n\nExamples:\n  sieve-bench compare results/baseline results/new --max-asr-increase 1.0 --max-utility-drop 1.0\n  sieve-bench compare results/a results/b --max-asr-increase 0 --significance 0.05\n  sieve-bench compare results/a results/b --pair sieve=audit\n  sieve-bench compare results/a results/a --pair none=sieve"
    )]
    Compare {
        /// The baseline run directory.
        base: PathBuf,
        /// The new run directory.
        new: PathBuf,
        /// Fail when ASR rises by more than this many percentage points in any row.
        #[arg(long, value_name = "PTS", value_parser = commands::report_cmd::parse_points)]
        max_asr_increase: Option<f64>,
        /// Fail when BU or UA falls by more than this many percentage points in any row.
        #[arg(long, value_name = "PTS", value_parser = commands::report_cmd::parse_points)]
        max_utility_drop: Option<f64>,
        /// Fail only on regressions significant at this level by an exact McNemar test
        /// over the episodes both rows ran (needs episodes.jsonl of both runs). Alone, it
        /// gates any significant rise of ASR or fall of UA/BU.
        #[arg(long, value_name = "ALPHA", value_parser = commands::report_cmd::parse_alpha)]
        significance: Option<f64>,
        /// Compare defense BASE of the base run with defense NEW of the new run (e.g.
        /// `sieve=audit`), per suite and attack, instead of pairing rows by defense.
        /// Repeatable.
        #[arg(long, value_name = "BASE=NEW")]
        pair: Vec<String>,
        /// Fail rows marked INSUFFICIENT: too few episodes to resolve a threshold at 80%
        /// power (see "How many episodes a gate needs" in docs/real-model-runs.md).
        #[arg(long)]
        require_power: bool,
        #[command(flatten)]
        table: TableFlags,
    },
    /// Adaptive attacks: search for payloads that get past a defense, and score frozen
    /// payloads against other defenses (see docs/adaptive-attacks.md).
    #[command(subcommand)]
    Attack(AttackCommand),
}

#[derive(Subcommand, Debug)]
enum AttackCommand {
    /// Search for templates against one defense within a budget; prints ASR@k beside
    /// the static ASR and writes the curve, the results and the payload library.
    #[command(
        after_help = "Examples:\n  sieve-bench attack search --suite banking --defense keyword_filter\n  sieve-bench attack search --suite banking --defense keyword_filter --user-tasks user_task_0,user_task_1,user_task_2,user_task_3 --budget-episodes 400 --out results/search-small\n  sieve-bench attack search --unit vector:injection_bill_note --feedback diagnosis --seed 3\n  sieve-bench attack search --attacker openai:gpt-4o-mini --budget-attacker-tokens 200000\n  sieve-bench run --suite banking --attack library:results/search-banking-keyword_filter-0 --defense none,sieve"
    )]
    Search(Box<commands::attack::SearchArgs>),
    /// Score frozen payload libraries against several defenses (the transfer matrix).
    #[command(
        after_help = "Examples:\n  sieve-bench attack search --suite banking --defense keyword_filter --out results/search-banking-keyword_filter-0\n  sieve-bench attack transfer --library results/search-banking-keyword_filter-0 --defense none,keyword_filter,sieve\n  sieve-bench attack transfer --library results/search-banking-keyword_filter-0 --defense all --csv transfer.csv\n\nEach library's best payloads are scored on every cell of the suite (development and\nheld-out) against each defense; rows are payloads, columns defenses, cells ASR."
    )]
    Transfer(Box<commands::attack::TransferArgs>),
    /// Join the shards of a search over several targets (`--unit pairs|vectors --shard
    /// k/n`) into one folder, equal to the unsharded search's.
    #[command(
        after_help = "Example:\n  sieve-bench attack search --unit pairs --shard 0/2 --out s0\n  sieve-bench attack search --unit pairs --shard 1/2 --out s1\n  sieve-bench attack merge --out merged s0 s1"
    )]
    Merge(commands::attack::MergeArgs),
}

#[derive(ValueEnum, Clone, Debug)]
enum ListWhat {
    Suites,
    Attacks,
    Defenses,
    Models,
    Tasks,
    Samples,
}

/// `run --help`'s closing part: the models and every defense `--defense` accepts (from
/// the registry, so a new defense is listed without an edit here).
fn run_after_help() -> String {
    format!(
        "Examples:\n  sieve-bench run --suite banking --attack important --defense none,sieve\n  sieve-bench run --suite all --attack all --defense none,sieve --seeds 3\n  sieve-bench run --suite slack --defense sieve --model openai:gpt-4o-mini --planner-model openai:gpt-4o-mini --judge-model openai:gpt-4o-mini\n  sieve-bench run --suite all --shard 0/4 --out results/shard-0\n  sieve-bench run --suite banking --attack important --columns asr,ua,w_asr,eds\n  sieve-bench run --suite banking --attack important --defense all\n\n\
         Models (--model, --planner-model, --judge-model): sim:obedient, sim:oracle, sim:p=<x>,\n\
         sim:...,varied, sim:...,judge_auc=<x>, openai:<model> (any OpenAI-compatible endpoint), or a named\n\
         endpoint from configs/models.toml (see `list models`).\n\
         Defenses (--defense, comma-separated): {}.\n\
         `all` is every built-in defense; `exec:<command>` runs your own plugin (docs/defense-plugin.md);\n\
         `list defenses` gives each one's mechanism and source.",
        sieve_bench::defense::names().join(", ")
    )
}

/// `--dry-run`: print the estimate; nothing is sent and nothing is written.
fn dry_run(paths: &Paths, args: &RunArgs) -> Result<(), CliError> {
    let est = runtime()?.block_on(commands::estimate::dry_run(paths, args))?;
    show(&commands::estimate::render(&est));
    Ok(())
}

fn run_command(paths: &Paths, args: RunArgs, table: &TableFlags) -> Result<(), CliError> {
    if args.dry_run {
        return dry_run(paths, &args);
    }
    let quiet = args.quiet;
    let report = if args.batch.batch.is_some() {
        runtime()?.block_on(commands::run::batch::batch(paths, args))?
    } else {
        runtime()?.block_on(commands::run::run(paths, args))?
    };
    if !quiet {
        show(&commands::run::summary::summary_text(
            &report,
            &table.options(),
        )?);
    }
    finish(&report)
}

/// Prints a command's output. On a terminal, no control sequence a name or a trace
/// carries reaches it (every format's own escaping still applies when it is piped).
/// Prints a command's output: to a terminal or a pipe alike, with every control
/// character but line breaks and tabs made visible (a pipe often ends at a terminal, a
/// pager or a log viewer that acts on escape sequences in a model's or attacker's text).
fn show(text: &str) {
    print!("{}", escape::terminal(text));
}

fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::failed(format!("cannot start the async runtime: {e}")))
}

/// Reports how a run ended; fatal, interrupted and error-ridden runs exit non-zero.
fn finish(report: &commands::run::summary::RunReport) -> Result<(), CliError> {
    eprintln!("{}", escape::terminal(&report.status()));
    report.verdict()
}

fn ablate_command(paths: &Paths, args: AblateArgs, table: &TableFlags) -> Result<(), CliError> {
    if args.run.dry_run {
        let rt = runtime()?;
        let ablation = rt.block_on(commands::ablate::resolve(paths, &args))?;
        let est = rt.block_on(commands::estimate::estimate(&ablation.config))?;
        show(&commands::estimate::render(&est));
        return Ok(());
    }
    let quiet = args.run.quiet;
    let report = runtime()?.block_on(commands::ablate::ablate(paths, args))?;
    if !quiet {
        show(&commands::ablate::table(
            &report.ablation,
            &table.options(),
        )?);
    }
    finish(&report.run)
}

fn dispatch(cli: Cli) -> Result<(), CliError> {
    let paths = Paths::resolve(cli.suites_dir, cli.attacks_dir, cli.home);
    match cli.command {
        Command::Run { args, table } => run_command(&paths, *args, &table)?,
        Command::Ablate { args, table } => ablate_command(&paths, *args, &table)?,
        Command::CheckSuites { suite } => {
            show(&commands::check_suites::check_suites(&paths, &suite)?);
        }
        Command::List { what, suite } => match what {
            ListWhat::Tasks => show(&commands::list::list_tasks(&paths, &suite)?),
            ListWhat::Samples => show(&commands::list::list_samples(&paths, &suite)?),
            ListWhat::Suites => show(&commands::list::list_suites(&paths)?),
            ListWhat::Attacks => show(&commands::list::list_attacks(&paths)?),
            ListWhat::Defenses => show(&commands::list::list_defenses()),
            ListWhat::Models => show(&commands::list::list_models(&paths)?),
        },
        Command::Calibrate(args) => {
            let max = args.max_error_rate;
            let cal = runtime()?.block_on(commands::calibrate::calibrate(&paths, *args))?;
            show(&commands::calibrate::markdown(&cal));
            eprintln!("results in {}", cal.out.display());
            commands::calibrate::verdict(&cal, max)?;
        }
        Command::Report(args) => show(&commands::report_cmd::report(&args)?),
        Command::Attack(AttackCommand::Search(args)) => {
            let (o, out) = runtime()?.block_on(commands::attack::search(&paths, *args))?;
            show(&commands::attack::printed(&o, &out));
            commands::attack::check_usable(&o, &out)?;
        }
        Command::Attack(AttackCommand::Merge(args)) => {
            let (o, out) = commands::attack::merge(&args)?;
            show(&commands::attack::printed(&o, &out));
        }
        Command::Attack(AttackCommand::Transfer(args)) => {
            let (names, rows) = runtime()?.block_on(commands::attack::transfer(&paths, &args))?;
            show(&commands::attack::transfer_table(
                &names,
                &rows,
                args.models.model.starts_with("sim"),
            ));
        }
        Command::Merge {
            out,
            shards,
            partial,
            max_error_rate,
            table,
        } => {
            let merged = commands::merge::merge(&out, &shards, partial)?;
            eprintln!("{} episode(s) merged into {}", merged.added, out.display());
            let text = commands::report_cmd::rerender(&out, max_error_rate, &table.options())?;
            drop(merged);
            show(&text);
        }
        Command::Compare {
            base,
            new,
            max_asr_increase,
            max_utility_drop,
            significance,
            pair,
            require_power,
            table,
        } => {
            let (text, failure) = commands::report_cmd::compare_fitted(
                &base,
                &new,
                Thresholds {
                    max_asr_increase,
                    max_utility_drop,
                    significance,
                    require_power,
                },
                &pair,
                &table.options(),
            )?;
            show(&text);
            if let Some(why) = failure {
                return Err(CliError::Regression(why));
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
            eprintln!("error: {}", escape::terminal(&e.to_string()));
            ExitCode::from(e.exit_code().clamp(1, 255) as u8)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    /// Every subcommand's `--help` gives every argument it shows a line of its own text
    /// (issue 40: `attack transfer` listed five flags with nothing beside them).
    #[test]
    fn every_shown_argument_of_every_subcommand_has_help() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if arg.is_hide_set() || id == "help" || id == "version" {
                    continue;
                }
                if arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("`{path}`: {id}"));
                }
            }
            for sub in cmd.get_subcommands() {
                if sub.get_name() != "help" {
                    walk(sub, &format!("{path} {}", sub.get_name()), missing);
                }
            }
        }
        let mut missing = Vec::new();
        walk(&Cli::command(), "sieve-bench", &mut missing);
        assert!(
            missing.is_empty(),
            "arguments without help:\n{}",
            missing.join("\n")
        );
    }

    /// clap's own consistency checks over the whole command tree (duplicate flags or
    /// short options, conflicts and requirements naming unknown arguments, and the like),
    /// which clap otherwise runs only when a subcommand is parsed in a debug build.
    #[test]
    fn the_command_definitions_pass_clap_debug_assert() {
        Cli::command().debug_assert();
    }

    /// `run --help` names every defense `--defense` accepts, `exec:` and `all` included.
    #[test]
    fn run_help_names_every_defense() {
        let mut cmd = Cli::command();
        let help = cmd
            .find_subcommand_mut("run")
            .unwrap()
            .render_long_help()
            .to_string();
        for name in sieve_bench::defense::REGISTRY.iter().map(|e| e.name) {
            assert!(help.contains(name), "run --help does not name `{name}`");
        }
        assert!(
            help.contains("exec:<command>") && help.contains("`all`"),
            "{help}"
        );
    }

    /// `list --help` shows each example on a line of its own.
    #[test]
    fn list_help_examples_are_one_per_line() {
        let mut cmd = Cli::command();
        let help = cmd
            .find_subcommand_mut("list")
            .unwrap()
            .render_long_help()
            .to_string();
        let examples: Vec<&str> = help
            .lines()
            .filter(|l| l.trim_start().starts_with("sieve-bench list"))
            .collect();
        assert_eq!(examples.len(), 4, "{help}");
        assert!(
            examples
                .iter()
                .all(|l| l.matches("sieve-bench").count() == 1),
            "{help}"
        );
    }
}
