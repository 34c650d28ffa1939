//! External suites: tasks, tools and checks that live in another process, reached
//! through the JSON-lines protocol of docs/external-suites.md. A suite served this way
//! becomes an ordinary [`Suite`] (tools by schema, tasks with reference plans) whose
//! episodes run in a leased provider process ([`world::ExternalWorld`]), so the agent
//! loop, defenses, scripted agents, records and reports work on it unchanged.
//!
//! A provider is declared by `suites/external/<package>.toml`; its suites are named by the
//! harness `<package>@<version>/<suite>` from that file's name, e.g.
//! `agentdojo@v1.2.2/banking`: a provider lists versions and suites under its own package
//! only, so it can never pass for another package's suites. What a provider describes is
//! checked as a data suite is (unique ids, plans naming its tools with their required
//! arguments, ids without control characters).

pub mod data_only;
pub mod pool;
pub mod process;
pub mod protocol;

use crate::ids::{TaskId, ToolName, VectorId};
use crate::suite::check::Check;
use crate::suite::env::EnvTemplate;
use crate::suite::{
    Family, InjectionTask, PlannedCall, Suite, SuiteMeta, Surface, UserTask, Vector,
};
use crate::tools::{Tool, ToolKind, ToolSet};
use pool::Pool;
use process::Launch;
use protocol::{Description, Hello, Listing, Request};
use serde::Deserialize;
use serde_json::Value;
use sieve_record::ErrorConvention;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// What can go wrong with a provider. Every variant but `Spec` fails only the episode
/// (or the suite load) it happened in.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ExternalError {
    #[error("{file}: {message}")]
    Spec { file: PathBuf, message: String },
    #[error("cannot start the suite provider `{program}`: {message}")]
    Spawn { program: String, message: String },
    #[error("the suite provider speaks protocol version {theirs}; this build speaks {ours}")]
    Version { theirs: u32, ours: u32 },
    /// The process crashed, hung or sent a malformed line; it was discarded.
    #[error("suite provider failed: {0}")]
    Broken(String),
    /// The provider answered `ok: false`.
    #[error("suite provider refused `{op}`: {message}")]
    Refused { op: String, message: String },
}

/// `suites/external/<package>.toml`: how to start the provider of one package's suites.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderSpec {
    /// The package part of the suite names this provider serves.
    pub package: String,
    /// Program and arguments; relative paths are relative to the project home (the
    /// suites folder's parent), which is also the working directory.
    pub command: Vec<String>,
    /// An environment variable that, when set, replaces the program (e.g. a venv's python).
    #[serde(default)]
    pub program_env: Option<String>,
    /// What to run when the provider cannot start (shown in the error).
    #[serde(default)]
    pub setup: Option<String>,
    /// The longest one reply may take before the process counts as hung.
    #[serde(default = "default_timeout")]
    pub timeout_secs: f64,
    /// The longest reply line, in MiB (1 to 1024); a longer one fails its episode.
    #[serde(default = "default_max_reply_mb")]
    pub max_reply_mb: u64,
    /// How the served suites' rows count errored episodes unless `--errors-as` names
    /// one convention: `excluded` (the default) or `agentdojo`, which only AgentDojo's
    /// own adapter declares.
    #[serde(default)]
    pub error_convention: ErrorConvention,
    /// Further files the provider reads (modules its script imports), relative to the
    /// project home: like the command's own files, their bytes are part of every served
    /// suite's fingerprint, since changing them can change outcomes.
    #[serde(default)]
    pub files: Vec<String>,
}

fn default_timeout() -> f64 {
    300.0
}

fn default_max_reply_mb() -> u64 {
    (crate::child::DEFAULT_MAX_REPLY >> 20) as u64
}

/// The longest `timeout_secs` (a day).
const MAX_TIMEOUT_SECS: f64 = 86_400.0;

/// A provider ready to serve: its spec and its process pool.
pub struct Provider {
    pub spec: ProviderSpec,
    pub file: PathBuf,
    pub pool: Arc<Pool>,
    /// The files of the command that exist (the adapter script): their bytes are part of
    /// every served suite's fingerprint.
    command_files: Vec<PathBuf>,
    /// The suites folder, where the package's known-defects files are.
    suites_dir: PathBuf,
}

impl Provider {
    /// Reads `<suites>/external/<package>.toml`.
    pub fn open(suites_dir: &Path, package: &str) -> Result<Provider, ExternalError> {
        let dir = suites_dir.join("external");
        let file = dir.join(format!("{package}.toml"));
        let spec_error = |message: String| ExternalError::Spec {
            file: file.clone(),
            message,
        };
        let text = std::fs::read_to_string(&file).map_err(|e| {
            let known = known_packages(suites_dir);
            spec_error(format!(
                "cannot read the provider of `{package}` ({e}); known providers: {}",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ))
        })?;
        let spec: ProviderSpec =
            toml::from_str(&text).map_err(|e| spec_error(format!("invalid provider file: {e}")))?;
        if spec.package != package {
            return Err(spec_error(format!(
                "field `package` is `{}` but the file is named for `{package}`",
                spec.package
            )));
        }
        let Some((program, args)) = spec.command.split_first() else {
            return Err(spec_error("field `command` is empty".into()));
        };
        if !(spec.timeout_secs > 0.0 && spec.timeout_secs <= MAX_TIMEOUT_SECS) {
            return Err(spec_error(format!(
                "field `timeout_secs`: must be a number of seconds in (0, {MAX_TIMEOUT_SECS}], got {}",
                spec.timeout_secs
            )));
        }
        if !(1..=1024).contains(&spec.max_reply_mb) {
            return Err(spec_error(format!(
                "field `max_reply_mb`: must be 1 to 1024, got {}",
                spec.max_reply_mb
            )));
        }
        let home = suites_dir
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        let program = match spec
            .program_env
            .as_deref()
            .and_then(|v| std::env::var(v).ok())
        {
            Some(p) if !p.is_empty() => PathBuf::from(p),
            _ => resolve(&home, program),
        };
        let mut command_files: Vec<PathBuf> = args
            .iter()
            .map(|a| resolve(&home, a))
            .filter(|p| p.is_file())
            .collect();
        for f in &spec.files {
            let path = home.join(f);
            if !path.is_file() {
                return Err(spec_error(format!(
                    "field `files`: `{f}` is not a file (looked for {})",
                    path.display()
                )));
            }
            command_files.push(path);
        }
        let launch = Launch {
            program,
            args: args.to_vec(),
            dir: home,
            timeout: Duration::from_secs_f64(spec.timeout_secs),
            max_reply: (spec.max_reply_mb as usize) << 20,
        };
        Ok(Provider {
            pool: Pool::new(launch, 1),
            spec,
            file,
            command_files,
            suites_dir: suites_dir.to_path_buf(),
        })
    }

    /// Adds the setup hint to errors that mean "the provider cannot run here".
    fn explain(&self, e: ExternalError) -> ExternalError {
        let hint = |m: String| match &self.spec.setup {
            Some(s) => format!("{m}\n  to install what it needs, run: {s}"),
            None => m,
        };
        match e {
            ExternalError::Spawn { program, message } => ExternalError::Spawn {
                program,
                message: hint(message),
            },
            ExternalError::Refused { op, message } if op == "hello" => ExternalError::Refused {
                op,
                message: hint(message),
            },
            ExternalError::Broken(m) => ExternalError::Broken(hint(m)),
            other => other,
        }
    }

    /// The qualified names of every suite the provider serves: each listed name must be
    /// `<package>@<version>/<suite>` with this file's package, and is rebuilt here from
    /// its parts.
    pub async fn list(&self) -> Result<Vec<String>, ExternalError> {
        let listing: Listing = self
            .pool
            .ask(&Request::List)
            .await
            .map_err(|e| self.explain(e))?;
        let mut out: Vec<String> = Vec::new();
        for listed in &listing.suites {
            let name =
                qualified(&self.spec.package, listed).map_err(|why| ExternalError::Refused {
                    op: "list".into(),
                    message: format!("`{}`: {why}", crate::escape::terminal_cell(listed)),
                })?;
            if out.contains(&name) {
                return Err(ExternalError::Refused {
                    op: "list".into(),
                    message: format!("`{name}` is listed twice"),
                });
            }
            out.push(name);
        }
        Ok(out)
    }

    /// Loads one suite from the provider; `qualified` is one of [`list`](Self::list)'s.
    pub async fn load(&self, qualified: &str) -> Result<Suite, ExternalError> {
        let mut lease = self.pool.lease().await.map_err(|e| self.explain(e))?;
        let hello = lease.hello().clone();
        let desc: Description = lease
            .request(&Request::Describe { suite: qualified })
            .await?;
        drop(lease);
        let refused = |message: String| ExternalError::Refused {
            op: "describe".into(),
            message: format!("`{qualified}`: {message}"),
        };
        if desc.suite != qualified {
            return Err(refused(format!(
                "the provider describes it as `{}`; a suite's name is the harness's (`<package>@<version>/<suite>` from {})",
                crate::escape::terminal_cell(&desc.suite),
                self.file.display()
            )));
        }
        let mut files = Vec::new();
        for f in &self.command_files {
            files.push(std::fs::read(f).map_err(|e| ExternalError::Spec {
                file: f.clone(),
                message: format!("cannot read: {e}"),
            })?);
        }
        let (family, name) = qualified.split_once('/').expect("a qualified name");
        let version = family.split_once('@').map_or("", |(_, v)| v);
        let defects_file =
            crate::suite::defects::external_file(&self.suites_dir, &self.spec.package, version);
        let known_defects = crate::suite::defects::KnownDefects::read(&defects_file, name)
            .map_err(|e| ExternalError::Spec {
                file: defects_file.clone(),
                message: e.to_string(),
            })?;
        let origin = Origin {
            qualified: qualified.to_string(),
            error_convention: self.spec.error_convention,
            known_defects,
        };
        build_suite(self.pool.clone(), hello, desc, &files, origin)
            .map_err(|e| refused(e.to_string()))
    }
}

/// A name a provider lists, rebuilt as `<package>@<version>/<suite>` when it is one of
/// `package`'s, with a version and a suite name of letters, digits, `.`, `_` and `-`.
pub fn qualified(package: &str, listed: &str) -> Result<String, DescriptionError> {
    let token = |s: &str| {
        !s.is_empty()
            && s.len() <= 64
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    };
    let (family, suite) = listed
        .split_once('/')
        .ok_or(DescriptionError::NotQualified)?;
    let (pkg, version) = family
        .split_once('@')
        .ok_or(DescriptionError::NotQualified)?;
    if pkg != package {
        return Err(DescriptionError::OtherPackage(package.to_string()));
    }
    if !token(version) || !token(suite) {
        return Err(DescriptionError::BadToken);
    }
    Ok(format!("{package}@{version}/{suite}"))
}

fn resolve(home: &Path, p: &str) -> PathBuf {
    let path = Path::new(p);
    if path.is_absolute() || !p.contains('/') {
        // A bare name (`python3`) is looked up on PATH.
        path.to_path_buf()
    } else {
        home.join(path)
    }
}

/// The packages with a provider file, sorted.
pub fn known_packages(suites_dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(suites_dir.join("external"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".toml").map(str::to_string)
        })
        .collect();
    out.sort();
    out
}

/// Whether a suite selector part names external suites (`package@version[/suite]`).
pub fn is_external_selector(part: &str) -> bool {
    part.split('/').next().is_some_and(|f| f.contains('@'))
}

/// The package of an external selector part.
pub fn package_of(part: &str) -> &str {
    part.split('@').next().unwrap_or(part)
}

/// What the harness knows of a suite that lives in a provider.
#[derive(Clone)]
pub struct ExternalSuite {
    /// `package@version/suite`.
    pub qualified: String,
    pub pool: Arc<Pool>,
    pub hello: Hello,
    /// The suite's own system prompt, used instead of the harness's.
    pub system_prompt: Option<String>,
    /// Attacks the provider renders itself.
    pub attacks: Vec<String>,
    /// Those of `attacks` that are denial of service: run once per user task and scored
    /// by the utility they take away.
    pub dos_attacks: Vec<String>,
    /// From the provider file: how the suite's rows count errored episodes.
    pub error_convention: ErrorConvention,
    /// The tools as described, to check the plans `start` recomputes.
    pub tools: Vec<protocol::ToolDesc>,
    /// Which calls reach the package's trace (`--trace`).
    pub trace: protocol::TraceMode,
}

impl ExternalSuite {
    /// The package's name, version and origin, as labels show them.
    pub fn package_label(&self) -> String {
        let h = &self.hello;
        match &h.package_origin {
            Some(o) => format!("{} {} ({})", h.package, h.package_version, o.label()),
            None => format!("{} {}", h.package, h.package_version),
        }
    }
}

/// Why a suite cannot run with the trace mode asked for.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "--trace {mode}: the provider of `{suite}` ({provider}) does not offer it; it keeps the package's own trace only"
)]
pub struct TraceUnsupported {
    pub suite: String,
    pub provider: String,
    pub mode: &'static str,
}

/// `suite` with its provider's trace kept as `mode`: the same suite under another
/// fingerprint when the mode is not the package's own (records of the two never mix).
/// A data suite has no package trace: it is returned as it is.
pub fn with_trace(mut suite: Suite, mode: protocol::TraceMode) -> Result<Suite, TraceUnsupported> {
    let Some(served) = served(&suite) else {
        return Ok(suite);
    };
    if mode == served.trace {
        return Ok(suite);
    }
    if mode != protocol::TraceMode::All && !served.hello.traces.contains(&mode) {
        return Err(TraceUnsupported {
            suite: served.qualified.clone(),
            provider: served.hello.provider.clone(),
            mode: mode.as_str(),
        });
    }
    let mut changed = served.clone();
    changed.trace = mode;
    if mode != protocol::TraceMode::All {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(suite.fingerprint.as_bytes());
        h.update(b"\0trace:");
        h.update(mode.as_str().as_bytes());
        suite.fingerprint = crate::digest::hex(&h.finalize()[..8]);
    }
    suite.external = Some(Arc::new(changed));
    Ok(suite)
}

impl crate::suite::Served for ExternalSuite {
    fn qualified(&self) -> &str {
        &self.qualified
    }
    fn system_prompt(&self) -> Option<&str> {
        self.system_prompt.as_deref()
    }
    fn error_convention(&self) -> ErrorConvention {
        self.error_convention
    }
}

/// The provider side of a suite served by one; `None` for a data suite.
pub fn served(suite: &Suite) -> Option<&ExternalSuite> {
    let served: &dyn std::any::Any = suite.external.as_deref()?;
    served.downcast_ref()
}

/// What the harness decides about a described suite, not the provider: its name, its
/// error convention and its known defects.
pub struct Origin {
    pub qualified: String,
    pub error_convention: ErrorConvention,
    pub known_defects: crate::suite::defects::KnownDefects,
}

impl fmt::Debug for ExternalSuite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExternalSuite")
            .field("qualified", &self.qualified)
            .field("hello", &self.hello)
            .finish()
    }
}

pub fn plan_of(calls: &[protocol::CallDesc]) -> Vec<PlannedCall> {
    calls
        .iter()
        .map(|c| PlannedCall {
            tool: ToolName(c.tool.clone()),
            args: if c.args.is_null() {
                Value::Object(Default::default())
            } else {
                c.args.clone()
            },
        })
        .collect()
}

/// Default risk of a provider's tools when it names none: writes are where harm is done.
fn default_risk(kind: ToolKind) -> f64 {
    match kind {
        ToolKind::Read => 0.1,
        ToolKind::Write => 0.7,
    }
}

/// A name the harness puts in keys, tables and messages ([`crate::ids::check_name`]).
fn check_name(what: &str, name: &str) -> Result<(), DescriptionError> {
    crate::ids::check_name(name).map_err(|why| DescriptionError::Name {
        what: what.to_string(),
        why,
    })
}

/// What a provider's listing or description gets wrong, checked as a data suite's files
/// are; the provider's error (`ExternalError::Refused`) adds the operation and the suite.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DescriptionError {
    #[error("not `<package>@<version>/<suite>`")]
    NotQualified,
    #[error("the provider of `{0}` may serve `{0}@<version>/<suite>` only")]
    OtherPackage(String),
    #[error("a version and a suite name are letters, digits, `.`, `_` and `-` (at most 64)")]
    BadToken,
    /// A name the harness cannot put in keys and tables.
    #[error("{what}: {why}")]
    Name {
        what: String,
        why: crate::ids::NameError,
    },
    #[error("{what} `{name}` is described twice")]
    Twice { what: String, name: String },
    /// A field of a tool, task or plan (`at` names it) out of range or naming nothing.
    #[error("{at}: {problem}")]
    Field { at: String, problem: String },
}

/// Checks a plan as a data suite's is checked: each call names a described tool, its
/// arguments are an object with every parameter the tool's schema requires, and none it
/// does not declare.
pub fn check_plan(
    tools: &[protocol::ToolDesc],
    where_: &str,
    plan: &[protocol::CallDesc],
) -> Result<(), DescriptionError> {
    for (i, c) in plan.iter().enumerate() {
        let field = |problem: String| DescriptionError::Field {
            at: format!("{where_}: field `plan[{i}]`"),
            problem,
        };
        let Some(tool) = tools.iter().find(|t| t.name == c.tool) else {
            return Err(field(format!(
                "unknown tool `{}`",
                crate::escape::terminal_cell(&c.tool)
            )));
        };
        let args = match &c.args {
            Value::Null => &serde_json::Map::new(),
            Value::Object(m) => m,
            _ => return Err(field("`args` must be an object".into())),
        };
        let params = &tool.parameters;
        if let Some(required) = params.get("required").and_then(Value::as_array) {
            for r in required.iter().filter_map(Value::as_str) {
                if !args.contains_key(r) {
                    return Err(field(format!("`{}` lacks required argument `{r}`", c.tool)));
                }
            }
        }
        if let Some(props) = params.get("properties").and_then(Value::as_object)
            && let Some(extra) = args.keys().find(|k| !props.contains_key(*k))
        {
            return Err(field(format!(
                "`{}` has no parameter `{}`",
                c.tool,
                crate::escape::terminal_cell(extra)
            )));
        }
    }
    Ok(())
}

/// What the harness relies on in a description, checked as a data suite's: unique
/// tools, vectors and task ids, usable names, plans that fit their tools, rates in range.
fn check_description(desc: &Description) -> Result<(), DescriptionError> {
    let unique =
        |what: &str, names: &mut dyn Iterator<Item = &String>| -> Result<(), DescriptionError> {
            let mut seen = std::collections::BTreeSet::new();
            for n in names {
                check_name(what, n)?;
                if !seen.insert(n) {
                    return Err(DescriptionError::Twice {
                        what: what.to_string(),
                        name: n.clone(),
                    });
                }
            }
            Ok(())
        };
    unique("tool", &mut desc.tools.iter().map(|t| &t.name))?;
    unique("vector", &mut desc.vectors.iter().map(|v| &v.id))?;
    unique("user task", &mut desc.user_tasks.iter().map(|t| &t.id))?;
    unique(
        "injection task",
        &mut desc.injection_tasks.iter().map(|t| &t.id),
    )?;
    unique("attack", &mut desc.attacks.iter())?;
    for t in &desc.tools {
        if let Some(r) = t.risk
            && !(0.0..=1.0).contains(&r)
        {
            return Err(DescriptionError::Field {
                at: format!("tool `{}`: field `risk`", t.name),
                problem: format!("must be in [0, 1], got {r}"),
            });
        }
    }
    for t in &desc.user_tasks {
        check_plan(&desc.tools, &format!("user task `{}`", t.id), &t.plan)?;
        for v in &t.vectors {
            if !desc.vectors.iter().any(|x| &x.id == v) {
                return Err(DescriptionError::Field {
                    at: format!("user task `{}`: field `vectors`", t.id),
                    problem: format!("unknown vector `{}`", crate::escape::terminal_cell(v)),
                });
            }
        }
    }
    for t in &desc.injection_tasks {
        check_plan(&desc.tools, &format!("injection task `{}`", t.id), &t.plan)?;
        let severity = t.severity.unwrap_or(1.0);
        if !(severity > 0.0 && severity <= 1.0) {
            return Err(DescriptionError::Field {
                at: format!("injection task `{}`: field `severity`", t.id),
                problem: format!("must be in (0, 1], got {severity}"),
            });
        }
    }
    Ok(())
}

/// A described suite's fingerprint: what the provider said of itself and of the suite,
/// the files its command runs, and a convention other than the default.
fn fingerprint_of(
    hello: &Hello,
    desc: &Description,
    command_files: &[Vec<u8>],
    error_convention: ErrorConvention,
) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(serde_json::to_vec(hello).expect("serialises"));
    h.update(serde_json::to_vec(desc).expect("serialises"));
    for f in command_files {
        h.update((f.len() as u64).to_le_bytes());
        h.update(f);
    }
    if !error_convention.is_default() {
        // Records of the suite count errors this way: another convention is another suite.
        h.update(serde_json::to_vec(&error_convention).expect("serialises"));
    }
    crate::digest::hex(&h.finalize()[..8])
}

/// The tools a provider describes, with its kind and risk, or the defaults.
fn tools_of(desc: &Description) -> ToolSet {
    ToolSet::from_tools(desc.tools.iter().map(|t| {
        let kind = t.kind.unwrap_or(ToolKind::Write);
        Tool::external(
            &t.name,
            &t.description,
            t.parameters.clone(),
            kind,
            t.risk.unwrap_or_else(|| default_risk(kind)),
        )
        .replacing(t.replaces)
    }))
}

/// Turns a description into a suite, checking what the harness relies on.
pub fn build_suite(
    pool: Arc<Pool>,
    hello: Hello,
    desc: Description,
    command_files: &[Vec<u8>],
    origin: Origin,
) -> Result<Suite, DescriptionError> {
    check_description(&desc)?;
    let fingerprint = fingerprint_of(&hello, &desc, command_files, origin.error_convention);

    let (_, name) = origin
        .qualified
        .split_once('/')
        .expect("a qualified name of the harness's");
    let tools = tools_of(&desc);
    let vectors: Vec<Vector> = desc
        .vectors
        .iter()
        .map(|v| Vector {
            id: VectorId(v.id.clone()),
            description: v.description.clone(),
            surface: Surface::ToolOutput,
            default: v.default.clone(),
        })
        .collect();
    let mut injectable = BTreeMap::new();
    let mut user_tasks = Vec::new();
    for t in &desc.user_tasks {
        let plan = plan_of(&t.plan);
        injectable.insert(
            TaskId(t.id.clone()),
            t.vectors.iter().map(|v| VectorId(v.clone())).collect(),
        );
        user_tasks.push(UserTask {
            id: TaskId(t.id.clone()),
            prompt: t.prompt.clone(),
            plan,
            answer: t.answer.clone(),
            utility: Check::External,
            // The provider computes the task's reference plan itself.
            derived: BTreeMap::new(),
            free: BTreeMap::new(),
        });
    }
    let mut injection_tasks = Vec::new();
    for t in &desc.injection_tasks {
        let plan = plan_of(&t.plan);
        let severity = t.severity.unwrap_or(1.0);
        injection_tasks.push(InjectionTask {
            id: TaskId(t.id.clone()),
            goal: t.goal.clone(),
            plan,
            severity,
            security: Check::External,
            answer: t.answer.clone(),
            tags: t.tags.clone(),
            // The protocol names no defense-specific pairs.
            designed_for: Vec::new(),
        });
    }
    if let Some(a) = desc.dos_attacks.iter().find(|a| !desc.attacks.contains(a)) {
        return Err(DescriptionError::Field {
            at: "field `dos_attacks`".into(),
            problem: format!("`{a}` is not one of the suite's `attacks`"),
        });
    }
    let meta = SuiteMeta {
        name: name.to_string(),
        family: Family::External,
        domains: Vec::new(),
        user: desc.user.clone().unwrap_or_else(|| "the user".into()),
        date: String::new(),
        description: format!(
            "served by {} ({} {}) over the external-suite protocol",
            hello.provider, hello.package, hello.package_version
        ),
        system_prompt: None,
        tools: None,
    };
    let external = ExternalSuite {
        qualified: origin.qualified.clone(),
        pool,
        hello,
        system_prompt: desc.system_prompt.clone(),
        attacks: desc.attacks.clone(),
        dos_attacks: desc.dos_attacks.clone(),
        error_convention: origin.error_convention,
        tools: desc.tools.clone(),
        trace: protocol::TraceMode::All,
    };
    Ok(Suite {
        meta,
        dir: PathBuf::from(&origin.qualified),
        tools: Arc::new(tools),
        env: EnvTemplate::new(Value::Object(Default::default()), Vec::new(), &[])
            .expect("an empty template has no placeholders"),
        vectors,
        user_tasks,
        injection_tasks,
        injectable,
        // A provider's environment lives in its process: its data-only attacks are derived
        // by replaying the plans there, only when a run asks for them ([`data_only`]).
        data_only: Vec::new(),
        // A provider's environment lives in its process: its plans are not replayed here.
        reorderings: std::sync::OnceLock::from(std::collections::BTreeMap::new()),
        sights: std::sync::OnceLock::from(crate::suite::sight::Sights::default()),
        needs_memo: Default::default(),
        fingerprint,
        // Context samples and variant corpora are data-suite files; a provider has none.
        samples: Vec::new(),
        variants: Default::default(),
        external: Some(Arc::new(external)),
        known_defects: origin.known_defects,
    })
}
