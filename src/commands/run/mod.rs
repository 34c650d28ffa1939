//! `run`: resolve the flags into a [`RunConfig`], then execute it: preflight, open the
//! folder's manifest, run what is not yet recorded, summarise everything recorded.
//!
//! One concern per file: [`args`] (the flags), [`config`] (resolution), [`models`] (the
//! roles' models and their preflight), [`folder`] (the run's folder and manifest),
//! [`extra`] (the known keys of the settings' `extra`), [`summary`] (what the run comes
//! to, and the text it prints), and here the orchestration.

pub mod args;
pub mod batch;
pub mod config;
pub mod extra;
mod folder;
pub mod models;
pub mod summary;

use super::{CliError, Paths};
use crate::runner;
use args::RunArgs;
use config::{RunConfig, resolve};
use summary::RunReport;

/// Runs (or resumes) the run `args` describe, and summarises it.
pub async fn run(paths: &Paths, args: RunArgs) -> Result<RunReport, CliError> {
    execute(resolve(paths, &args).await?).await
}

/// Executes a resolved run: preflight every endpoint, take the folder (refusing one
/// recorded under other settings), run what is not yet recorded under the budget, record
/// how the invocation ended, and summarise the folder.
pub async fn execute(config: RunConfig) -> Result<RunReport, CliError> {
    if let Some(first) = config.suites.first() {
        models::preflight(&config.models, &first.tools.schemas()).await?;
    }
    if let Some(j) = &config.answer_judge {
        j.model()
            .preflight(&[])
            .await
            .map_err(|e| CliError::failed(format!("answer judge: {e}")))?;
    }
    let out = config.out.clone();
    folder::out_folder(&out)?;
    let _lock = runner::files::FolderLock::acquire(&out).map_err(|e| match e {
        runner::files::LockError::Busy(_) => CliError::Locked(e.to_string()),
        runner::files::LockError::Io(..) => CliError::failed(e.to_string()),
    })?;
    if config.args.fresh {
        folder::clear_folder(&out)?;
    }
    let mut manifest = folder::open_manifest(&config)?;
    let mut plan = config.plan();
    plan.budget = budget(&config, &manifest).await?;
    let requested = super::estimate::requested_models(&config.models);
    folder::write_manifest(&out, &manifest)?;
    let result = runner::execution::execute(plan).await;
    folder::finish_manifest(&mut manifest, &result, &requested);
    folder::write_manifest(&out, &manifest)?;
    let outcome = result.map_err(|e| match e {
        runner::RunError::Stale(m) => CliError::bad_input(m),
        runner::RunError::NothingToRun(m) => CliError::NothingToRun(m),
        e @ runner::RunError::Panicked { .. } => CliError::Panicked(e.to_string()),
        runner::RunError::Io(e) => {
            CliError::failed(format!("writing results to {}: {e}", out.display()))
        }
    })?;
    let (summary, mut loaded) = summary::summarise(&config, &manifest)?;
    let judge_agreement = summary::write_agreement(&out, std::mem::take(&mut loaded.judged))?;
    let main = summary::main_table(&summary, &mut loaded);
    Ok(RunReport {
        out,
        outcome,
        summary,
        max_error_rate: config.args.max_error_rate,
        judge_agreement,
        main,
        pairs: loaded.pairs,
    })
}

/// The run's spending caps over the folder's ledger; when capped, each episode's
/// expected cost from the dry-run estimate (nothing is sent).
async fn budget(
    config: &RunConfig,
    manifest: &sieve_record::Manifest,
) -> Result<runner::budget::Budget, CliError> {
    let args = &config.args;
    let mut prices = super::estimate::prices(args, &config.named, &config.models)?;
    if args.batch.batch.is_some() {
        prices = prices.scaled(batch::BATCH_PRICE);
    }
    let mut budget = runner::budget::Budget::new(
        args.budget_usd,
        args.budget_tokens,
        prices,
        manifest.budget.clone(),
    );
    if budget.limited() {
        let records = super::estimate::stand_in_records(config).await?;
        budget.expected = super::estimate::expected_costs(&records, &budget.prices);
    }
    Ok(budget)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

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
