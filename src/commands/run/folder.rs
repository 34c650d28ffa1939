//! The run's folder: created or refused, cleared by `--fresh`, and its manifest opened
//! against the run's settings (resumed, new, or refused naming every change) and
//! finished with what the invocation came to.

use super::config::RunConfig;
use crate::commands::CliError;
use crate::runner::{self, RunOutcome};
use sieve_record::{Invocation, InvocationOutcome, Manifest};
use std::path::Path;

/// Removes what a run writes into a folder (`--fresh`); other files are left alone.
pub(super) fn clear_folder(out: &Path) -> Result<(), CliError> {
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
pub(super) fn open_manifest(config: &RunConfig) -> Result<Manifest, CliError> {
    use runner::manifest::{Found, now, read};
    let (out, args, models) = (config.out.as_path(), &config.args, &config.models);
    let settings = config.settings.clone();
    let has_records = std::fs::metadata(out.join(sieve_record::EPISODES))
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
        outcome: InvocationOutcome::Running,
    };
    let recorded = match read(out) {
        Found::Manifest(m) => Some(*m),
        Found::None if has_records => {
            return Err(CliError::bad_input(format!(
                "{} holds episodes but no {}: the settings they were recorded under are unknown. {ways_out}.",
                out.display(),
                sieve_record::RUN_INFO
            )));
        }
        Found::Unreadable(why) if has_records => {
            return Err(CliError::bad_input(format!(
                "{why}: this manifest is not readable (made by an older version?), so the settings of the episodes recorded there are unknown. {ways_out}."
            )));
        }
        _ => None,
    };
    let errors_as = args.error_policy();
    let price = args.model_options.price_per_mtok.map(|(i, o)| [i, o]);
    match recorded {
        Some(mut m) => {
            // A folder recorded before the identity hashed the serialised configuration
            // holds the hash of its `Debug` text: the same configuration, so the same run.
            if m.settings.defense_config == config.defense_config_before {
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
            // The error convention labels the folder (merge checks its inputs share one):
            // a resume under another would relabel the episodes recorded before it.
            if m.errors_as != errors_as && has_records {
                return Err(CliError::bad_input(format!(
                    "{} was recorded with --errors-as {}; this run asks for {}. Resuming would relabel its episodes; repeat the folder's --errors-as, or {ways_out}.",
                    out.display(),
                    m.errors_as.as_str(),
                    errors_as.as_str()
                )));
            }
            m.settings = settings.merged_with(&m.settings);
            m.identity = runner::identity::fingerprint(&m.settings);
            m.errors_as = errors_as;
            m.price_per_mtok = price.or(m.price_per_mtok);
            m.roles = config.roles.clone();
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
            m.floors.extend(config.floors.clone());
            m.finished = None;
            m.invocations.push(invocation);
            Ok(m)
        }
        None => Ok(Manifest {
            run_id: config.run_id.clone(),
            crate_version: env!("CARGO_PKG_VERSION").to_string(),
            git_commit: runner::manifest::git_commit(),
            identity: runner::identity::fingerprint(&settings),
            settings,
            roles: config.roles.clone(),
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
            floors: config.floors.clone(),
        }),
    }
}

fn shard_name(s: Option<(usize, usize)>) -> String {
    s.map_or("the whole matrix".into(), |(k, n)| format!("shard {k}/{n}"))
}

/// The run's folder (`--out`, or the run id under the results folder): refused when it
/// holds something other than a run, created when missing.
pub(super) fn out_folder(out: &Path) -> Result<(), CliError> {
    if let runner::files::Folder::Foreign(holds) = runner::files::inspect(out)
        .map_err(|e| CliError::bad_input(format!("cannot read {}: {e}", out.display())))?
    {
        return Err(CliError::bad_input(runner::files::not_a_run(
            out, &holds, "run",
        )));
    }
    std::fs::create_dir_all(out)
        .map_err(|e| CliError::bad_input(format!("cannot create {}: {e}", out.display())))
}

pub(super) fn write_manifest(out: &Path, manifest: &Manifest) -> Result<(), CliError> {
    runner::manifest::write(out, manifest).map_err(|e| {
        CliError::failed(format!(
            "cannot write {}: {e}",
            out.join(sieve_record::RUN_INFO).display()
        ))
    })
}

/// What the invocation came to, and the run's budget ledger and served models, in the
/// manifest.
pub(super) fn finish_manifest(
    manifest: &mut Manifest,
    result: &Result<RunOutcome, runner::RunError>,
    requested: &std::collections::BTreeMap<sieve_record::Component, String>,
) {
    let invocation = manifest.invocations.last_mut().expect("pushed above");
    invocation.finished = Some(runner::manifest::now());
    invocation.outcome = match result {
        Ok(o) if o.interrupted => InvocationOutcome::Interrupted,
        Ok(o) => o.fatal.as_ref().map_or(InvocationOutcome::Done, |f| {
            InvocationOutcome::Stopped(f.clone())
        }),
        Err(e) => InvocationOutcome::Refused(e.to_string()),
    };
    if let Ok(o) = result {
        invocation.ran = o.ran;
        invocation.errored = o.errored;
        if o.budget_stop.is_some() {
            invocation.outcome = InvocationOutcome::Stopped("budget".into());
        }
        manifest.budget = o.ledger.clone();
        crate::commands::estimate::record_lineage(
            &mut manifest.served_models,
            requested,
            &o.served,
        );
    }
    manifest.finished = Some(runner::manifest::now());
}
