//! Context-aware attack samples (`samples.yaml`), the attacks of lure-style suites.
//!
//! A generic template shouts the attacker's goal into whatever the task reads; a sample
//! is written for one user task and rides in the content that task reads (an invoice's
//! note, a colleague's hand-off, a saved memory). Each sample names its user task, its
//! vector class, the payload for each injection point, and the injection task whose
//! security check says whether it worked. The surface follows from the injection points
//! (one fact, one place: `injection_vectors.yaml`).

use super::{InjectionTask, PlannedCall, SuiteError, Surface, UserTask, Vector};
use crate::ids::{TaskId, VectorId};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::path::Path;

/// The eight ways a context-aware sample steers the agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VectorClass {
    /// Steers the agent to a different tool that reaches the attacker.
    CapabilityRoutingHijacking,
    /// The right tool with one argument changed (account, recipient, amount, date).
    ArgumentTampering,
    /// A plausible condition that, once "met", triggers an extra action.
    ConditionalFlowHijacking,
    /// False premises that lead the agent's own reasoning to the harmful act.
    ReasoningHijacking,
    /// A planted memory note that fires in a later step or session.
    PersistentContextPoisoning,
    /// A peer agent's message carries the instruction.
    InterAgentContagion,
    /// A poisoned skill or tool description.
    SkillInjection,
    /// The injected step sits inside a multi-step routine.
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
        Sha256::digest(text.as_bytes())
            .iter()
            .take(8)
            .map(|b| format!("{b:02x}"))
            .collect()
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
        let mut inject = Vec::new();
        let mut surface: Option<Surface> = None;
        for (vid, text) in r.inject {
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
        if let Some(plan) = &r.plan {
            super::check_plan(&path, &hint, plan, tools)?;
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
            surface: surface.expect("at least one injection point"),
        });
    }
    Ok(out)
}
