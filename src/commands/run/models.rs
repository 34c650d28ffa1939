//! The models of a run: every role's model built from its spec, the answer judge, which
//! roles are scripted, and the preflight request to every endpoint in use.

use crate::commands::CliError;
use crate::commands::run::args::RoleModels;
use crate::model::Models;
use crate::model::answer_judge::{AnswerJudge, JudgeFormat};
use crate::model::config::ModelFactory;
use sieve_record::{JudgeOn, RunRoles, UtilityFrom};
use std::sync::Arc;

/// Builds the models for every role with a factory (flags, named endpoints, cache).
/// Roles on the same endpoint share its connection pool and rate limits.
pub fn build_models_with(factory: &ModelFactory, roles: &RoleModels) -> Result<Models, CliError> {
    let make = |spec: &str| factory.chat(spec).map_err(CliError::from);
    let agent = make(&roles.model)?;
    let planner = match roles.planner_model.as_deref() {
        Some(p) => make(p)?,
        None => agent.clone(),
    };
    let judge = match roles.judge_model.as_deref() {
        Some(j) => make(j)?,
        None => agent.clone(),
    };
    let embedder = factory.embedder(factory.options().embedder.as_deref())?;
    Ok(Models {
        agent,
        planner,
        judge,
        embedder,
        tokens: factory.tokens(),
    })
}

/// The answer judge of `--answer-judge`, with its own request fields; `--utility-from`
/// other than `checks` needs one that judges every answer (`--answer-judge-on all`).
pub fn build_answer_judge(
    factory: &ModelFactory,
    spec: Option<&str>,
    format: JudgeFormat,
    (utility_from, on): (UtilityFrom, JudgeOn),
) -> Result<Option<Arc<AnswerJudge>>, CliError> {
    let Some(spec) = spec else {
        if utility_from != UtilityFrom::Checks {
            return Err(CliError::bad_input(format!(
                "--utility-from {} needs --answer-judge MODEL",
                utility_from.as_str()
            )));
        }
        if on != JudgeOn::Undecided {
            return Err(CliError::bad_input(format!(
                "--answer-judge-on {} needs --answer-judge MODEL",
                on.as_str()
            )));
        }
        return Ok(None);
    };
    if on == JudgeOn::Undecided && utility_from != UtilityFrom::Checks {
        return Err(CliError::bad_input(format!(
            "--utility-from {} needs --answer-judge-on all: with `undecided` (the default) the judge is asked only where the checks' rules could not decide, and its verdict counts exactly there",
            utility_from.as_str()
        )));
    }
    let body = match format {
        JudgeFormat::Schema => crate::model::answer_judge::response_format()
            .as_object()
            .cloned()
            .unwrap_or_default(),
        JudgeFormat::Plain => Default::default(),
    };
    let model = factory
        .chat_with(spec, body)
        .map_err(|e| CliError::bad_input(format!("--answer-judge: {e}")))?;
    AnswerJudge::new(model, utility_from, on, format)
        .map(|j| Some(Arc::new(j)))
        .map_err(CliError::bad_input)
}

/// One cheap request to every endpoint in use (agent, planner, judge, embedder) before
/// the matrix: what would fail every episode stops the run now, naming the URL and role.
pub(super) async fn preflight(
    models: &Models,
    tools: &[crate::tools::ToolSchema],
) -> Result<(), CliError> {
    let mut seen: Vec<&Arc<dyn crate::model::ChatModel>> = Vec::new();
    for (role, m) in [
        ("agent", &models.agent),
        ("planner", &models.planner),
        ("judge", &models.judge),
    ] {
        if seen.iter().any(|s| Arc::ptr_eq(s, m)) {
            continue;
        }
        seen.push(m);
        // Only the agent is offered tools; planners and judges answer in JSON.
        let offered = if role == "agent" { tools } else { &[] };
        let warnings = m
            .preflight(offered)
            .await
            .map_err(|e| CliError::failed(format!("{role}: {e}")))?;
        for w in warnings {
            eprintln!("warning: {role} {w}");
        }
    }
    models
        .embedder
        .preflight()
        .await
        .map_err(|e| CliError::failed(format!("embedder: {e}")))
}

/// Which of `models`' roles are scripted, for the manifest and the oracle check.
pub fn roles_of(models: &Models) -> RunRoles {
    use sieve_record::Component;
    RunRoles {
        agent_scripted: models.agent.simulated(),
        planner_scripted: models.planner.simulated(),
        judge_scripted: models.judge.simulated(),
        helper_labels: [
            models.planner.scripted(Component::Planner),
            models.judge.scripted(Component::Judge),
        ]
        .into_iter()
        .flatten()
        .map(|r| r.label)
        .collect(),
    }
}
