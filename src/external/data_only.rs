//! Data-only attacks on a provider's suite (`--attack data_only` through the bridge).
//!
//! A data suite derives its cases by replaying each user task's plan on its own
//! environment with every vector set to a canary ([`crate::suite::data_only`]). A
//! provider's environment lives in its process, so the replay happens there, through the
//! protocol's ordinary requests: `start` the user task with every vector's canary as the
//! injection and no injection task, `call` each step of the plan the provider computed
//! for that environment, and `finish`. The outputs are read by the same rules as a data
//! suite's ([`data_only::cases_of`]); the environment's text, which an attacker's value
//! must not occur in, is every vector's default and every output of every replay.
//!
//! The cases' goals are the harness's own `called` checks on the user's write call, which
//! the provider knows nothing of: their episodes start with no injection task and are
//! judged on the calls the provider ran (the episode's world for a provider, a layer up).

use super::protocol::{CallReply, Request, Started, Verdicts};
use super::{ExternalError, ExternalSuite, check_plan, plan_of};
use crate::suite::data_only::{self, DataOnly, Replay};
use crate::suite::{PlannedCall, Suite, UserTask, canary};
use std::collections::BTreeMap;

/// The data-only cases of `suite`: derived here for a data suite, replayed in the
/// provider for a provider's suite (every injectable user task at once, as many at a time
/// as the provider's pool has processes).
pub async fn derive(suite: &Suite) -> Result<Vec<DataOnly>, ExternalError> {
    let Some(served) = super::served(suite) else {
        return Ok(data_only::derive(suite));
    };
    let injections: BTreeMap<String, String> = suite
        .vectors
        .iter()
        .map(|v| (v.id.0.clone(), canary(&v.id)))
        .collect();
    let tasks: Vec<&UserTask> = suite
        .user_tasks
        .iter()
        .filter(|t| suite.injectable.get(&t.id).is_some_and(|v| !v.is_empty()))
        .collect();
    let none = BTreeMap::new();
    let runs = tasks.iter().map(|t| async {
        let (plan, marked) = replay(served, t, &injections).await?;
        let (_, clean) = replay(served, t, &none).await?;
        Ok::<_, ExternalError>((plan, marked, clean))
    });
    let replays = futures::future::try_join_all(runs).await?;
    let mut env_text: String = suite
        .vectors
        .iter()
        .map(|v| v.default.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    for (_, marked, clean) in &replays {
        for o in marked.iter().chain(clean) {
            env_text.push('\n');
            env_text.push_str(o);
        }
    }
    Ok(tasks
        .iter()
        .zip(replays)
        .flat_map(|(task, (plan, marked, clean))| {
            let replay = Replay {
                plan: &plan,
                marked,
                clean,
            };
            data_only::cases_of(suite, task, &replay, &env_text)
        })
        .collect())
}

/// One user task's plan run in a provider process with these injections: the plan the
/// provider computed for that environment (or the described one) and what each call
/// showed, up to the first call that failed.
async fn replay(
    served: &ExternalSuite,
    task: &UserTask,
    injections: &BTreeMap<String, String>,
) -> Result<(Vec<PlannedCall>, Vec<String>), ExternalError> {
    let mut lease = served.pool.lease().await?;
    let started: Started = lease
        .request(&Request::Start {
            suite: &served.qualified,
            user_task: task.id.as_str(),
            injection_task: None,
            injections,
            // Replaying plans reads outputs only: the trace plays no part.
            trace: None,
        })
        .await?;
    let plan = match &started.plan {
        Some(calls) => {
            check_plan(&served.tools, "the recomputed `plan`", calls).map_err(|e| {
                ExternalError::Refused {
                    op: "start".into(),
                    message: e.to_string(),
                }
            })?;
            plan_of(calls)
        }
        None => task.plan.clone(),
    };
    let mut outputs = Vec::new();
    for (i, call) in plan.iter().enumerate() {
        let reply: CallReply = lease
            .request(&Request::Call {
                call_id: &format!("data-only-replay-{i}"),
                tool: call.tool.as_str(),
                arguments: &call.args,
            })
            .await?;
        match (reply.error, reply.output) {
            (Some(_), _) => break,
            (None, output) => outputs.push(output.unwrap_or_default()),
        }
    }
    let _: Verdicts = lease.request(&Request::Finish { answer: "" }).await?;
    Ok((plan, outputs))
}
