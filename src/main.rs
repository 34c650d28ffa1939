//! Command-line entry point: parses arguments and dispatches to `sieve_bench::commands`.

use clap::{Parser, Subcommand, ValueEnum};
use sieve_bench::commands::{self, CliError, Paths};
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
}

#[derive(ValueEnum, Clone, Debug)]
enum ListWhat {
    Suites,
}

fn dispatch(cli: Cli) -> Result<(), CliError> {
    let paths = Paths::resolve(cli.suites_dir, cli.attacks_dir, cli.home);
    match cli.command {
        Command::CheckSuites { suite } => {
            print!("{}", commands::check_suites::check_suites(&paths, &suite)?);
        }
        Command::List { what } => match what {
            ListWhat::Suites => print!("{}", commands::list::list_suites(&paths)?),
        },
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match dispatch(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", e.message);
            ExitCode::from(e.code as u8)
        }
    }
}
