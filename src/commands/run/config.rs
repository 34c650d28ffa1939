//! Resolution: `RunArgs` into a checked [`RunConfig`] (suites, attacks, defenses,
//! models, roles, counts and the run's settings), by the one function [`resolve`].

use super::args::{MAX_SEEDS, PLUGIN_MAX_REPLY_MIB, RunArgs, default_run_id, parse_plugin_timeout};
use super::models::{build_answer_judge, build_models_with, roles_of};
use crate::commands::{CliError, Paths};
use crate::model::Models;
use crate::model::config::ModelFactory;
use crate::runner::RunPlan;
use crate::runner::identity::short_hash;
use crate::suite::Suite;
use sieve_record::{RunRoles, RunSettings};
use std::path::PathBuf;
use std::sync::Arc;

/// A run resolved from its flags, checked, before any request is sent: the one thing
/// `run` executes, `ablate` executes per ablation and `--dry-run` estimates. Its
/// `settings` (what decides outcomes, computed once here) are what the manifest records
/// and the identity check compares.
pub struct RunConfig {
    /// The flags it was resolved from (counts, filters, budgets, prices, `--out`).
    pub args: RunArgs,
    /// The run id (the folder name under the results folder unless `--out`).
    pub run_id: String,
    /// The run's folder (not created until the run executes).
    pub out: PathBuf,
    /// The selected suites, proven.
    pub suites: Vec<Arc<Suite>>,
    /// The selected attacks.
    pub selection: crate::attack::Selection,
    /// The defenses' options (SIEVE config, weights, plugin limits).
    pub options: crate::defense::BuildOptions,
    /// The defenses, each once, in the command line's order.
    pub defenses: Vec<Arc<dyn crate::defense::Defense>>,
    pub models: Models,
    /// What attacks write into `{model}`.
    pub attack_model_name: String,
    pub roles: RunRoles,
    /// The seeds, first to last.
    pub seeds: std::ops::RangeInclusive<u64>,
    /// The named endpoints of `configs/models.toml`.
    pub named: std::collections::BTreeMap<String, crate::model::config::NamedEndpoint>,
    /// The model-graded answer judge (`--answer-judge`), if any.
    pub answer_judge: Option<Arc<crate::model::answer_judge::AnswerJudge>>,
    /// What decides outcomes (the manifest's `settings`, hashed into its identity).
    pub settings: RunSettings,
    /// The defense configuration's hash as folders recorded before the serialised form
    /// hold it: only read, to recognise such a folder as recorded with this very one.
    pub defense_config_before: String,
    /// Each suite's utility floors (qualified name → floors), for `run.json`.
    pub floors: std::collections::BTreeMap<String, sieve_record::Floors>,
}

impl RunConfig {
    /// The plan the runner executes: this config's matrix into its folder, with an
    /// unlimited budget (`run` sets the caps).
    pub fn plan(&self) -> RunPlan {
        RunPlan {
            run_id: self.run_id.clone(),
            out: self.out.clone(),
            suites: self.suites.clone(),
            attacks: self.selection.templates.clone(),
            context: self.selection.context,
            data_only: self.selection.data_only,
            clean: !self.args.no_clean,
            defenses: self.defenses.clone(),
            models: self.models.clone(),
            seeds: self.seeds.clone().collect(),
            user_tasks: self.args.user_tasks.clone(),
            injection_tasks: self.args.injection_tasks.clone(),
            max_steps: self.args.max_steps,
            concurrency: self.args.concurrency.n,
            shard: self.args.shard,
            retry_errors: !self.args.keep_errors,
            attack_model_name: self.attack_model_name.clone(),
            budget: Default::default(),
            answer_judge: self.answer_judge.clone(),
        }
    }

    /// The same run with the defenses `spec` names (what `ablate` compares), under the
    /// run id and folder that command line would have. The settings do not change: the
    /// defenses' configuration is in them, their names are in every record's key.
    pub fn with_defenses(mut self, spec: &str) -> Result<RunConfig, CliError> {
        self.defenses = build_defenses(spec, &self.options)?;
        self.args.defense = spec.to_string();
        self.run_id = default_run_id(&self.args);
        self.out = default_out(&self.args, &self.run_id);
        Ok(self)
    }
}

/// `--out`, or the run id under the results folder.
fn default_out(args: &RunArgs, run_id: &str) -> PathBuf {
    args.out
        .clone()
        .unwrap_or_else(|| args.results_dir.join(run_id))
}

/// Resolves `args` into a [`RunConfig`]: loads and checks what they select (suites,
/// attacks, defenses, models, roles) and computes the run's settings, before any request
/// is sent. The one way from flags to a run.
pub async fn resolve(paths: &Paths, args: &RunArgs) -> Result<RunConfig, CliError> {
    let last_seed = check_counts(args)?;
    // Its tables are built in the background while the suites load.
    let tokens = paths.token_counter()?;
    let suites = crate::commands::load_selected(paths, &args.suite, args.concurrency.n).await?;
    let suites = suites
        .into_iter()
        .map(|s| crate::external::with_trace(s, args.trace))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CliError::bad_input(e.to_string()))?;
    prove(paths, &suites)?;
    let floors = measure_floors(
        paths,
        &suites,
        args.user_tasks.as_deref(),
        args.concurrency.n,
    )
    .await;
    let all_attacks = crate::attack::load_all(&paths.attacks)?;
    let selection = crate::attack::select(&all_attacks, &args.attack)?;
    check_provider_attacks(&suites, &selection.templates)?;
    let mut suites = suites;
    if selection.data_only {
        derive_provider_data_only(&mut suites).await?;
    }
    let options = resolve_defense_options(paths, args, &suites)?;
    let defenses = build_defenses(&args.defense, &options)?;
    check_task_filters(args, &suites)?;
    let m = resolve_models(paths, args, tokens)?;
    let suites: Vec<Arc<Suite>> = suites.into_iter().map(Arc::new).collect();
    let mut settings = run_settings(&m.models, &suites, &options, args);
    if let Some(j) = &m.answer_judge {
        super::extra::set_answer_judge(&mut settings, &j.identity());
    }
    add_package_settings(&mut settings, &suites, args.trace);
    let run_id = default_run_id(args);
    Ok(RunConfig {
        args: args.clone(),
        out: default_out(args, &run_id),
        run_id,
        suites,
        selection,
        defense_config_before: defense_config_as_debug_text(&options),
        options,
        defenses,
        models: m.models,
        attack_model_name: m.attack_model_name,
        roles: m.roles,
        seeds: args.seed..=last_seed,
        named: m.named,
        answer_judge: m.answer_judge,
        settings,
        floors,
    })
}

/// Each selected suite's utility floors (a do-nothing and a read-only agent) over the
/// user tasks the run selects, measured once per task, suite fingerprint and build and
/// kept beside the suite proofs.
async fn measure_floors(
    paths: &Paths,
    suites: &[Suite],
    only: Option<&[String]>,
    concurrency: usize,
) -> std::collections::BTreeMap<String, sieve_record::Floors> {
    let build = paths.proof_build();
    let mut out = std::collections::BTreeMap::new();
    for s in suites {
        let f = crate::episode::floors::floors(
            s,
            only,
            paths.proofs.as_deref(),
            build.as_deref(),
            concurrency,
        )
        .await;
        out.insert(s.qualified_name(), f);
    }
    out
}

/// Refuses suites that fail validation (each proved once per fingerprint and build).
fn prove(paths: &Paths, suites: &[Suite]) -> Result<(), CliError> {
    let build = paths.proof_build();
    let problems: Vec<String> = suites
        .iter()
        // An external suite's tasks are proved by its provider (and by the oracle run).
        .filter(|s| s.external.is_none())
        .flat_map(|s| {
            // Proved once per suite fingerprint and build (see `suite::proof_cache`), and
            // what its tasks take from tool outputs is kept beside the proof.
            let dir = paths.proofs.as_deref();
            let problems = crate::suite::proof_cache::prove(s, dir, build.as_deref()).0;
            crate::suite::proof_cache::keep_needs(s, dir, build.as_deref());
            problems
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
    Ok(())
}

/// The defenses' options: the SIEVE config checked against the suites' tools, and the
/// plugin limits in range.
fn resolve_defense_options(
    paths: &Paths,
    args: &RunArgs,
    suites: &[Suite],
) -> Result<crate::defense::BuildOptions, CliError> {
    let mut options =
        defense_options(paths, args.sieve_config.as_deref(), args.weights.as_deref())?;
    check_tool_tables(&options, suites)?;
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
    Ok(options)
}

/// The models side of a run, resolved.
struct ResolvedModels {
    models: Models,
    named: std::collections::BTreeMap<String, crate::model::config::NamedEndpoint>,
    attack_model_name: String,
    roles: RunRoles,
    answer_judge: Option<Arc<crate::model::answer_judge::AnswerJudge>>,
}

/// Every role's model, the attack's model name, the roles (a real agent beside scripted
/// helpers only when allowed) and the answer judge.
fn resolve_models(
    paths: &Paths,
    args: &RunArgs,
    tokens: Arc<crate::model::tokens::TokenCounter>,
) -> Result<ResolvedModels, CliError> {
    let named = crate::model::config::load_named(&paths.configs)?;
    let mut options = args.model_options.clone();
    if args.dry_run {
        // A dry run sends nothing and writes nothing: its stand-ins never ask a cache,
        // so none is opened (opening one creates its folder).
        options.cache = None;
        options.replay = false;
    }
    let mut factory = ModelFactory::new(options, named.clone(), tokens)?;
    if args.dry_run {
        factory = factory.sending_nothing();
    }
    let models = build_models_with(&factory, &args.models)?;
    let attack_model_name = match &args.attack_model_name {
        Some(n) if n.trim().is_empty() => {
            return Err(CliError::bad_input("--attack-model-name: empty name"));
        }
        Some(n) => n.trim().to_string(),
        None => crate::attack::plain_model_name(models.agent.name()),
    };
    let roles = roles_of(&models);
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
        (args.utility_from, args.answer_judge_on),
    )?;
    Ok(ResolvedModels {
        models,
        named,
        attack_model_name,
        roles,
        answer_judge,
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
    suites: &[Suite],
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
    suites: &[Arc<Suite>],
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

/// The bridged packages' settings that decide outcomes: which calls reach their traces
/// (only when not the package's own behaviour, so earlier folders keep their identity),
/// and each package's name, version and origin (its distribution's file hashes and source
/// URL), so a fork under the same name and version is another run.
fn add_package_settings(
    settings: &mut RunSettings,
    suites: &[Arc<Suite>],
    trace: crate::external::protocol::TraceMode,
) {
    let served: Vec<&crate::external::ExternalSuite> = suites
        .iter()
        .filter_map(|s| crate::external::served(s))
        .collect();
    if served.is_empty() {
        return;
    }
    if trace != crate::external::protocol::TraceMode::All {
        super::extra::set_trace(settings, trace);
    }
    let packages = served.into_iter().map(|s| {
        let h = &s.hello;
        let record = super::extra::PackageRecord {
            version: h.package_version.clone(),
            origin: h.package_origin.clone(),
        };
        (h.package.clone(), record)
    });
    super::extra::set_packages(settings, packages);
}

/// A provider's suites get their data-only attacks only when a run asks for them: the
/// derivation replays every injectable user task's plan in the provider's process.
async fn derive_provider_data_only(suites: &mut [Suite]) -> Result<(), CliError> {
    for s in suites.iter_mut().filter(|s| s.external.is_some()) {
        s.data_only = crate::external::data_only::derive(s).await.map_err(|e| {
            let message = format!(
                "{}: cannot derive the data-only attacks: {e}",
                s.qualified_name()
            );
            crate::commands::external_failure(&e, message)
        })?;
    }
    Ok(())
}

/// A provider-rendered attack (`agentdojo:important_instructions`) needs every selected
/// suite to come from that package's provider, and the provider to know the attack.
fn check_provider_attacks(
    suites: &[Suite],
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

/// The counts `run` takes (concurrency, steps, seeds) in range; the last seed.
fn check_counts(args: &RunArgs) -> Result<u64, CliError> {
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

/// The defenses `spec` (`--defense`) names, each once.
fn build_defenses(
    spec: &str,
    options: &crate::defense::BuildOptions,
) -> Result<Vec<Arc<dyn crate::defense::Defense>>, CliError> {
    let mut defenses: Vec<Arc<dyn crate::defense::Defense>> = Vec::new();
    for d in crate::defense::expand(spec) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_baseline_is_recognised_under_either_identity_of_its_config() {
        // results/baseline was recorded with the built-in SIEVE config and no --weights,
        // before or after the identity hashed a serialised form: either way it resumes.
        let home = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let paths = Paths::resolve(None, None, Some(home.clone()));
        let options = defense_options(&paths, None, None).unwrap();
        let m = match crate::runner::manifest::read(&home.join("results/baseline")) {
            crate::runner::manifest::Found::Manifest(m) => m,
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
}
