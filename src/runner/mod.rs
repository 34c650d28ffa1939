//! The run: the episode matrix, each episode run and recorded, and resume; the run loop
//! itself is `execution`.
//!
//! Matrix: suite × user task × (no attack + each injection task × attack) × defense ×
//! seed. Clean episodes do not depend on the attack, so they run once per user task,
//! defense and seed, however many attacks are selected.

pub mod budget;
pub mod execution;
pub mod files;
pub mod identity;
pub mod manifest;
use crate::record;

use crate::attack::{Attack, AttackContext};
use crate::defense::Defense;
use crate::episode::{EpisodeSpec, Injection, run_episode};
use crate::model::Models;
use crate::suite::Suite;
use crate::tools::ToolSchema;
use sieve_record::{EpisodeRecord, TraceRecord, key_hash};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// What to run.
pub struct RunPlan {
    pub run_id: String,
    pub out: PathBuf,
    pub suites: Vec<Arc<Suite>>,
    pub attacks: Vec<Attack>,
    /// Also run every context-aware sample of the suites (`--attack context`).
    pub context: bool,
    /// Also run the data-only attacks derived from the suites' plans (`--attack data_only`).
    pub data_only: bool,
    /// Also run the no-attack episodes (needed for clean utility).
    pub clean: bool,
    pub defenses: Vec<Arc<dyn Defense>>,
    pub models: Models,
    pub seeds: Vec<u64>,
    pub user_tasks: Option<Vec<String>>,
    pub injection_tasks: Option<Vec<String>>,
    pub max_steps: usize,
    pub concurrency: usize,
    /// `(k, n)`: run only episodes whose index in the matrix is k mod n.
    pub shard: Option<(usize, usize)>,
    /// Run episodes recorded with an error again (the default; `--keep-errors` turns it off).
    pub retry_errors: bool,
    /// What attacks write into `{model}`; part of each attacked episode's attack fingerprint.
    pub attack_model_name: String,
    /// Spending caps and the folder's ledger (unlimited by default).
    pub budget: budget::Budget,
    /// The model-graded answer judge (`--answer-judge`), run after every episode.
    pub answer_judge: Option<Arc<crate::model::answer_judge::AnswerJudge>>,
}

/// How an attacked job is attacked.
#[derive(Clone, Copy)]
enum JobAttack {
    /// A template (index into the plan's attacks) with an injection task of the suite.
    Template { attack: usize, task: usize },
    /// One of the suite's samples.
    Sample(usize),
    /// One of the suite's derived data-only attacks (`Suite::data_only`).
    DataOnly(usize),
}

/// The attack name recorded for episodes of the suites' own samples.
pub const CONTEXT_ATTACK: &str = crate::attack::CONTEXT;

/// The attack name recorded for the derived data-only episodes.
pub const DATA_ONLY_ATTACK: &str = crate::suite::data_only::ATTACK;

/// An episode's place in the matrix: with the run's identity (the folder's manifest) it
/// names everything that decides the outcome. Its text form is the record's `key`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobKey {
    pub suite: String,
    pub user_task: String,
    /// `None` for a clean episode (then `attack` is `None` too).
    pub injection_task: Option<String>,
    pub attack: Option<String>,
    pub defense: String,
    pub model: String,
    pub seed: u64,
}

impl std::fmt::Display for JobKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}|{}|{}|{}|{}|{}|{}",
            self.suite,
            self.user_task,
            self.injection_task.as_deref().unwrap_or("-"),
            self.attack.as_deref().unwrap_or("-"),
            self.defense,
            self.model,
            self.seed
        )
    }
}

impl JobKey {
    /// The part of the key that seeds the episode: suite, task pair and the agent model's
    /// [`seed_name`](crate::model::ChatModel::seed_name), nothing else. Leaving out the
    /// attack (its name and so its template), the defense (and its settings), the other
    /// roles' models and the scripted knobs gives every setting the same random draws
    /// for the same episode (common random numbers): a `sim:p=<x>` agent obeys in the
    /// same episodes and a scripted judge draws the same scores for the same calls
    /// whatever template, defense or judge quality runs, so differences between two
    /// templates or two settings come from them, not from luck. The record's key (this
    /// key's text form) still names the whole setting.
    pub fn seed_identity(&self, seed_model: &str) -> String {
        [
            self.suite.as_str(),
            self.user_task.as_str(),
            self.injection_task.as_deref().unwrap_or("-"),
            seed_model,
        ]
        .join("|")
    }

    /// The cluster of repeats this episode belongs to: suite × user task × injection
    /// task (and attack). Seeds of one cluster are not independent evidence.
    pub fn cluster(&self) -> (String, String, Option<String>, Option<String>) {
        (
            self.suite.clone(),
            self.user_task.clone(),
            self.injection_task.clone(),
            self.attack.clone(),
        )
    }
}

/// Whether `attack` is one the suite's provider marks as denial of service.
fn denial_of_service(suite: &Suite, attack: &Attack) -> bool {
    match (crate::external::served(suite), &attack.provider_attack) {
        (Some(x), Some(name)) => x.dos_attacks.iter().any(|a| a == name),
        _ => false,
    }
}

/// One cell of the matrix.
#[derive(Clone)]
pub struct Job {
    pub key: JobKey,
    suite: usize,
    user_task: usize,
    injection: Option<JobAttack>,
    defense: usize,
    seed: u64,
}

/// The seed an episode's random choices derive from: the run seed mixed with the
/// episode's identity, so each episode is reproducible on its own.
pub fn episode_seed(identity: &str, seed: u64) -> u64 {
    crate::digest::fnv1a(identity.as_bytes()) ^ seed.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

impl RunPlan {
    /// Every job of the matrix (this shard's), in a deterministic order.
    pub fn jobs(&self) -> Vec<Job> {
        let jobs = self.matrix();
        match self.shard {
            Some((k, n)) => jobs
                .into_iter()
                .enumerate()
                .filter(|(i, _)| i % n == k)
                .map(|(_, j)| j)
                .collect(),
            None => jobs,
        }
    }

    /// Whether the command asked for attacked episodes (a template or the samples).
    pub fn asks_for_attacks(&self) -> bool {
        !self.attacks.is_empty() || self.context || self.data_only
    }

    /// Every job of the whole matrix, every shard's, in a deterministic order.
    pub fn matrix(&self) -> Vec<Job> {
        let model = self.models.agent.name();
        let mut jobs = Vec::new();
        for (si, suite) in self.suites.iter().enumerate() {
            let suite_name = suite.qualified_name();
            for (ui, ut) in suite.user_tasks.iter().enumerate() {
                if let Some(f) = &self.user_tasks
                    && !f.iter().any(|x| x == ut.id.as_str())
                {
                    continue;
                }
                for (di, d) in self.defenses.iter().enumerate() {
                    for &seed in &self.seeds {
                        let mut push = |injection: Option<JobAttack>| {
                            // One sample per user task and class: the class in the attack
                            // keeps the key unique.
                            let (it, at) = match injection {
                                Some(JobAttack::Template { attack, task }) => (
                                    Some(suite.injection_tasks[task].id.0.clone()),
                                    Some(self.attacks[attack].name.clone()),
                                ),
                                Some(JobAttack::Sample(i)) => (
                                    Some(suite.samples[i].injection_task.0.clone()),
                                    Some(format!("{CONTEXT_ATTACK}:{}", suite.samples[i].class)),
                                ),
                                Some(JobAttack::DataOnly(i)) => (
                                    Some(suite.data_only[i].task.id.0.clone()),
                                    Some(DATA_ONLY_ATTACK.to_string()),
                                ),
                                None => (None, None),
                            };
                            let key = JobKey {
                                suite: suite_name.clone(),
                                user_task: ut.id.0.clone(),
                                injection_task: it,
                                attack: at,
                                defense: d.name().to_string(),
                                model: model.to_string(),
                                seed,
                            };
                            jobs.push(Job {
                                key,
                                suite: si,
                                user_task: ui,
                                injection,
                                defense: di,
                                seed,
                            });
                        };
                        if self.clean {
                            push(None);
                        }
                        for ai in 0..self.attacks.len() {
                            let dos = denial_of_service(suite, &self.attacks[ai]);
                            for (ii, it) in suite.injection_tasks.iter().enumerate() {
                                // AgentDojo runs a denial-of-service attack once per user
                                // task, with the suite's first injection task whatever the
                                // selection (its target is not what is measured).
                                if dos {
                                    if ii > 0 {
                                        break;
                                    }
                                } else if let Some(f) = &self.injection_tasks
                                    && !f.iter().any(|x| x == it.id.as_str())
                                {
                                    continue;
                                }
                                push(Some(JobAttack::Template {
                                    attack: ai,
                                    task: ii,
                                }));
                            }
                        }
                        if self.context {
                            for (si, sample) in suite.samples.iter().enumerate() {
                                if sample.user_task != ut.id {
                                    continue;
                                }
                                if let Some(f) = &self.injection_tasks
                                    && !f.iter().any(|x| x == sample.injection_task.as_str())
                                {
                                    continue;
                                }
                                push(Some(JobAttack::Sample(si)));
                            }
                        }
                        if self.data_only {
                            for (ci, case) in suite.data_only.iter().enumerate() {
                                if case.user_task != ut.id {
                                    continue;
                                }
                                if let Some(f) = &self.injection_tasks
                                    && !f.iter().any(|x| x == case.task.id.as_str())
                                {
                                    continue;
                                }
                                push(Some(JobAttack::DataOnly(ci)));
                            }
                        }
                    }
                }
            }
        }
        jobs
    }
}

/// How a run ended.
#[derive(Debug, Default)]
pub struct RunOutcome {
    pub planned: usize,
    pub skipped: usize,
    pub ran: usize,
    pub errored: usize,
    pub interrupted: bool,
    /// A fatal model error that stopped the run.
    pub fatal: Option<String>,
    pub dropped_partial_line: bool,
    /// The budget stopped admitting episodes: which cap, and what was left.
    pub budget_stop: Option<String>,
    /// Episodes that wait for a batch round (`run --batch`): not recorded yet.
    pub deferred: usize,
    /// The folder's ledger after this invocation (earlier invocations included).
    pub ledger: sieve_record::Ledger,
    /// Per role, the model ids endpoints said served the episodes run now.
    pub served:
        std::collections::BTreeMap<sieve_record::Component, std::collections::BTreeSet<String>>,
}

struct Shared {
    plan: RunPlan,
    schemas: Vec<Vec<ToolSchema>>,
}

/// The matrix place of a finished episode.
fn rec_key(r: &EpisodeRecord) -> JobKey {
    JobKey {
        suite: r.suite.clone(),
        user_task: r.user_task.clone(),
        injection_task: r.injection_task.clone(),
        attack: r.attack.clone(),
        defense: r.defense.clone(),
        model: r.model.clone(),
        seed: r.seed,
    }
}

/// The attack side of a job: a template's payload in every vector the user task reads,
/// or a context-aware sample's own texts.
fn injection_of<'a>(
    plan: &'a RunPlan,
    suite: &'a crate::suite::Suite,
    ut: &crate::suite::UserTask,
    how: JobAttack,
) -> Injection<'a> {
    match how {
        JobAttack::Template { attack, task } => {
            let attack = &plan.attacks[attack];
            let task = &suite.injection_tasks[task];
            let payload = attack.render(&AttackContext {
                goal: &task.goal,
                user: &suite.meta.user,
                model: &plan.attack_model_name,
                task: &ut.prompt,
                plan: &task.plan,
            });
            let vectors = suite.injectable.get(&ut.id).cloned().unwrap_or_default();
            Injection {
                task,
                attack: &attack.name,
                placements: crate::attack::placements(&payload, &vectors),
                split: crate::attack::is_split(&payload),
                plan: &task.plan,
                provider_attack: attack.provider_attack.as_deref(),
                denial_of_service: denial_of_service(suite, attack),
                substitution: None,
            }
        }
        JobAttack::Sample(i) => {
            let sample = &suite.samples[i];
            let task = suite
                .injection_task(sample.injection_task.as_str())
                .expect("the loader checked the sample's injection task");
            Injection {
                task,
                attack: CONTEXT_ATTACK,
                placements: sample.inject.clone(),
                split: false,
                plan: sample.attacker_plan(task),
                provider_attack: None,
                denial_of_service: false,
                substitution: None,
            }
        }
        JobAttack::DataOnly(i) => {
            let case = &suite.data_only[i];
            Injection {
                task: &case.task,
                attack: DATA_ONLY_ATTACK,
                placements: vec![(case.vector.clone(), case.payload.clone())],
                split: false,
                plan: &case.task.plan,
                provider_attack: None,
                denial_of_service: false,
                substitution: Some(&case.substitution),
            }
        }
    }
}

/// A finished episode, with what its episode and its answer judge said about stopping
/// the run; [`Execution::classify`] decides.
struct Finished {
    record: EpisodeRecord,
    trace: TraceRecord,
    /// The episode's error would fail every episode (bad credentials).
    episode_fatal: bool,
    /// The answer judge's error would fail every episode.
    judge_fatal: bool,
    /// The episode waits for a batch round: not recorded, not charged.
    deferred: bool,
}

async fn run_job(shared: Arc<Shared>, job: Job) -> Finished {
    let plan = &shared.plan;
    let suite = &plan.suites[job.suite];
    let ut = &suite.user_tasks[job.user_task];
    let defense = &plan.defenses[job.defense];
    let seed = episode_seed(
        &job.key.seed_identity(plan.models.agent.seed_name()),
        job.seed,
    );
    let injection = job.injection.map(|how| injection_of(plan, suite, ut, how));
    let AttackFields {
        injection_task: it,
        attack,
        severity,
        tags,
        vectors,
        payload,
        fingerprint: attack_fingerprint,
        bypass_pair,
        vector_class,
        surface,
    } = attack_fields(plan, suite, ut, job.injection, injection.as_ref());
    let injection_task = injection.as_ref().map(|i| i.task);
    let mut episode_defense = defense.episode();
    let spec = EpisodeSpec {
        suite,
        tools: &shared.schemas[job.suite],
        user_task: ut,
        injection,
        seed,
        max_steps: plan.max_steps,
    };
    let mut result = run_episode(spec, &plan.models, episode_defense.as_mut()).await;
    let (answer_judge, judge_fatal) = judge_answer(plan, ut, injection_task, &mut result).await;
    let served_models = std::mem::take(&mut result.cost.served)
        .into_iter()
        .map(|(c, ids)| (c, ids.into_iter().collect()))
        .collect();
    let payload_seen = it.as_ref().map(|_| result.payload_seen.is_some());
    let known_defect = suite
        .known_defects
        .find(ut.id.as_str(), it.as_deref())
        .map(|d| d.id.clone());
    let record = EpisodeRecord {
        run_id: plan.run_id.clone(),
        key: job.key.to_string(),
        suite: suite.qualified_name(),
        user_task: ut.id.0.clone(),
        injection_task: it,
        attack,
        defense: defense.name().to_string(),
        model: plan.models.agent.name().to_string(),
        simulated: plan.models.any_simulated(),
        scripted_roles: Some(plan.models.scripted_roles(&result.cost, |c| {
            crate::defense::model_role(defense.name(), c)
        })),
        seed: job.seed,
        utility: result.utility,
        attack_success: result.attack_success,
        undecided: result.undecided,
        severity,
        injection_tags: tags,
        injected_vectors: vectors,
        payload_seen,
        payload_seen_step: result.payload_seen,
        known_defect,
        vector_class,
        surface,
        steps: result.steps,
        hit_step_limit: result.hit_step_limit,
        stopped_by_defense: result.stopped_by_defense,
        proposed_calls: sieve_record::proposed_calls(&result.calls),
        blocked: result.blocked,
        asked_user: result.asked_user,
        faked: result.faked,
        escalated: result.stats.escalated,
        approved: result.stats.approved,
        flagged_outputs: result.stats.flagged_outputs,
        cost: result.cost,
        served_models,
        latency_ms: result.latency_ms,
        error_kind: result.error.as_ref().map(|e| e.kind),
        error: result.error.map(|e| e.message),
        harmful_call: result.harmful_call,
        attack_started: result.attack_started,
        bypass_pair,
        notes: result.notes,
        version: env!("CARGO_PKG_VERSION").to_string(),
        suite_fingerprint: suite.fingerprint.clone(),
        attack_fingerprint,
        error_convention: suite.error_convention(),
        answer_judge,
    };
    let trace = TraceRecord {
        key: job.key.to_string(),
        messages: result.messages,
        calls: result.calls,
        answer: result.answer,
        payload: result.payload.or(payload),
    };
    Finished {
        record,
        trace,
        episode_fatal: result.fatal,
        judge_fatal,
        deferred: result.deferred,
    }
}

/// What a job's attack puts in its record beside the episode's outcome.
struct AttackFields {
    injection_task: Option<String>,
    attack: Option<String>,
    severity: Option<f64>,
    tags: Vec<String>,
    vectors: Vec<String>,
    /// The payloads as placed, joined.
    payload: Option<String>,
    fingerprint: Option<String>,
    bypass_pair: bool,
    vector_class: Option<String>,
    surface: Option<String>,
}

/// Reads the record's attack fields off the job's attack `how` and its `injection`.
fn attack_fields(
    plan: &RunPlan,
    suite: &crate::suite::Suite,
    ut: &crate::suite::UserTask,
    how: Option<JobAttack>,
    injection: Option<&Injection>,
) -> AttackFields {
    let sample = match how {
        Some(JobAttack::Sample(i)) => Some(&suite.samples[i]),
        _ => None,
    };
    let payload = injection
        .map(|i| crate::episode::join_payloads(i.placements.iter().map(|(_, p)| p.as_str())));
    let vectors: Vec<String> = injection
        .map(|i| i.placements.iter().map(|(v, _)| v.0.clone()).collect())
        .unwrap_or_default();
    let fingerprint = how.map(|how| match how {
        JobAttack::Template { attack, .. } => {
            plan.attacks[attack].fingerprint_for(&plan.attack_model_name)
        }
        JobAttack::Sample(i) => suite.samples[i].fingerprint(),
        JobAttack::DataOnly(i) => suite.data_only[i].fingerprint(),
    });
    let (injection_task, attack, severity, tags) = match injection {
        Some(i) => (
            Some(i.task.id.0.clone()),
            Some(i.attack.to_string()),
            Some(i.task.severity),
            i.task.tags.clone(),
        ),
        None => (None, None, None, Vec::new()),
    };
    let bypass_pair = injection.is_some_and(|i| i.task.designed_for.contains(&ut.id));
    AttackFields {
        injection_task,
        attack,
        severity,
        tags,
        vectors,
        payload,
        fingerprint,
        bypass_pair,
        vector_class: sample.map(|s| s.class.to_string()),
        surface: sample.map(|s| s.surface.to_string()),
    }
}

/// Runs the answer judge on a finished episode that did not error; a judge that fails or
/// replies no verdict makes the episode an error (a model error), never a verdict. The
/// flag says whether the judge's failure would fail every episode.
async fn judge_answer(
    plan: &RunPlan,
    ut: &crate::suite::UserTask,
    injection: Option<&crate::suite::InjectionTask>,
    result: &mut crate::episode::EpisodeResult,
) -> (Option<sieve_record::JudgedAnswer>, bool) {
    let Some(judge) = plan.answer_judge.as_ref() else {
        return (None, false);
    };
    if result.error.is_some() {
        return (Some(judge.unjudged()), false);
    }
    let split = result.answer_split.map(|s| (s.utility, s.attack_success));
    match judge
        .judge_episode(
            ut,
            injection,
            &result.answer,
            split,
            result.undecided,
            &mut result.cost,
        )
        .await
    {
        Ok(judged) => (Some(judged), false),
        Err(e) => {
            result.error = Some(crate::episode::EpisodeError {
                kind: sieve_record::ErrorKind::Model,
                message: e.to_string(),
            });
            (Some(judge.unjudged()), e.fatal())
        }
    }
}

/// Why a run could not go on.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The directory holds episodes of another version of a suite or attack: resuming
    /// would mix two benchmarks in one table.
    #[error("{0}")]
    Stale(String),
    /// The plan selects no episode (filters, shard or seeds leave nothing).
    #[error("{0}")]
    NothingToRun(String),
    /// An episode panicked: a bug in the harness, not in the episode's data or model.
    /// Episodes recorded before it are kept; it is not recorded, so a rerun retries it.
    #[error("episode {key} panicked (a bug in sieve-bench; please report it): {message}")]
    Panicked { key: String, message: String },
}

/// Sees the records already in the folder, one at a time: which jobs they finish, and
/// whether any was made with other suite or attack data (resuming over those would mix
/// two benchmarks in one table).
struct Resume<'a> {
    plan: &'a RunPlan,
    jobs: &'a [Job],
    /// Each job's key hash with its index, sorted: 16 bytes a job, no key kept twice.
    index: Vec<(u64, usize)>,
    /// Per job: recorded (its last record), and not an error to retry.
    done: Vec<bool>,
    /// Each selected attack's fingerprint, computed once.
    attack_prints: HashMap<&'a str, String>,
    stale: std::collections::BTreeSet<String>,
    /// What the records say the folder spent (every line, as the ledger charges).
    recorded: sieve_record::Ledger,
}

impl<'a> Resume<'a> {
    fn new(plan: &'a RunPlan, jobs: &'a [Job]) -> Self {
        Resume {
            plan,
            jobs,
            index: Vec::new(),
            done: vec![false; jobs.len()],
            attack_prints: plan
                .attacks
                .iter()
                .map(|a| (a.name.as_str(), a.fingerprint_for(&plan.attack_model_name)))
                .collect(),
            stale: Default::default(),
            recorded: Default::default(),
        }
    }

    /// The job a recorded key names, if the plan has it.
    fn job_of(&mut self, key: &str) -> Option<usize> {
        if self.index.is_empty() {
            self.index = self
                .jobs
                .iter()
                .enumerate()
                .map(|(i, j)| (key_hash(&j.key.to_string()), i))
                .collect();
            self.index.sort_unstable();
        }
        let h = key_hash(key);
        let from = self.index.partition_point(|(x, _)| *x < h);
        self.index[from..]
            .iter()
            .take_while(|(x, _)| *x == h)
            .map(|(_, i)| *i)
            .find(|&i| self.jobs[i].key.to_string() == key)
    }

    fn see(&mut self, r: &EpisodeRecord) {
        let plan = self.plan;
        let total = r.cost.total();
        self.recorded.charge(
            plan.budget.prices.dollars(&r.defense, &r.cost),
            total.tokens(),
            total.estimated,
        );
        if let Some(s) = plan.suites.iter().find(|s| s.qualified_name() == r.suite)
            && r.suite_fingerprint != s.fingerprint
        {
            self.stale.insert(format!(
                "suite {} (recorded {}, now {})",
                r.suite,
                or_unknown(&r.suite_fingerprint),
                s.fingerprint
            ));
        }
        if let Some(name) = &r.attack
            && let Some(now) = self.attack_prints.get(name.as_str())
            && r.attack_fingerprint.as_deref() != Some(now.as_str())
        {
            self.stale.insert(format!(
                "attack {name} (recorded {}, now {now})",
                or_unknown(r.attack_fingerprint.as_deref().unwrap_or("")),
            ));
        }
        if let Some(i) = self.job_of(&r.key) {
            // The last record of a key decides: a retried error recorded again counts.
            self.done[i] = !(plan.retry_errors && r.error.is_some());
        }
    }

    /// Streams the folder's records (the reader `report` uses) and returns, per job,
    /// whether it is done, and what the records say the folder spent.
    fn read(
        mut self,
        path: &std::path::Path,
    ) -> Result<(Vec<bool>, sieve_record::Ledger), RunError> {
        record::for_each_record(
            path,
            |p| {
                match &p.record {
                    Ok(r) => self.see(r),
                    Err(why) => eprintln!("{}", sieve_record::skipped_line(path, p.line, why)),
                }
                Ok(())
            },
            RunError::Io,
        )?;
        if self.stale.is_empty() {
            return Ok((self.done, self.recorded));
        }
        Err(RunError::Stale(format!(
            "{} holds episodes recorded with other versions of: {}. Resuming would mix them in one table; run into a new --out directory (or delete this one).",
            self.plan.out.display(),
            std::mem::take(&mut self.stale)
                .into_iter()
                .collect::<Vec<_>>()
                .join("; ")
        )))
    }
}

/// Why an attack was asked for and none will run, naming what is missing.
fn no_attacked_episodes(plan: &RunPlan) -> String {
    let mut why = Vec::new();
    for s in &plan.suites {
        if !plan.attacks.is_empty() && s.injection_tasks.is_empty() {
            why.push(format!("{} has no injection tasks", s.qualified_name()));
        }
        if plan.context && s.samples.is_empty() {
            why.push(format!(
                "{} has no context-aware samples (samples.yaml)",
                s.qualified_name()
            ));
        }
        if plan.data_only && s.data_only.is_empty() {
            why.push(format!(
                "{} has no data-only attack (no plan writes a value read beside an injection vector)",
                s.qualified_name(),
            ));
        }
    }
    if why.is_empty() {
        why.push("the --user-tasks / --injection-tasks filters leave none".into());
    }
    format!(
        "an attack was asked for, but the selection has no attacked episode: {}. Select other suites or tasks, or pass --attack none for clean episodes only",
        why.join("; ")
    )
}

fn or_unknown(s: &str) -> &str {
    if s.is_empty() { "unknown" } else { s }
}

/// The jobs of the plan still to run: partial lines of an interrupted run dropped, the
/// recorded episodes skipped (counted in `outcome`); an error when the selection leaves
/// nothing to run. With them, what the records say the folder spent.
fn pending_jobs(
    plan: &RunPlan,
    outcome: &mut RunOutcome,
) -> Result<(Vec<Job>, sieve_record::Ledger), RunError> {
    let ep_path = plan.out.join(sieve_record::EPISODES);
    outcome.dropped_partial_line = sieve_record::drop_partial_tail(&ep_path)?;
    sieve_record::drop_partial_tail(&plan.out.join(sieve_record::TRACES))?;
    if plan.asks_for_attacks() && !plan.matrix().iter().any(|j| j.injection.is_some()) {
        return Err(RunError::NothingToRun(no_attacked_episodes(plan)));
    }
    let all = plan.jobs();
    if all.is_empty() {
        return Err(RunError::NothingToRun(format!(
            "the selection leaves no episode to run{}: check --user-tasks, --injection-tasks, --attack and --no-clean",
            plan.shard
                .map(|(k, n)| format!(" in shard {k}/{n}"))
                .unwrap_or_default()
        )));
    }
    let (done, recorded) = Resume::new(plan, &all).read(&ep_path)?;
    outcome.planned = all.len();
    let todo: Vec<Job> = all
        .into_iter()
        .zip(done)
        .filter(|(_, done)| !done)
        .map(|(j, _)| j)
        .collect();
    outcome.skipped = outcome.planned - todo.len();
    Ok((todo, recorded))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_share_an_episode_seed_and_the_episode_changes_it() {
        let ka = |d: &str, model: &str, ut: &str, seed: u64, attack: &str| {
            let key = JobKey {
                suite: "dojo-style/banking".into(),
                user_task: ut.into(),
                injection_task: Some("injection_task_0".into()),
                attack: Some(attack.into()),
                defense: d.into(),
                model: model.into(),
                seed,
            };
            assert_eq!(
                key.to_string(),
                format!("dojo-style/banking|{ut}|injection_task_0|{attack}|{d}|{model}|{seed}"),
                "the record key keeps its text form"
            );
            let seed_model = match model.strip_prefix("sim:") {
                Some(profile) => crate::model::parse_model_spec(
                    model,
                    std::sync::Arc::new(crate::model::tokens::TokenCounter::new().unwrap()),
                )
                .unwrap_or_else(|e| panic!("{profile}: {e}"))
                .seed_name()
                .to_string(),
                // An LLM backend seeds with its name (no endpoint needed to say so).
                None => model.to_string(),
            };
            episode_seed(&key.seed_identity(&seed_model), seed)
        };
        let k = |d: &str, model: &str, ut: &str, seed: u64| ka(d, model, ut, seed, "important");
        let base = k("none", "sim:p=0.5", "user_task_0", 0);
        assert_eq!(base, k("sieve:no-causal", "sim:p=0.5", "user_task_0", 0));
        // The scripted profile's knobs are settings compared on the same draws.
        for other in [
            "sim:oracle",
            "sim:obedient,judge_auc=0.6",
            "sim:p=0.2,planner_recall=1,varied",
        ] {
            assert_eq!(base, k("audit", other, "user_task_0", 0), "{other}");
        }
        assert_ne!(base, k("none", "openai:gpt-4o", "user_task_0", 0));
        assert_ne!(base, k("none", "sim:p=0.5", "user_task_1", 0));
        assert_ne!(base, k("none", "sim:p=0.5", "user_task_0", 1));
        // Templates are compared on the same draws: the attack's name seeds nothing.
        assert_eq!(
            base,
            ka("none", "sim:p=0.5", "user_task_0", 0, "important_copy")
        );
    }
}
