//! `sieve-bench attack search` and `attack transfer`: the adaptive attack search of
//! [`crate::search`] and the transfer matrix of its frozen payloads.
//! See docs/adaptive-attacks.md.

use super::run::args::RoleModels;
use super::{CliError, Paths};
use crate::attack::library::Library;
use crate::model::config::{ModelFactory, ModelOptions};
use crate::search::attacker::Proposer;
use crate::search::output::{CurveFile, TARGETS};
use crate::search::score::Victim;
use crate::search::targets::{self, Kind, TargetsManifest};
use crate::search::{Feedback, Outcomes, Settings, Unit};
use sieve_record::Component;
use std::fmt::Write;
use std::path::PathBuf;

pub use crate::search::attacker::SIM_ATTACKER;

/// `attack search`'s flags.
#[derive(clap::Args, Debug, Clone)]
pub struct SearchArgs {
    /// One suite (a name or `family/suite`).
    #[arg(long, default_value = "banking")]
    pub suite: String,
    /// The defense searched against (see `list defenses`).
    #[arg(long, default_value = "keyword_filter")]
    pub defense: String,
    /// The victim's models.
    #[command(flatten)]
    pub models: RoleModels,
    /// Who proposes templates: `sim-attacker` (scripted mutation grammar) or a model
    /// (`openai:<model>`, a named endpoint).
    #[arg(long, default_value = SIM_ATTACKER)]
    pub attacker: String,
    /// The optimisation unit: `pair:<user task>,<injection task>`, `vector:<id>`, or
    /// `universal[:<held-out share>]` (held-out ASR beside the fresh-seed headline); or several targets,
    /// one search each: `pairs` (every selected pair) or `vectors` (every vector the
    /// selected user tasks read), which `--shard` splits.
    #[arg(long, default_value = "universal")]
    pub unit: String,
    /// Search only the targets of shard k of n (`k/n`, 0-based; targets whose index is k
    /// modulo n) of `--unit pairs` or `vectors`; `attack merge` joins the shards.
    #[arg(long, value_name = "K/N", value_parser = super::run::args::parse_shard)]
    pub shard: Option<(usize, usize)>,
    /// The feedback tier.
    #[arg(long, value_enum, default_value = "binary")]
    pub feedback: Feedback,
    /// Victim episodes the search may run (the seeds' included; held-out scoring apart)
    /// [default: scoring the seed templates plus 20 candidates on the development cells,
    /// per target].
    #[arg(long, value_name = "N")]
    pub budget_episodes: Option<usize>,
    /// Attacker tokens the search may spend (0: no cap).
    #[arg(long, default_value_t = 0)]
    pub budget_attacker_tokens: u64,
    /// Attacker queries (proposals and critiques, usable or not) the search may make
    /// (default: as many as --budget-episodes); recorded in the search's identity.
    #[arg(long, value_name = "N")]
    pub budget_attacker_queries: Option<u64>,
    /// The search's seed (attacker, parent draws, held-out split) and the episodes' seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The stock templates that seed the search (an `--attack` selector).
    #[arg(long, default_value = "all")]
    pub seeds_from: String,
    /// Only these user task ids (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub user_tasks: Option<Vec<String>>,
    /// Only these injection task ids (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub injection_tasks: Option<Vec<String>>,
    /// Cap on agent model turns per episode.
    #[arg(long, default_value_t = 30)]
    pub max_steps: usize,
    /// The search's folder (default: results/search-<suite>-<defense>-<seed>/). Rerunning
    /// the same command there resumes.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub model_options: ModelOptions,
}

/// `attack merge`'s flags.
#[derive(clap::Args, Debug, Clone)]
pub struct MergeArgs {
    /// The merged folder (created; resumable only as the same merge).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// The shards' folders (`attack search --unit pairs|vectors --shard k/n --out ...`).
    #[arg(required = true, value_name = "SHARD")]
    pub shards: Vec<PathBuf>,
}

/// `attack transfer`'s flags.
#[derive(clap::Args, Debug, Clone)]
pub struct TransferArgs {
    /// Payload libraries (a search folder or a library.json), comma-separated.
    #[arg(long, value_delimiter = ',', required = true)]
    pub library: Vec<PathBuf>,
    /// Defenses to score them against, comma-separated.
    #[arg(long, default_value = "none,keyword_filter")]
    pub defense: String,
    /// The suite (default: the first library's).
    #[arg(long)]
    pub suite: Option<String>,
    /// The victim's models.
    #[command(flatten)]
    pub models: RoleModels,
    /// Only these user task ids (comma-separated): the cells scored.
    #[arg(long, value_delimiter = ',')]
    pub user_tasks: Option<Vec<String>>,
    /// Only these injection task ids (comma-separated): the cells scored.
    #[arg(long, value_delimiter = ',')]
    pub injection_tasks: Option<Vec<String>>,
    /// The episodes' seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Cap on agent model turns per episode.
    #[arg(long, default_value_t = 30)]
    pub max_steps: usize,
    /// Also write the matrix as CSV here.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    #[command(flatten)]
    pub model_options: ModelOptions,
}

/// The victim and the factory its models came from.
async fn victim_parts(
    paths: &Paths,
    suite: &str,
    options: &ModelOptions,
    roles: &RoleModels,
) -> Result<(crate::suite::Suite, crate::model::Models, ModelFactory), CliError> {
    let mut suites = super::load_selected(paths, suite, 1).await?;
    if suites.len() != 1 {
        return Err(CliError::bad_input(format!(
            "--suite `{suite}` selects {} suites; a search runs on one",
            suites.len()
        )));
    }
    let named = crate::model::config::load_named(&paths.configs)?;
    let tokens = paths.token_counter()?;
    let factory = ModelFactory::new(options.clone(), named, tokens)?;
    let models = super::run::models::build_models_with(&factory, roles)?;
    Ok((suites.remove(0), models, factory))
}

/// The default episode budget: it pays for the seeds and DEFAULT_QUERIES candidates on
/// the largest target's development cells, so the defaults always run.
fn default_budget(
    suite: &crate::suite::Suite,
    settings: &Settings,
    kind: Option<Kind>,
    seeds: usize,
) -> Result<usize, CliError> {
    let units = match kind {
        Some(k) => targets::expand(suite, settings, k),
        None => vec![settings.unit.clone()],
    };
    let mut dev = 0;
    for u in units {
        let s = Settings {
            unit: u,
            ..settings.clone()
        };
        dev = dev.max(crate::search::cells(suite, &s)?.0.len());
    }
    Ok(crate::search::default_budget(seeds, dev))
}

/// The files a search (or a merge of searches) writes first into its folder: one that
/// holds neither is written into only when empty.
const SEARCH_MARKERS: &[&str] = &[crate::search::output::SETTINGS, targets::MANIFEST];

/// What a search produced: one target's results, or several targets' and their pooled
/// curve.
pub enum Searched {
    One(Box<Outcomes>),
    Many(Box<Targets>),
}

/// A search over several targets (this shard's, or merged).
pub struct Targets {
    pub manifest: TargetsManifest,
    pub curve: CurveFile,
    pub outcomes: Vec<Outcomes>,
}

/// Runs (or resumes) a search: one target, or each target of `--unit pairs|vectors`
/// (this shard's) in `targets/` with the pooled files beside them.
pub async fn search(paths: &Paths, args: SearchArgs) -> Result<(Searched, PathBuf), CliError> {
    if args.max_steps == 0 {
        return Err(CliError::bad_input("--max-steps must be at least 1"));
    }
    let kind = Kind::parse(&args.unit);
    let unit = match kind {
        Some(_) => None,
        None => Some(Unit::parse(&args.unit)?),
    };
    if let (Some(u), Some(_)) = (&unit, args.shard) {
        return Err(CliError::bad_input(format!(
            "--shard splits the targets of --unit pairs or --unit vectors; `{}` is one target",
            u.label()
        )));
    }
    let (suite, models, factory) =
        victim_parts(paths, &args.suite, &args.model_options, &args.models).await?;
    let options = super::run::config::defense_options(paths, None, None)?;
    let defense = crate::defense::build_with(&args.defense, &options)?;
    let all = crate::attack::load_all(&paths.attacks)?;
    let seeds = crate::attack::select(&all, &args.seeds_from)?.templates;
    if seeds.is_empty() || seeds.iter().any(|a| a.provider_attack.is_some()) {
        return Err(CliError::bad_input(
            "--seeds-from must select templates of attacks/ (not `none`, `context` or a provider's attack)",
        ));
    }
    // A fresh attacker per target: each target's search is the one it would be alone.
    let proposer = || -> Result<Proposer, CliError> {
        Ok(if args.attacker == SIM_ATTACKER {
            Proposer::sim(args.seed, factory.tokens())
        } else {
            Proposer::model(factory.chat(&args.attacker)?)
        })
    };
    let mut settings = Settings {
        suite: suite.qualified_name(),
        defense: defense.name().to_string(),
        model: models.agent.name().to_string(),
        attacker: proposer()?.name(),
        unit: unit.clone().unwrap_or(Unit::Vector {
            vector: String::new(),
        }),
        feedback: args.feedback,
        // Sized below, once the development cells are known.
        budget_episodes: args.budget_episodes.unwrap_or(0),
        budget_attacker_tokens: args.budget_attacker_tokens,
        // Defaults to the episode budget, sized below when not given.
        budget_attacker_queries: args.budget_attacker_queries.unwrap_or(0),
        seed: args.seed,
        seeds_from: seeds
            .iter()
            .map(|a| format!("{}@{}", a.name, a.fingerprint()))
            .collect(),
        user_tasks: args.user_tasks.clone().unwrap_or_default(),
        injection_tasks: args.injection_tasks.clone().unwrap_or_default(),
        max_steps: args.max_steps,
    };
    if args.budget_episodes.is_none() {
        settings.budget_episodes = default_budget(&suite, &settings, kind, seeds.len())?;
    }
    if args.budget_attacker_queries.is_none() {
        settings.budget_attacker_queries = settings.budget_episodes as u64;
    }
    let out = args.out.clone().unwrap_or_else(|| {
        let mut name = format!(
            "search-{}-{}-{}",
            args.suite.replace('/', "_"),
            settings.defense.replace([':', '/', '@', '='], "_"),
            args.seed
        );
        if let Some(k) = kind {
            name.push_str(&format!("-{}", k.label()));
        }
        if let Some((k, n)) = args.shard {
            name.push_str(&format!("-shard{k}of{n}"));
        }
        PathBuf::from("results").join(name)
    });
    // Held until the search's files are written: a second search into the folder waits
    // its turn instead of tearing `cells.jsonl`, and a folder of the user's is refused.
    let _lock = crate::runner::files::claim_own(&out, SEARCH_MARKERS, "attack search")?;
    let victim = Victim {
        schemas: suite.tools.schemas(),
        suite: &suite,
        defense,
        models: &models,
        max_steps: args.max_steps,
        seed: args.seed,
        attack_model_name: crate::attack::plain_model_name(models.agent.name()),
    };
    let Some(kind) = kind else {
        let outcomes =
            crate::search::search(&victim, settings, &seeds, &mut proposer()?, &out).await?;
        write_cost(&out, &[&outcomes])?;
        return Ok((Searched::One(Box::new(outcomes)), out));
    };
    let t = search_targets(
        &victim,
        &settings,
        &seeds,
        (kind, args.shard),
        &out,
        &proposer,
    )
    .await?;
    Ok((Searched::Many(Box::new(t)), out))
}

/// Each target of `kind` (this shard's) searched on its own in `targets/`, then the
/// pooled files.
async fn search_targets(
    victim: &Victim<'_>,
    settings: &Settings,
    seeds: &[crate::attack::Attack],
    (kind, shard): (Kind, Option<(usize, usize)>),
    out: &std::path::Path,
    proposer: &dyn Fn() -> Result<Proposer, CliError>,
) -> Result<Targets, CliError> {
    let units = targets::expand(victim.suite, settings, kind);
    if units.is_empty() {
        return Err(CliError::bad_input(
            "the selection leaves no target to search: check --user-tasks and --injection-tasks",
        ));
    }
    let total = units.len();
    let mine = targets::shard_of(units, shard);
    let manifest = TargetsManifest::new(kind, settings, total, shard, &mine);
    manifest.claim(out)?;
    let mut outcomes = Vec::new();
    for (i, unit) in &mine {
        let dir = out.join(TARGETS).join(targets::dir_name(*i, unit));
        let s = Settings {
            unit: unit.clone(),
            ..settings.clone()
        };
        let o = crate::search::search(victim, s, seeds, &mut proposer()?, &dir).await?;
        write_cost(&dir, &[&o])?;
        outcomes.push(o);
    }
    let curve = targets::write_combined(out, &manifest, &outcomes)?;
    write_cost(out, &outcomes.iter().collect::<Vec<_>>())?;
    Ok(Targets {
        manifest,
        curve,
        outcomes,
    })
}

/// `attack merge`: the shards' targets in one folder, with the pooled files written as
/// the unsharded search writes them.
pub fn merge(args: &MergeArgs) -> Result<(Searched, PathBuf), CliError> {
    let _lock = crate::runner::files::claim_own(&args.out, SEARCH_MARKERS, "attack merge")?;
    let (manifest, outcomes) = targets::merge(&args.out, &args.shards)?;
    let curve = targets::write_combined(&args.out, &manifest, &outcomes)?;
    write_cost(&args.out, &outcomes.iter().collect::<Vec<_>>())?;
    Ok((
        Searched::Many(Box::new(Targets {
            manifest,
            curve,
            outcomes,
        })),
        args.out.clone(),
    ))
}

/// A search whose attacker made queries but added no template to the pool (every
/// reply unusable or a repeat) measured nothing about the attacker: an error naming the
/// counts, after its files and summary are written (exit 1, the endpoint's failure).
pub fn check_usable(s: &Searched, out: &std::path::Path) -> Result<(), CliError> {
    let all: Vec<&Outcomes> = match s {
        Searched::One(o) => vec![o],
        Searched::Many(t) => t.outcomes.iter().collect(),
    };
    let queries: usize = all.iter().map(|o| o.queries).sum();
    if queries == 0 || all.iter().any(|o| o.new_templates() > 0) {
        return Ok(());
    }
    let unusable: usize = all.iter().map(|o| o.unusable.proposals).sum();
    let oversized: usize = all.iter().map(|o| o.unusable.oversized).sum();
    let repeated: usize = all.iter().map(|o| o.repeated).sum();
    Err(CliError::failed(crate::escape::terminal(&format!(
        "attacker {}: no usable new template in {queries} queries ({unusable} unusable, {oversized} of all replies over the {} KiB cap; {repeated} repeated a template already scored): the adaptive ASR is the seeds' alone and says nothing about the defense; results in {}",
        all[0].settings.attacker,
        crate::search::attacker::MAX_REPLY_BYTES / 1024,
        out.display()
    ))))
}

/// What `attack search` and `attack merge` print.
pub fn printed(s: &Searched, out: &std::path::Path) -> String {
    match s {
        Searched::One(o) => summary(o, out),
        Searched::Many(t) => summary_many(&t.manifest, &t.curve, &t.outcomes, out),
    }
}

/// The terminal summary of a search over several targets: the pooled curve beside the
/// static ASR, how many targets each broke, and the cost per target.
fn summary_many(
    m: &TargetsManifest,
    c: &CurveFile,
    outcomes: &[Outcomes],
    out: &std::path::Path,
) -> String {
    let mut s = String::new();
    let label = if c.simulated { "SIMULATED — " } else { "" };
    let shard = match m.shard {
        Some((k, n)) => format!(", shard {k}/{n}: {} of them", m.targets.len()),
        None => String::new(),
    };
    let _ = writeln!(
        s,
        "{label}adaptive search over {} targets ({}{shard}): attacker {} vs {} + {} on {}, feedback {}, seed {}, each target's budget {} episodes",
        m.total,
        m.kind.label(),
        c.attacker,
        c.model,
        c.defense,
        c.suite,
        c.feedback,
        m.identity["seed"],
        m.identity["budget_episodes"]
    );
    let _ = writeln!(s, "\n  k  episodes  ASR@k (pooled dev cells)  static");
    let mut last = f64::NAN;
    for (i, p) in c.points.iter().enumerate() {
        if p.asr != last || i + 1 == c.points.len() {
            let _ = writeln!(
                s,
                "{:>3}  {:>8}  {:>23}  {:>6}  {}",
                p.k,
                p.episodes,
                pct(p.asr),
                pct(p.static_asr),
                "#".repeat((p.asr * 30.0).round() as usize)
            );
            last = p.asr;
        }
    }
    let broken = |f: fn(&Outcomes) -> f64| outcomes.iter().filter(|o| f(o) > 0.0).count();
    let _ = writeln!(
        s,
        "\ntargets with a successful template: static {} -> adaptive {} of {}",
        broken(|o| o.static_asr),
        broken(|o| o.best_asr),
        outcomes.len()
    );
    let _ = writeln!(s, "\n{}", cost_text(&outcomes.iter().collect::<Vec<_>>()));
    let _ = writeln!(s, "results in {}", out.display());
    s
}

fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

/// The terminal summary: the run's identity, ASR@k beside the static ASR, the headline
/// and the payloads' diversity.
pub fn summary(o: &Outcomes, out: &std::path::Path) -> String {
    let mut s = String::new();
    write_identity(&mut s, o);
    write_curve(&mut s, o);
    write_headline(&mut s, o);
    write_payloads(&mut s, o);
    let _ = writeln!(s, "\n{}", cost_text(&[o]));
    let _ = writeln!(
        s,
        "best payload: lib-{}; results in {}",
        o.best,
        out.display()
    );
    s
}

/// The summary's first lines: what searched against what, the budget and what was used
/// of it, and the attacker's replies.
fn write_identity(s: &mut String, o: &Outcomes) {
    let label = if o.simulated { "SIMULATED — " } else { "" };
    let _ = writeln!(
        s,
        "{label}adaptive search: attacker {} vs {} + {} on {} ({} dev cells{}), unit {}, feedback {}, seed {}",
        o.settings.attacker,
        o.settings.model,
        o.settings.defense,
        o.settings.suite,
        o.dev_cells,
        if o.heldout_cells > 0 {
            format!(", {} held-out", o.heldout_cells)
        } else {
            String::new()
        },
        o.settings.unit.label(),
        o.settings.feedback.label(),
        o.settings.seed
    );
    let _ = writeln!(
        s,
        "budget: {} episodes{}; used {} episodes, {} attacker queries; stopped: {}",
        o.settings.budget_episodes,
        if o.settings.budget_attacker_tokens > 0 {
            format!(", {} attacker tokens", o.settings.budget_attacker_tokens)
        } else {
            String::new()
        },
        o.episodes,
        o.queries,
        o.stopped_by
    );
    let _ = writeln!(
        s,
        "attacker queries: {} of {} budgeted; {} new templates, {} unusable replies ({} proposals, {} critiques, {} over {} KiB), {} repeated templates",
        o.cost.get(Component::Attacker).calls,
        o.settings.budget_attacker_queries,
        o.new_templates(),
        o.unusable.total(),
        o.unusable.proposals,
        o.unusable.critiques,
        o.unusable.oversized,
        crate::search::attacker::MAX_REPLY_BYTES / 1024,
        o.repeated
    );
}

/// The summary's ASR@k table beside the static ASR, one row where ASR@k changes.
fn write_curve(s: &mut String, o: &Outcomes) {
    let _ = writeln!(s, "\n  k  episodes  ASR@k (dev)  static  ");
    let mut last = f64::NAN;
    for (i, p) in o.curve.iter().enumerate() {
        if p.asr != last || i + 1 == o.curve.len() {
            let bar = "#".repeat((p.asr * 30.0).round() as usize);
            let _ = writeln!(
                s,
                "{:>3}  {:>8}  {:>11}  {:>6}  {bar}",
                p.k,
                p.episodes,
                pct(p.asr),
                pct(p.static_asr)
            );
            last = p.asr;
        }
    }
}

/// The summary's headline: static against adaptive ASR on the dev cells, held out and at
/// fresh seeds.
fn write_headline(s: &mut String, o: &Outcomes) {
    let _ = writeln!(
        s,
        "\nstatic ASR (best stock template): {}  ->  adaptive: {}  (dev cells)",
        pct(o.static_asr),
        pct(o.best_asr)
    );
    if let (Some(st), Some(ad)) = (o.heldout_static_asr, o.heldout_asr) {
        let _ = writeln!(
            s,
            "held-out: static {}  ->  adaptive {}  ({} cells, {} episodes)",
            pct(st),
            pct(ad),
            o.heldout_cells,
            o.heldout_episodes
        );
    }
    if o.fresh_seeds > 0 {
        let _ = writeln!(
            s,
            "fresh seeds (headline): static {}  ->  adaptive {}  (every cell at {} seeds the templates were not selected at, {} episodes)",
            pct(o.fresh_static_asr),
            pct(o.fresh_asr),
            o.fresh_seeds,
            o.fresh_episodes
        );
    }
}

/// The summary's lines on the payloads: their diversity and the critic's critiques.
fn write_payloads(s: &mut String, o: &Outcomes) {
    let d = &o.diversity;
    let _ = writeln!(
        s,
        "payloads: {} scored, {} distinct, operator families: {}, mean edit distance {:.2}",
        d.payloads,
        d.distinct,
        if d.families.is_empty() {
            "-".to_string()
        } else {
            d.families.join(", ")
        },
        d.mean_edit_distance
    );
    if let Some(last) = o.critiques.last() {
        let scores: Vec<f64> = o
            .critiques
            .iter()
            .filter_map(|c| c.score.map(f64::from))
            .collect();
        let mean = scores.iter().sum::<f64>() / scores.len().max(1) as f64;
        let _ = writeln!(
            s,
            "critic{}: {} critiques ({} with a score, mean {mean:.1}/10); last, query {}: {}",
            if o.critiques.iter().any(|c| c.simulated) {
                " (SIMULATED: scripted from the diagnosis)"
            } else {
                ""
            },
            o.critiques.len(),
            scores.len(),
            last.query,
            last.text.chars().take(200).collect::<String>()
        );
    }
}

/// The name of a search's cost table in its folder.
pub const COST_CSV: &str = "cost.csv";

/// The cost table as the terminal shows it.
fn cost_text(searches: &[&Outcomes]) -> String {
    let g = crate::report::adaptive::cost_grid(searches);
    let mut s = String::new();
    let opts = crate::report::text::TextOptions {
        width: 200,
        ..Default::default()
    };
    match crate::report::text::render(&g, &opts) {
        Ok(t) => s.push_str(&t),
        Err(e) => s.push_str(&e.to_string()),
    }
    s
}

/// Writes the cost table as `cost.csv` in the search's folder.
fn write_cost(out: &std::path::Path, searches: &[&Outcomes]) -> Result<(), CliError> {
    let path = out.join(COST_CSV);
    let text = crate::report::formats::csv(&crate::report::adaptive::cost_grid(searches))
        .map_err(|e| CliError::failed(format!("{}: {e}", path.display())))?;
    crate::runner::files::write_atomic(&path, text.as_bytes())
        .map_err(|e| CliError::failed(format!("{}: {e}", path.display())))
}

/// One row of the transfer matrix.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TransferRow {
    pub payload: String,
    pub found_against: String,
    pub asr: Vec<f64>,
}

/// The transfer matrix: each library's payloads (rows) scored against each defense.
pub async fn transfer(
    paths: &Paths,
    args: &TransferArgs,
) -> Result<(Vec<String>, Vec<TransferRow>), CliError> {
    let libs: Vec<Library> = args
        .library
        .iter()
        .map(|p| Library::load(p).map_err(CliError::from))
        .collect::<Result<_, _>>()?;
    let suite_name = match &args.suite {
        Some(s) => s.clone(),
        None => libs[0].entries[0].target.suite.clone(),
    };
    let (suite, models, _) =
        victim_parts(paths, &suite_name, &args.model_options, &args.models).await?;
    let options = super::run::config::defense_options(paths, None, None)?;
    let settings = Settings {
        suite: suite.qualified_name(),
        defense: String::new(),
        model: models.agent.name().to_string(),
        attacker: String::new(),
        unit: Unit::Vector {
            vector: String::new(),
        },
        feedback: Feedback::Binary,
        budget_episodes: 0,
        budget_attacker_tokens: 0,
        budget_attacker_queries: 0,
        seed: args.seed,
        seeds_from: Vec::new(),
        user_tasks: args.user_tasks.clone().unwrap_or_default(),
        injection_tasks: args.injection_tasks.clone().unwrap_or_default(),
        max_steps: args.max_steps,
    };
    let mut defenses = Vec::new();
    let mut names = Vec::new();
    for d in crate::defense::expand(&args.defense) {
        let built = crate::defense::build_with(&d, &options)?;
        names.push(built.name().to_string());
        defenses.push(built);
    }
    let cells = crate::search::all_cells(&suite, &settings);
    if cells.is_empty() {
        return Err(CliError::bad_input(
            "the selection leaves no cell to score: check --user-tasks and --injection-tasks",
        ));
    }
    let mut rows: Vec<TransferRow> = libs
        .iter()
        .flat_map(|l| {
            l.entries.iter().map(|e| TransferRow {
                payload: e.attack_name(),
                found_against: e.target.defense.clone(),
                asr: Vec::new(),
            })
        })
        .collect();
    for d in defenses {
        let victim = Victim {
            schemas: suite.tools.schemas(),
            suite: &suite,
            defense: d,
            models: &models,
            max_steps: args.max_steps,
            seed: args.seed,
            attack_model_name: crate::attack::plain_model_name(models.agent.name()),
        };
        let mut i = 0;
        for l in &libs {
            for asr in crate::search::score_library(&victim, l, &cells).await {
                rows[i].asr.push(asr);
                i += 1;
            }
        }
    }
    if let Some(path) = &args.csv {
        write_transfer_csv(path, &names, &rows)
            .map_err(|e| CliError::failed(format!("{}: {e}", path.display())))?;
    }
    Ok((names, rows))
}

fn write_transfer_csv(
    path: &std::path::Path,
    names: &[String],
    rows: &[TransferRow],
) -> std::io::Result<()> {
    let mut w = csv::Writer::from_path(path)?;
    use crate::escape::csv_cell;
    let mut head = vec!["payload".to_string(), "found_against".to_string()];
    head.extend(names.iter().map(|n| csv_cell(n)));
    w.write_record(&head)?;
    for r in rows {
        let mut rec = vec![csv_cell(&r.payload), csv_cell(&r.found_against)];
        rec.extend(r.asr.iter().map(|a| format!("{a:.4}")));
        w.write_record(&rec)?;
    }
    w.flush()
}

/// The transfer matrix as text.
pub fn transfer_table(names: &[String], rows: &[TransferRow], simulated: bool) -> String {
    let mut s = String::new();
    if simulated {
        s.push_str("SIMULATED — ");
    }
    let _ = writeln!(
        s,
        "transfer: ASR of each frozen payload (rows) against each defense (columns)\n"
    );
    use crate::escape::terminal_cell as cell;
    let _ = write!(s, "{:<22} {:<16}", "payload", "found against");
    for n in names {
        let _ = write!(s, " {:>14}", cell(n));
    }
    s.push('\n');
    for r in rows {
        let _ = write!(s, "{:<22} {:<16}", cell(&r.payload), cell(&r.found_against));
        for a in &r.asr {
            let _ = write!(s, " {:>14}", pct(*a));
        }
        s.push('\n');
    }
    s
}
