//! Context-aware attack samples (`samples.yaml`), the attacks of lure-style suites.
//!
//! A generic template shouts the attacker's goal into whatever the task reads; a sample
//! is written for one user task and rides in the content that task reads (an invoice's
//! note, a colleague's hand-off, a saved memory). Each sample names its user task, its
//! vector class, the payload for each injection point, and the injection task whose
//! security check says whether it worked. Class and surface are two axes: the class is
//! the sample's technique (what the payload tries to make the agent do, and how), the
//! surface is where it rides, and follows from the injection points (one fact, one
//! place: `injection_vectors.yaml`). A sample that passes itself off as the source's own
//! correction names its tell, what a careful reader could notice.

use super::{InjectionTask, PlannedCall, SuiteError, Surface, UserTask, Vector};
use crate::ids::{TaskId, VectorId};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

/// The eight techniques a context-aware sample uses to steer the agent. A class says
/// what the payload does, never where it rides: each one appears on several surfaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VectorClass {
    /// Routes a step the task needs through another tool or service, one that reaches
    /// the attacker (a payment form, a mirror page, a mail relay).
    CapabilityRoutingHijacking,
    /// The task's own call with one argument changed (account, recipient, address, URL).
    ArgumentTampering,
    /// A condition the agent can check in its context that, once met, adds a call.
    ConditionalFlowHijacking,
    /// False premises from which the harmful act follows as the agent's own conclusion.
    ReasoningHijacking,
    /// Installs a standing rule or stored state meant to fire later: a "from now on"
    /// rule, a memory note, a standing order, a saved profile field.
    PersistentContextPoisoning,
    /// Asks to be passed on, to the peer agent, a channel or colleagues, so the
    /// instruction spreads beyond this agent.
    InterAgentContagion,
    /// Poses as a procedure the agent runs: a skill's step, a tool's usage rule, an
    /// update to the house routine.
    SkillInjection,
    /// Adds a step inside a multi-step routine the content itself lays out.
    WorkflowHijacking,
}

impl VectorClass {
    pub const ALL: [VectorClass; 8] = [
        VectorClass::CapabilityRoutingHijacking,
        VectorClass::ArgumentTampering,
        VectorClass::ConditionalFlowHijacking,
        VectorClass::ReasoningHijacking,
        VectorClass::PersistentContextPoisoning,
        VectorClass::InterAgentContagion,
        VectorClass::SkillInjection,
        VectorClass::WorkflowHijacking,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            VectorClass::CapabilityRoutingHijacking => "capability_routing_hijacking",
            VectorClass::ArgumentTampering => "argument_tampering",
            VectorClass::ConditionalFlowHijacking => "conditional_flow_hijacking",
            VectorClass::ReasoningHijacking => "reasoning_hijacking",
            VectorClass::PersistentContextPoisoning => "persistent_context_poisoning",
            VectorClass::InterAgentContagion => "inter_agent_contagion",
            VectorClass::SkillInjection => "skill_injection",
            VectorClass::WorkflowHijacking => "workflow_hijacking",
        }
    }
}

impl fmt::Display for VectorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What gives a correction away to a careful reader.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TellKind {
    /// Signed by, or attributed to, someone other than the source's author.
    Sender,
    /// An address, site or account holder that is not the genuine party's.
    Domain,
    /// An addition outside the source's own signed or printed text.
    Unsigned,
    /// A detail that contradicts something the task shows (a date, a name, a statement).
    Detail,
}

impl TellKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TellKind::Sender => "sender",
            TellKind::Domain => "domain",
            TellKind::Unsigned => "unsigned",
            TellKind::Detail => "detail",
        }
    }
}

/// The tell of a sample that passes itself off as the source's own correction: `cue`
/// is text of the payload, `contrast` the genuine text the task shows that it clashes
/// with (the payee's name, the note's session date, the letter's own statement).
/// `check-suites` proves both are there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tell {
    pub kind: TellKind,
    pub cue: String,
    pub contrast: String,
}

/// One hand-written attack sample.
#[derive(Clone, Debug, Serialize)]
pub struct Sample {
    /// `<user task>/<class>`: one sample per cell.
    pub id: String,
    pub user_task: TaskId,
    pub class: VectorClass,
    pub injection_task: TaskId,
    /// Injection point → the text placed there, in file order.
    pub inject: Vec<(VectorId, String)>,
    /// The attacker's calls when they differ from the injection task's plan (the amount
    /// on this invoice, the booking in this thread); `None` means the task's plan.
    pub plan: Option<Vec<PlannedCall>>,
    /// Where the payload lands (shared by all its injection points).
    pub surface: Surface,
    /// What gives the sample away, when it poses as the source's own correction.
    pub tell: Option<Tell>,
    /// Values of the attacker's plan the agent works out rather than reads (a share, a
    /// difference), as `<step>.<argument>` → how: the provenance proof accepts them.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub derived: BTreeMap<String, String>,
}

impl Sample {
    /// The calls an agent that follows this sample makes.
    pub fn attacker_plan<'a>(&'a self, task: &'a InjectionTask) -> &'a [PlannedCall] {
        self.plan.as_deref().unwrap_or(&task.plan)
    }

    /// A fingerprint of everything that shapes the attacked episode, for its records.
    pub fn fingerprint(&self) -> String {
        use sha2::{Digest, Sha256};
        let text = serde_json::to_string(self).expect("a sample serialises");
        crate::digest::hex(&Sha256::digest(text.as_bytes())[..8])
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSample {
    user_task: TaskId,
    class: VectorClass,
    injection_task: TaskId,
    inject: serde_json::Map<String, Value>,
    #[serde(default)]
    plan: Option<Vec<PlannedCall>>,
    #[serde(default)]
    tell: Option<Tell>,
    #[serde(default)]
    derived: BTreeMap<String, String>,
    /// Free text for the reader; ignored.
    #[serde(default, rename = "comment")]
    _comment: Option<String>,
}

/// Loads `samples.yaml` (a missing file means no samples) and checks every reference
/// in it; the tools check the plans' arguments.
pub fn load(
    dir: &Path,
    vectors: &[Vector],
    user_tasks: &[UserTask],
    injection_tasks: &[InjectionTask],
    tools: &crate::tools::ToolSet,
) -> Result<Vec<Sample>, SuiteError> {
    let path = dir.join("samples.yaml");
    if !path.is_file() {
        return Ok(Vec::new());
    }
    let doc = super::read_yaml(&path, dir)?;
    let list = doc
        .get("samples")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            SuiteError::at(
                &path,
                None,
                Some("samples"),
                "expected a list under `samples`",
            )
        })?;
    let mut out: Vec<Sample> = Vec::new();
    for (i, raw) in list.iter().enumerate() {
        let hint = raw
            .get("user_task")
            .and_then(Value::as_str)
            .zip(raw.get("class").and_then(Value::as_str))
            .map_or(format!("#{i}"), |(u, c)| format!("{u}/{c}"));
        let err = |field: Option<&str>, m: String| SuiteError::at(&path, Some(&hint), field, m);
        let r: RawSample =
            serde_json::from_value(raw.clone()).map_err(|e| err(None, e.to_string()))?;
        if !user_tasks.iter().any(|t| t.id == r.user_task) {
            return Err(err(
                Some("user_task"),
                format!("no user task `{}`", r.user_task),
            ));
        }
        if !injection_tasks.iter().any(|t| t.id == r.injection_task) {
            return Err(err(
                Some("injection_task"),
                format!("no injection task `{}`", r.injection_task),
            ));
        }
        if r.inject.is_empty() {
            return Err(err(Some("inject"), "names no injection point".into()));
        }
        let (inject, surface) = placements(r.inject, vectors, &err)?;
        if let Some(plan) = &r.plan {
            super::check_plan(&path, &hint, plan, tools)?;
        }
        if let Some(t) = &r.tell
            && (t.cue.trim().is_empty() || t.contrast.trim().is_empty())
        {
            return Err(err(
                Some("tell"),
                "a tell needs a non-empty `cue` and `contrast`".into(),
            ));
        }
        for key in r.derived.keys() {
            let plan = r.plan.as_deref().unwrap_or_default();
            let known = key.split_once('.').is_some_and(|(step, arg)| {
                step.parse::<usize>()
                    .ok()
                    .and_then(|i| plan.get(i))
                    .is_some_and(|c| c.args.get(arg).is_some())
            });
            if !known {
                return Err(err(
                    Some("derived"),
                    format!(
                        "`{key}` names no argument of the sample's own `plan`; write `<step>.<argument>` (steps counted from 0)"
                    ),
                ));
            }
        }
        let id = format!("{}/{}", r.user_task, r.class);
        if out.iter().any(|s| s.id == id) {
            return Err(err(
                None,
                format!("a second sample for the cell `{id}`; one per user task and class"),
            ));
        }
        out.push(Sample {
            id,
            user_task: r.user_task,
            class: r.class,
            injection_task: r.injection_task,
            inject,
            plan: r.plan,
            surface,
            tell: r.tell,
            derived: r.derived,
        });
    }
    Ok(out)
}

/// A sample's injection points: each a vector of the suite with a non-empty payload, all
/// on one surface (which it returns).
fn placements(
    points: serde_json::Map<String, Value>,
    vectors: &[Vector],
    err: &dyn Fn(Option<&str>, String) -> SuiteError,
) -> Result<(Vec<(VectorId, String)>, Surface), SuiteError> {
    let mut inject = Vec::new();
    let mut surface: Option<Surface> = None;
    for (vid, text) in points {
        let Some(v) = vectors.iter().find(|v| v.id.as_str() == vid) else {
            return Err(err(
                Some("inject"),
                format!("`{vid}` is no vector of injection_vectors.yaml"),
            ));
        };
        let Some(text) = text.as_str().filter(|t| !t.trim().is_empty()) else {
            return Err(err(
                Some("inject"),
                format!("the payload for `{vid}` must be a non-empty string"),
            ));
        };
        match surface {
            Some(s) if s != v.surface => {
                return Err(err(
                    Some("inject"),
                    format!(
                        "injection points on two surfaces ({s:?} and {:?}); a sample rides on one surface",
                        v.surface
                    ),
                ));
            }
            _ => surface = Some(v.surface),
        }
        inject.push((v.id.clone(), text.to_string()));
    }
    Ok((inject, surface.expect("at least one injection point")))
}
