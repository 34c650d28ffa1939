//! Task suites: loading them from data, the task model, and their validation.
//!
//! A suite is a folder `suites/<family>/<suite>/` of YAML files (see DESIGN.md), so
//! adding tasks needs no Rust.

pub mod alternatives;
pub mod check;
pub mod corpus;
pub mod data_only;
pub mod defects;
pub mod env;
pub mod facts;
pub mod lexicon;
pub mod meaning;
pub mod needs_memo;
pub mod perturb;
pub mod proof_cache;
pub mod protective;
pub mod sample_proofs;
pub mod samples;
pub mod sight;
pub mod source;
pub mod stance;
pub mod trace;
pub mod validate;
pub mod variants;
pub mod writes;

use crate::ids::{TaskId, ToolName, VectorId};
use crate::tools::{ToolSet, render::render, toolset};
use check::{Check, ExecutedCall};
use env::{EnvTemplate, TemplateError};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sieve_record::ErrorConvention;

/// A problem in a suite's files, located as precisely as the loader can.
#[derive(Debug, Clone, thiserror::Error)]
pub struct SuiteError {
    pub file: PathBuf,
    /// 1-based line in `file`, when the problem sits on one.
    pub line: Option<usize>,
    pub task: Option<String>,
    pub field: Option<String>,
    pub message: String,
}

impl fmt::Display for SuiteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(t) = &self.task {
            write!(f, ": task `{t}`")?;
        }
        if let Some(fl) = &self.field {
            write!(f, ": field `{fl}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl SuiteError {
    pub(crate) fn at(
        file: &Path,
        task: Option<&str>,
        field: Option<&str>,
        message: impl std::fmt::Display,
    ) -> Self {
        SuiteError {
            file: file.to_path_buf(),
            line: None,
            task: task.map(str::to_string),
            field: field.map(str::to_string),
            message: message.to_string(),
        }
    }

    /// The same error, placed on a line of its file.
    pub(crate) fn on_line(self, line: Option<usize>) -> Self {
        SuiteError { line, ..self }
    }
}

/// Which benchmark's *style* a suite follows; it decides how attacks are built. These are
/// this project's own tasks: the names say "-style" so nobody takes them for AgentDojo's or
/// AgentLure's originals, whose published numbers they cannot be compared with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Family {
    /// AgentDojo-style: environment, tools, user and injection tasks; generic attack templates.
    #[serde(rename = "dojo-style")]
    DojoStyle,
    /// AgentLure-style: context-dependent tasks and hand-written context-aware samples.
    #[serde(rename = "lure-style")]
    LureStyle,
    /// Served by a provider process (docs/external-suites.md); its real family is the
    /// package and version it names, e.g. `agentdojo@v1.2.2`.
    #[serde(rename = "external")]
    External,
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Family::DojoStyle => "dojo-style",
            Family::LureStyle => "lure-style",
            Family::External => "external",
        })
    }
}

/// Where attacker-controlled text lands, for per-surface reporting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Surface {
    ToolOutput,
    Document,
    File,
    Email,
    Web,
    Calendar,
    Message,
    Review,
    Transaction,
    Memory,
    Skill,
    AgentMessage,
    ToolDescription,
}

impl fmt::Display for Surface {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = serde_json::to_value(self).expect("a surface serialises");
        f.write_str(v.as_str().unwrap_or("?"))
    }
}

/// suite.yaml
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteMeta {
    pub name: String,
    pub family: Family,
    /// Tool domains whose tools the agent gets.
    pub domains: Vec<String>,
    /// The user the agent works for (shown in attacks as `{user}`).
    pub user: String,
    /// The date the episode takes place, YYYY-MM-DD.
    pub date: String,
    #[serde(default)]
    pub description: String,
    /// Extra system-prompt text for this suite.
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// Restricts the domains' tools to these names (a suite that uses only part of a
    /// shared domain, as travel uses only `send_email` of the email domain).
    #[serde(default)]
    pub tools: Option<Vec<ToolName>>,
}

impl SuiteMeta {
    /// Who the agent works for and when, as one sentence for prompts; a part the suite
    /// does not give (a provider's suite may have no user or date) is left out, so no
    /// prompt says "today is .".
    pub fn setting(&self) -> String {
        match (self.user.trim(), self.date.trim()) {
            ("", "") => String::new(),
            (user, "") => format!("The user is {user}."),
            ("", date) => format!("Today is {date}."),
            (user, date) => format!("The user is {user} and today is {date}."),
        }
    }
}

/// One injection point in the environment.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Vector {
    pub id: VectorId,
    pub description: String,
    pub surface: Surface,
    /// Benign text when the vector is not attacked.
    #[serde(default)]
    pub default: String,
}

/// A planned tool call in a reference plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlannedCall {
    pub tool: ToolName,
    #[serde(default = "empty_object")]
    pub args: Value,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// What the user asks for, how to do it, and how to tell it was done.
#[derive(Clone, Debug, Serialize)]
pub struct UserTask {
    pub id: TaskId,
    pub prompt: String,
    pub plan: Vec<PlannedCall>,
    /// The answer a correct agent gives at the end (used by the scripted agent).
    pub answer: Option<String>,
    pub utility: Check,
    /// Plan arguments the agent works out rather than reads, as `"<step>.<arg>"` → how
    /// (e.g. `"1.amount": 162.00 share minus 72.00 already paid`): the provenance lint
    /// accepts these without finding them in what the agent saw.
    pub derived: BTreeMap<String, String>,
    /// Write arguments the prompt does not fix, as `"<step>.<arg>"` → why (a message's
    /// wording): `check-suites` requires every other argument of every write call to be
    /// read by the utility check.
    pub free: BTreeMap<String, String>,
}

/// What the attacker wants, how to do it, and how to tell it happened.
#[derive(Clone, Debug, Serialize)]
pub struct InjectionTask {
    pub id: TaskId,
    pub goal: String,
    pub plan: Vec<PlannedCall>,
    /// Weight in (0,1] for W-ASR.
    pub severity: f64,
    /// `true` means the attack succeeded.
    pub security: Check,
    /// What an agent that carries out the goal says, for goals reached through the
    /// answer itself (a planted recommendation, a false claim).
    pub answer: Option<String>,
    /// Free text for reports (e.g. "exercises the provenance bypass").
    pub tags: Vec<String>,
    /// For tasks written to defeat one defense: the user tasks whose plan they target. The
    /// `Bypass` column counts exactly these pairs.
    pub designed_for: Vec<TaskId>,
}

/// The tag suites put on injection tasks built to exercise SIEVE's provenance bypass
/// (rows count them apart: `aggregate::metrics::attack_label`).
pub const BYPASS_TAG: &str = "provenance_bypass";

/// A loaded, structurally valid suite.
#[derive(Debug)]
pub struct Suite {
    pub meta: SuiteMeta,
    pub dir: PathBuf,
    pub tools: Arc<ToolSet>,
    pub env: EnvTemplate,
    pub vectors: Vec<Vector>,
    pub user_tasks: Vec<UserTask>,
    pub injection_tasks: Vec<InjectionTask>,
    /// Context-aware attack samples (`samples.yaml`, lure-style suites); empty elsewhere.
    pub samples: Vec<samples::Sample>,
    /// Behaviour other than the reference that the checks must judge right (`variants.yaml`).
    pub variants: variants::Variants,
    /// For each user task, the vectors its reference plan reads (canary run).
    pub injectable: BTreeMap<TaskId, Vec<VectorId>>,
    /// The data-only attacks derived from the user tasks' plans ([`data_only`]).
    pub data_only: Vec<data_only::DataOnly>,
    /// For each user task, the reorderings of its reference plan a model could as well
    /// make ([`alternatives`]), found on first use ([`Suite::reorderings`]): only a `varied`
    /// agent and `check-suites` read them.
    pub(crate) reorderings: std::sync::OnceLock<BTreeMap<TaskId, Vec<Vec<PlannedCall>>>>,
    /// For each user task, what its agent reads in the prompts and in all
    /// ([`sight::TaskSight`]), each task's found on its first use ([`Suite::task_sight`]):
    /// a run of some tasks reads only theirs, and workers find different tasks' at once.
    pub(crate) sights: std::sync::OnceLock<sight::Sights>,
    /// What each (task, plan, answer) takes from tool outputs ([`sight::needs`]), found on
    /// first use: every episode of a task asks the same question. A run keeps the answers
    /// beside the suite's proof ([`proof_cache::keep_needs`]).
    pub(crate) needs_memo: needs_memo::NeedsMemo,
    /// SHA-256 of every file in the suite folder: records carry it, so a resumed run
    /// never mixes episodes of two versions of a suite.
    pub fingerprint: String,
    /// Set when the suite lives in a provider process: its episodes run there.
    pub external: Option<Arc<dyn Served>>,
    /// The tasks and pairs of this suite whose checks are known to be broken
    /// ([`defects`]).
    pub known_defects: defects::KnownDefects,
}

/// A suite whose episodes run in a provider process (docs/external-suites.md), as the
/// suite's own code sees it. `external::ExternalSuite` is the one implementation; the
/// layers above read it back with `external::served`.
pub trait Served: std::any::Any + Send + Sync + std::fmt::Debug {
    /// `package@version/suite`.
    fn qualified(&self) -> &str;
    /// The suite's own system prompt, used instead of the harness's.
    fn system_prompt(&self) -> Option<&str>;
    /// From the provider file: how the suite's rows count errored episodes.
    fn error_convention(&self) -> ErrorConvention;
}

/// The result of running a plan on an environment.
pub struct PlanRun {
    pub calls: Vec<ExecutedCall>,
    /// Rendered outputs, as the model would read them.
    pub outputs: Vec<String>,
    /// Index and error of the first failing call, if any.
    pub failure: Option<(usize, String)>,
}

/// A plan's step that failed, as a proof reports it: its index and the tool's error (or
/// that the tool is unknown), as [`PlanRun::failure`] holds them.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("step {step} fails: {reason}")]
pub struct StepFailed {
    pub step: usize,
    pub reason: String,
}

impl PlanRun {
    /// The step that failed, if one did.
    pub fn step_failed(&self) -> Option<StepFailed> {
        self.failure.as_ref().map(|(step, reason)| StepFailed {
            step: *step,
            reason: reason.clone(),
        })
    }
}

/// Runs a plan on an environment, stopping at the first error.
pub fn run_plan(tools: &ToolSet, env: &mut Value, plan: &[PlannedCall]) -> PlanRun {
    let mut run = PlanRun {
        calls: Vec::new(),
        outputs: Vec::new(),
        failure: None,
    };
    for (i, call) in plan.iter().enumerate() {
        let Some(tool) = tools.get(call.tool.as_str()) else {
            run.failure = Some((i, format!("unknown tool `{}`", call.tool)));
            break;
        };
        match tool.call(env, &call.args) {
            Ok(v) => {
                run.outputs.push(render(&v));
                run.calls.push(ExecutedCall {
                    tool: call.tool.0.clone(),
                    args: call.args.clone(),
                    ok: true,
                });
            }
            Err(e) => {
                run.failure = Some((i, e.to_string()));
                break;
            }
        }
    }
    run
}

/// A canary that cannot occur in real text, so finding it proves the plan read the vector.
pub fn canary(v: &VectorId) -> String {
    format!("<<canary:{v}>>")
}

impl Suite {
    /// `family/name`, unique across the suites directory.
    pub fn qualified_name(&self) -> String {
        if let Some(x) = &self.external {
            return x.qualified().to_string();
        }
        format!("{}/{}", self.meta.family, self.meta.name)
    }

    /// How the suite's rows count errored episodes unless `--errors-as` names one
    /// convention: its provider file's `error_convention` for an external suite, this
    /// project's (errors apart) for the rest. Never read from the suite's name.
    pub fn error_convention(&self) -> ErrorConvention {
        self.external
            .as_ref()
            .map_or_else(Default::default, |x| x.error_convention())
    }

    pub fn defaults(&self) -> Vec<String> {
        self.vectors.iter().map(|v| v.default.clone()).collect()
    }

    pub fn user_task(&self, id: &str) -> Option<&UserTask> {
        self.user_tasks.iter().find(|t| t.id.as_str() == id)
    }

    pub fn injection_task(&self, id: &str) -> Option<&InjectionTask> {
        self.injection_tasks.iter().find(|t| t.id.as_str() == id)
    }

    /// The vectors a plan reads: every vector is set to a canary, the plan runs, and the
    /// canaries that show up in its outputs name the vectors.
    pub fn vectors_read_by(&self, plan: &[PlannedCall]) -> Vec<VectorId> {
        let overrides: Vec<(VectorId, String)> = self
            .vectors
            .iter()
            .map(|v| (v.id.clone(), canary(&v.id)))
            .collect();
        let mut env = self.env.with(&self.defaults(), &overrides);
        let run = run_plan(&self.tools, &mut env, plan);
        self.vectors
            .iter()
            .filter(|v| {
                let c = canary(&v.id);
                run.outputs.iter().any(|o| o.contains(&c))
            })
            .map(|v| v.id.clone())
            .collect()
    }
}

// ---------------------------------------------------------------- loading

/// Parses a YAML file into a JSON value; `!include` is confined to the suite folder.
pub fn read_yaml(path: &Path, root: &Path) -> Result<Value, SuiteError> {
    read_yaml_located(path, root).map(|(value, _)| value)
}

/// [`read_yaml`], with where each value sits in the file. A plain scalar that loses
/// text to a ` #` comment ([`source`]), here or in a file it includes, is an error
/// naming the file, the line, the task and the field.
pub fn read_yaml_located(path: &Path, root: &Path) -> Result<(Value, source::Scan), SuiteError> {
    let text = crate::bounded::read_to_string(path, crate::bounded::MAX_INPUT_BYTES)
        .map_err(|e| SuiteError::at(path, None, None, format!("cannot read: {e}")))?;
    let options = serde_saphyr::options! {}
        .with_filesystem_root(root)
        .map_err(|e| SuiteError::at(path, None, None, format!("cannot set include root: {e}")))?;
    let value = serde_saphyr::from_str_with_options::<Value>(&text, options).map_err(|e| {
        SuiteError::at(
            path,
            None,
            None,
            format!("invalid YAML: {}", crate::yaml::message(&e)),
        )
    })?;
    let scan = source::scan(&text);
    if let Some(cut) = scan.cuts.first() {
        let (task, field) = scan.locate(&cut.path);
        let more = match scan.cuts.len() - 1 {
            0 => String::new(),
            n => format!(" ({n} more in this file)"),
        };
        return Err(SuiteError::at(
            path,
            task.as_deref(),
            Some(&field),
            format!(
                "a ` #` in plain YAML starts a comment, so the value is cut to `{}` and `#{}` is lost; quote the value, or put a comment on its own line{more}",
                cut.kept, cut.lost
            ),
        )
        .on_line(Some(cut.line)));
    }
    let dir = path.parent().unwrap_or(root);
    for include in &scan.includes {
        let file = include.split('#').next().unwrap_or(include);
        let included = dir.join(file);
        if included.is_file() && included.starts_with(root) && included != path {
            read_yaml_located(&included, root)?;
        }
    }
    Ok((value, scan))
}

/// Checks that a prompt or goal is a whole sentence, located at its line.
fn check_sentence(
    file: &Path,
    scan: &source::Scan,
    at: &str,
    task: &str,
    field: &str,
    text: &str,
) -> Result<(), SuiteError> {
    source::complete_sentence(text).map_err(|why| {
        SuiteError::at(
            file,
            Some(task),
            Some(field),
            format!("not a complete sentence: {why}"),
        )
        .on_line(scan.line(at))
    })
}

fn field<T: DeserializeOwned>(
    file: &Path,
    task: &str,
    map: &serde_json::Map<String, Value>,
    name: &str,
    required: bool,
) -> Result<Option<T>, SuiteError> {
    match map.get(name) {
        None | Some(Value::Null) if required => Err(SuiteError::at(
            file,
            Some(task),
            Some(name),
            "missing required field",
        )),
        None | Some(Value::Null) => Ok(None),
        Some(v) => serde_json::from_value(v.clone())
            .map(Some)
            .map_err(|e| SuiteError::at(file, Some(task), Some(name), e.to_string())),
    }
}

type TaskMap = serde_json::Map<String, Value>;

fn task_maps<'a>(file: &Path, doc: &'a Value) -> Result<Vec<(String, &'a TaskMap)>, SuiteError> {
    let list = doc.get("tasks").and_then(Value::as_array).ok_or_else(|| {
        SuiteError::at(file, None, Some("tasks"), "expected a list under `tasks`")
    })?;
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for (i, t) in list.iter().enumerate() {
        let map = t.as_object().ok_or_else(|| {
            SuiteError::at(file, Some(&format!("#{i}")), None, "a task must be a map")
        })?;
        let id = map.get("id").and_then(Value::as_str).ok_or_else(|| {
            SuiteError::at(
                file,
                Some(&format!("#{i}")),
                Some("id"),
                "missing or not a string",
            )
        })?;
        crate::ids::check_name(id)
            .map_err(|why| SuiteError::at(file, Some(&format!("#{i}")), Some("id"), why))?;
        if !seen.insert(id.to_string()) {
            return Err(SuiteError::at(
                file,
                Some(id),
                Some("id"),
                "duplicate task id",
            ));
        }
        out.push((id.to_string(), map));
    }
    Ok(out)
}

fn reject_unknown(
    file: &Path,
    task: &str,
    map: &serde_json::Map<String, Value>,
    known: &[&str],
) -> Result<(), SuiteError> {
    for k in map.keys() {
        if !known.contains(&k.as_str()) {
            return Err(SuiteError::at(
                file,
                Some(task),
                Some(k),
                format!("unknown field; expected one of: {}", known.join(", ")),
            ));
        }
    }
    Ok(())
}

pub(crate) fn check_plan(
    file: &Path,
    task: &str,
    plan: &[PlannedCall],
    tools: &ToolSet,
) -> Result<(), SuiteError> {
    for (i, call) in plan.iter().enumerate() {
        let field = format!("plan[{i}]");
        let tool = tools.get(call.tool.as_str()).ok_or_else(|| {
            SuiteError::at(
                file,
                Some(task),
                Some(&field),
                format!(
                    "unknown tool `{}`; this suite's tools: {}",
                    call.tool,
                    tools
                        .names()
                        .map(|n| n.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })?;
        tool.check_args(&call.args)
            .map_err(|e| SuiteError::at(file, Some(task), Some(&field), e.message))?;
    }
    Ok(())
}

/// Loads one suite folder and checks its structure: YAML, fields, tool names and
/// arguments, check paths, placeholders. Running the plans is [`validate::validate`]'s job.
pub fn load(dir: &Path) -> Result<Suite, SuiteError> {
    let (meta, tools) = load_meta(dir)?;
    let vectors = load_vectors(dir)?;
    let env = load_env(dir, &vectors)?;
    let benign = env.benign();
    let user_tasks = load_user_tasks(dir, &tools, &benign)?;
    let injection_tasks = load_injection_tasks(dir, &tools, &benign, &user_tasks)?;
    let samples = samples::load(dir, &vectors, &user_tasks, &injection_tasks, &tools)?;
    let variants = load_variants(dir, &tools, &user_tasks, &injection_tasks)?;
    let defects_file = dir.join(defects::SUITE_FILE);
    let known_defects = defects::KnownDefects::read(&defects_file, &meta.name)
        .map_err(|e| SuiteError::at(&defects_file, None, None, e.to_string()))?;

    let mut suite = Suite {
        meta,
        dir: dir.to_path_buf(),
        tools,
        env,
        vectors,
        user_tasks,
        injection_tasks,
        samples,
        variants,
        injectable: BTreeMap::new(),
        data_only: Vec::new(),
        reorderings: std::sync::OnceLock::new(),
        sights: std::sync::OnceLock::new(),
        needs_memo: Default::default(),
        fingerprint: fingerprint(dir).map_err(|e| {
            SuiteError::at(
                dir,
                None,
                None,
                format!("cannot read the suite folder: {e}"),
            )
        })?,
        external: None,
        known_defects,
    };
    suite.injectable = suite
        .user_tasks
        .iter()
        .map(|t| (t.id.clone(), suite.vectors_read_by(&t.plan)))
        .collect();
    suite.data_only = data_only::derive(&suite);
    Ok(suite)
}

/// `suite.yaml`: the suite's description and the tools its domains give it.
fn load_meta(dir: &Path) -> Result<(SuiteMeta, Arc<ToolSet>), SuiteError> {
    let meta_path = dir.join("suite.yaml");
    let meta_doc = read_yaml(&meta_path, dir)?;
    let meta: SuiteMeta = serde_json::from_value(meta_doc)
        .map_err(|e| SuiteError::at(&meta_path, None, None, e.to_string()))?;
    crate::ids::check_name(&meta.name)
        .map_err(|why| SuiteError::at(&meta_path, None, Some("name"), why))?;
    crate::tools::check_date("date", &meta.date)
        .map_err(|e| SuiteError::at(&meta_path, None, Some("date"), e.message))?;
    let mut tools =
        toolset(&meta.domains).map_err(|e| SuiteError::at(&meta_path, None, Some("domains"), e))?;
    if let Some(keep) = &meta.tools {
        tools = tools
            .restrict(keep)
            .map_err(|e| SuiteError::at(&meta_path, None, Some("tools"), e))?;
    }
    Ok((meta, Arc::new(tools)))
}

/// `injection_vectors.yaml`: the injection points, each named once.
fn load_vectors(dir: &Path) -> Result<Vec<Vector>, SuiteError> {
    let vec_path = dir.join("injection_vectors.yaml");
    let vec_doc = read_yaml(&vec_path, dir)?;
    let vectors: Vec<Vector> =
        serde_json::from_value(vec_doc.get("vectors").cloned().unwrap_or(Value::Null))
            .map_err(|e| SuiteError::at(&vec_path, None, Some("vectors"), e.to_string()))?;

    let mut seen_vectors = std::collections::HashSet::new();
    for v in &vectors {
        crate::ids::check_name(v.id.as_str())
            .map_err(|why| SuiteError::at(&vec_path, None, Some("vectors"), why))?;
        if !seen_vectors.insert(v.id.as_str()) {
            return Err(SuiteError::at(
                &vec_path,
                None,
                Some("vectors"),
                format!("duplicate vector id `{}`", v.id),
            ));
        }
    }
    Ok(vectors)
}

/// `environment.yaml`: the initial state, with a placeholder for every vector and none
/// for anything else.
fn load_env(dir: &Path, vectors: &[Vector]) -> Result<EnvTemplate, SuiteError> {
    let env_path = dir.join("environment.yaml");
    let raw_env = read_yaml(&env_path, dir)?;
    let ids: Vec<VectorId> = vectors.iter().map(|v| v.id.clone()).collect();
    let defaults: Vec<String> = vectors.iter().map(|v| v.default.clone()).collect();
    EnvTemplate::new(raw_env, ids, &defaults).map_err(|errs| {
        let msgs: Vec<String> = errs
            .iter()
            .map(|e| match e {
                TemplateError::UnknownPlaceholder(p) => {
                    format!("placeholder `{{{p}}}` names no vector in injection_vectors.yaml")
                }
                TemplateError::UnusedVector(v) => {
                    format!("vector `{v}` from injection_vectors.yaml appears nowhere")
                }
            })
            .collect();
        SuiteError::at(&env_path, None, None, msgs.join("; "))
    })
}

/// `user_tasks.yaml`: each task's prompt, plan, answer and utility check, checked
/// against the tools and the benign environment.
fn load_user_tasks(
    dir: &Path,
    tools: &ToolSet,
    benign: &Value,
) -> Result<Vec<UserTask>, SuiteError> {
    let ut_path = dir.join("user_tasks.yaml");
    let (ut_doc, ut_scan) = read_yaml_located(&ut_path, dir)?;
    let mut user_tasks = Vec::new();
    for (i, (id, map)) in task_maps(&ut_path, &ut_doc)?.into_iter().enumerate() {
        reject_unknown(
            &ut_path,
            &id,
            map,
            &[
                "id", "prompt", "plan", "answer", "utility", "derived", "free", "comment",
            ],
        )?;
        let task = UserTask {
            id: TaskId(id.clone()),
            prompt: field(&ut_path, &id, map, "prompt", true)?.unwrap(),
            plan: field(&ut_path, &id, map, "plan", true)?.unwrap(),
            answer: field(&ut_path, &id, map, "answer", false)?,
            utility: field(&ut_path, &id, map, "utility", true)?.unwrap(),
            derived: field(&ut_path, &id, map, "derived", false)?.unwrap_or_default(),
            free: field(&ut_path, &id, map, "free", false)?.unwrap_or_default(),
        };
        check_free(&ut_path, &task, tools)?;
        let at = format!("tasks[{i}].prompt");
        check_sentence(&ut_path, &ut_scan, &at, &id, "prompt", &task.prompt)?;
        for key in task.derived.keys() {
            let known = key.split_once('.').is_some_and(|(step, arg)| {
                if step == "answer" {
                    return task.answer.as_deref().is_some_and(|a| a.contains(arg));
                }
                step.parse::<usize>()
                    .ok()
                    .and_then(|i| task.plan.get(i))
                    .is_some_and(|c| c.args.get(arg).is_some())
            });
            if !known {
                return Err(SuiteError::at(
                    &ut_path,
                    Some(&id),
                    Some("derived"),
                    format!(
                        "`{key}` names no argument of the plan and no value of the answer; write `<step>.<argument>` (steps counted from 0) or `answer.<value as the answer writes it>`"
                    ),
                ));
            }
        }
        check_plan(&ut_path, &id, &task.plan, tools)?;
        task.utility
            .validate(benign, tools)
            .map_err(|e| SuiteError::at(&ut_path, Some(&id), Some("utility"), e))?;
        user_tasks.push(task);
    }
    Ok(user_tasks)
}

/// A user task's `free` arguments: each names an argument of a write call of its plan and
/// says why the prompt does not fix it.
fn check_free(path: &Path, task: &UserTask, tools: &ToolSet) -> Result<(), SuiteError> {
    for (key, why) in &task.free {
        let field = format!("free.{key}");
        let call = key
            .split_once('.')
            .and_then(|(step, arg)| Some((step.parse::<usize>().ok()?, arg)))
            .and_then(|(step, arg)| Some((task.plan.get(step)?, arg)));
        let Some((call, arg)) = call else {
            return Err(SuiteError::at(
                path,
                Some(task.id.as_str()),
                Some(&field),
                "names no step of the plan; write `<step>.<argument>` (steps counted from 0)",
            ));
        };
        let writes = tools
            .get(call.tool.as_str())
            .is_some_and(|t| t.kind == crate::tools::ToolKind::Write);
        if !writes || call.args.get(arg).is_none() {
            return Err(SuiteError::at(
                path,
                Some(task.id.as_str()),
                Some(&field),
                format!(
                    "names no argument of a write call (step calls `{}`)",
                    call.tool
                ),
            ));
        }
        if why.trim().is_empty() {
            return Err(SuiteError::at(
                path,
                Some(task.id.as_str()),
                Some(&field),
                "a free argument needs a reason: say why the prompt does not fix it",
            ));
        }
    }
    Ok(())
}

/// `injection_tasks.yaml`: each attacker goal, plan, severity and security check,
/// checked against the tools, the benign environment and the user tasks it names.
fn load_injection_tasks(
    dir: &Path,
    tools: &ToolSet,
    benign: &Value,
    user_tasks: &[UserTask],
) -> Result<Vec<InjectionTask>, SuiteError> {
    let it_path = dir.join("injection_tasks.yaml");
    let (it_doc, it_scan) = read_yaml_located(&it_path, dir)?;
    let mut injection_tasks = Vec::new();
    for (i, (id, map)) in task_maps(&it_path, &it_doc)?.into_iter().enumerate() {
        reject_unknown(
            &it_path,
            &id,
            map,
            &[
                "id",
                "goal",
                "plan",
                "severity",
                "security",
                "tags",
                "comment",
                "designed_for",
            ],
        )?;
        let mut task = InjectionTask {
            id: TaskId(id.clone()),
            goal: field(&it_path, &id, map, "goal", true)?.unwrap(),
            plan: field(&it_path, &id, map, "plan", true)?.unwrap(),
            severity: field(&it_path, &id, map, "severity", true)?.unwrap(),
            security: field(&it_path, &id, map, "security", true)?.unwrap(),
            answer: field(&it_path, &id, map, "answer", false)?,
            tags: field(&it_path, &id, map, "tags", false)?.unwrap_or_default(),
            designed_for: field(&it_path, &id, map, "designed_for", false)?.unwrap_or_default(),
        };
        let at = format!("tasks[{i}].goal");
        check_sentence(&it_path, &it_scan, &at, &id, "goal", &task.goal)?;
        let own = attack_text(&task);
        task.security.bind_attack_text(&own);
        if let Some(bad) = task
            .designed_for
            .iter()
            .find(|u| !user_tasks.iter().any(|t: &UserTask| &t.id == *u))
        {
            return Err(SuiteError::at(
                &it_path,
                Some(&id),
                Some("designed_for"),
                format!("`{}` is not a user task of this suite", bad.0),
            ));
        }
        if task.tags.iter().any(|t| t == BYPASS_TAG) && task.designed_for.is_empty() {
            return Err(SuiteError::at(
                &it_path,
                Some(&id),
                Some("designed_for"),
                "a provenance_bypass task must name the user tasks it was designed for".to_string(),
            ));
        }
        if !(task.severity > 0.0 && task.severity <= 1.0) {
            return Err(SuiteError::at(
                &it_path,
                Some(&id),
                Some("severity"),
                format!("must be in (0, 1], got {}", task.severity),
            ));
        }
        check_plan(&it_path, &id, &task.plan, tools)?;
        task.security
            .validate(benign, tools)
            .map_err(|e| SuiteError::at(&it_path, Some(&id), Some("security"), e))?;
        injection_tasks.push(task);
    }
    Ok(injection_tasks)
}

/// `variants.yaml`, when the suite has one: behaviour other than the reference that the
/// checks must judge right.
fn load_variants(
    dir: &Path,
    tools: &ToolSet,
    user_tasks: &[UserTask],
    injection_tasks: &[InjectionTask],
) -> Result<variants::Variants, SuiteError> {
    let var_path = dir.join(variants::FILE);
    if var_path.is_file() {
        let doc = read_yaml(&var_path, dir)?;
        let v: variants::Variants = serde_json::from_value(doc)
            .map_err(|e| SuiteError::at(&var_path, None, None, e.to_string()))?;
        let uids: Vec<&str> = user_tasks.iter().map(|t| t.id.as_str()).collect();
        let iids: Vec<&str> = injection_tasks.iter().map(|t| t.id.as_str()).collect();
        v.check(&var_path, &uids, &iids, tools)?;
        Ok(v)
    } else {
        Ok(variants::Variants::default())
    }
}

/// The attacker's own words: an injection task's goal and every string its plan writes.
pub fn attack_text(t: &InjectionTask) -> String {
    fn strings(v: &Value, out: &mut String) {
        match v {
            Value::String(s) => {
                out.push('\n');
                out.push_str(s);
            }
            Value::Array(items) => items.iter().for_each(|i| strings(i, out)),
            Value::Object(m) => m.values().for_each(|i| strings(i, out)),
            _ => {}
        }
    }
    let mut out = t.goal.clone();
    for call in &t.plan {
        strings(&call.args, &mut out);
    }
    if let Some(a) = &t.answer {
        out.push('\n');
        out.push_str(a);
    }
    out
}

/// SHA-256 over the relative paths and contents of every file below `dir`, in sorted
/// order, so any edit to a suite's data changes it.
pub fn fingerprint(dir: &Path) -> std::io::Result<String> {
    use sha2::{Digest, Sha256};
    fn collect(base: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
        for e in std::fs::read_dir(dir)? {
            let p = e?.path();
            if p.is_dir() {
                collect(base, &p, out)?;
            } else {
                out.push(p.strip_prefix(base).expect("below base").to_path_buf());
            }
        }
        Ok(())
    }
    let mut files = Vec::new();
    collect(dir, dir, &mut files)?;
    files.sort();
    let mut h = Sha256::new();
    for f in files {
        h.update(f.to_string_lossy().as_bytes());
        h.update([0]);
        let path = dir.join(&f);
        let bytes = crate::bounded::read(&path, crate::bounded::MAX_INPUT_BYTES)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(&bytes);
    }
    Ok(crate::digest::hex(&h.finalize()[..8]))
}

/// A suite found on disk, before loading.
#[derive(Clone, Debug)]
pub struct SuiteRef {
    pub family: String,
    pub name: String,
    pub dir: PathBuf,
}

impl SuiteRef {
    pub fn qualified(&self) -> String {
        format!("{}/{}", self.family, self.name)
    }
}

/// Lists `root/<family>/<suite>/suite.yaml`, sorted.
pub fn discover(root: &Path) -> std::io::Result<Vec<SuiteRef>> {
    let mut out = Vec::new();
    for fam in std::fs::read_dir(root)? {
        let fam = fam?;
        if !fam.file_type()?.is_dir() {
            continue;
        }
        for s in std::fs::read_dir(fam.path())? {
            let s = s?;
            if s.path().join("suite.yaml").is_file() {
                out.push(SuiteRef {
                    family: fam.file_name().to_string_lossy().into_owned(),
                    name: s.file_name().to_string_lossy().into_owned(),
                    dir: s.path(),
                });
            }
        }
    }
    out.sort_by_key(|s| s.qualified());
    Ok(out)
}

/// Resolves a selector: `all`, a family (`dojo-style`), `family/suite`, or a bare suite
/// name (the first family's, alphabetically, when several have it); a comma-separated
/// list combines them.
pub fn select(root: &Path, selector: &str) -> Result<Vec<SuiteRef>, SelectError> {
    let found = discover(root).map_err(|source| SelectError::Read {
        root: root.to_path_buf(),
        source,
    })?;
    let mut out: Vec<SuiteRef> = Vec::new();
    for part in selector.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let mut matched: Vec<&SuiteRef> = found
            .iter()
            .filter(|s| part == "all" || s.family == part || s.qualified() == part)
            .collect();
        // A bare name that several families share (`banking`) means the first family's
        // suite in alphabetical order, so existing command lines keep their meaning;
        // `lure-style/banking` names the other.
        if matched.is_empty()
            && let Some(first) = found.iter().find(|s| s.name == part)
        {
            matched.push(first);
        }
        if matched.is_empty() {
            let names: Vec<String> = found.iter().map(SuiteRef::qualified).collect();
            let short: Vec<&str> = found.iter().map(|s| s.name.as_str()).collect();
            if names.is_empty() {
                return Err(SelectError::NoSuites {
                    part: part.to_string(),
                    root: root.to_path_buf(),
                });
            }
            return Err(SelectError::NoMatch {
                part: part.to_string(),
                root: root.to_path_buf(),
                hint: crate::suggest::did_you_mean(
                    part,
                    short
                        .iter()
                        .copied()
                        .chain(names.iter().map(String::as_str)),
                ),
                available: names.join(", "),
            });
        }
        for m in matched {
            if !out.iter().any(|o| o.dir == m.dir) {
                out.push(m.clone());
            }
        }
    }
    if out.is_empty() {
        return Err(SelectError::NothingSelected);
    }
    Ok(out)
}

/// Why a suite selector selects nothing: nothing was run.
#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    /// The suites directory could not be read (an I/O failure).
    #[error("cannot read suites directory {}: {source}", root.display())]
    Read {
        root: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The suites directory holds no suite at all.
    #[error(
        "no suite matches `{part}`: {} holds no suite (`<family>/<suite>/suite.yaml`)",
        root.display()
    )]
    NoSuites { part: String, root: PathBuf },
    /// A part of the selector names no suite (`hint`: a "did you mean" or nothing).
    #[error("no suite matches `{part}` in {}{hint}; available: all, {available}", root.display())]
    NoMatch {
        part: String,
        root: PathBuf,
        hint: String,
        available: String,
    },
    /// The selector is empty.
    #[error("no suite selected")]
    NothingSelected,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_s_failing_step_is_named_with_the_tool_s_reason() {
        let tools = toolset(&["banking".to_string()]).unwrap();
        let call = |tool: &str| -> PlannedCall {
            serde_json::from_value(serde_json::json!({"tool": tool, "args": {}})).unwrap()
        };
        let mut env = serde_json::json!({"bank_account": {"balance": 10.0}});
        let plan = [call("get_balance"), call("fly")];
        assert_eq!(run_plan(&tools, &mut env, &plan[..1]).step_failed(), None);
        let e = run_plan(&tools, &mut env, &plan)
            .step_failed()
            .expect("the second step fails");
        assert_eq!(
            e,
            StepFailed {
                step: 1,
                reason: "unknown tool `fly`".into()
            }
        );
        assert_eq!(e.to_string(), "step 1 fails: unknown tool `fly`");
        // A tool's own error is the reason, as the tool words it.
        let mut empty = serde_json::json!({});
        let e = run_plan(&tools, &mut empty, &plan).step_failed().unwrap();
        assert_eq!(
            e.to_string(),
            "step 0 fails: NotFoundError: the account has no balance"
        );
    }

    #[test]
    fn setting_leaves_out_what_the_suite_does_not_give() {
        let meta = |user: &str, date: &str| SuiteMeta {
            name: "s".into(),
            family: Family::External,
            domains: Vec::new(),
            user: user.into(),
            date: date.into(),
            description: String::new(),
            system_prompt: None,
            tools: None,
        };
        assert_eq!(
            meta("Emma Johnson", "2026-05-14").setting(),
            "The user is Emma Johnson and today is 2026-05-14."
        );
        assert_eq!(
            meta("Emma Johnson", "").setting(),
            "The user is Emma Johnson."
        );
        assert_eq!(meta("", "2026-05-14").setting(), "Today is 2026-05-14.");
        assert_eq!(meta(" ", "").setting(), "");
    }
}
