//! An external suite's episode: a leased provider process holds the environment, runs
//! the tools and judges the outcome, except for an attack whose goal is the harness's own
//! check on the calls (a data-only attack, [`crate::external::data_only`]): the provider
//! knows no such injection task, so the harness judges it on the calls the provider ran.

use crate::episode::Injection;
use crate::episode::world::{ToolReply, Verdicts, World, WorldError};
use crate::external::pool::Lease;
use crate::external::protocol::{CallReply, Injections, Request, Started, Verdicts as Reply};
use crate::external::{ExternalError, ExternalSuite};
use crate::ids::VectorId;
use crate::suite::check::{Check, ExecutedCall, Outcome};
use async_trait::async_trait;
use serde_json::Value;
use std::collections::BTreeMap;

pub struct ExternalWorld {
    lease: Lease,
    security: Security,
    /// The calls the provider ran, for a goal judged here.
    executed: Vec<ExecutedCall>,
    /// The first executed call after which a goal judged here held.
    harmful_call: Option<usize>,
}

/// Who judges the episode's attack.
enum Security {
    /// A clean episode.
    Clean,
    /// The provider, with its own injection task's check.
    Provider,
    /// The harness, with a check on the calls the provider ran (a `called` check).
    Calls(Box<Check>),
}

impl Security {
    fn of(injection: Option<&Injection<'_>>) -> Result<Security, ExternalError> {
        let Some(inj) = injection else {
            return Ok(Security::Clean);
        };
        match &inj.task.security {
            Check::External => Ok(Security::Provider),
            c @ Check::Called(_) => Ok(Security::Calls(Box::new(c.clone()))),
            _ => Err(ExternalError::Refused {
                op: "start".into(),
                message: format!(
                    "injection task `{}`: its check reads the environment, which lives in the provider; only a check on the calls can be judged by the harness",
                    inj.task.id
                ),
            }),
        }
    }
}

impl ExternalWorld {
    /// Leases a process and starts the episode in it. For an attack the provider renders
    /// itself, it is asked for the payloads first. Returns the world and, for such an
    /// attack, the texts it placed (for the scripted agent and the record).
    pub async fn open(
        suite: &ExternalSuite,
        user_task: &str,
        vectors: &[VectorId],
        injection: Option<&Injection<'_>>,
        model: &str,
    ) -> Result<(ExternalWorld, Option<Vec<String>>, Started), ExternalError> {
        let security = Security::of(injection)?;
        let mut lease = suite.pool.lease().await?;
        let injections: BTreeMap<String, String> = match injection {
            None => BTreeMap::new(),
            Some(inj) => match inj.provider_attack {
                Some(attack) => {
                    let reply: Injections = lease
                        .request(&Request::Attack {
                            suite: &suite.qualified,
                            attack,
                            user_task,
                            injection_task: inj.task.id.as_str(),
                            model,
                            vectors,
                        })
                        .await?;
                    reply.injections
                }
                None => inj
                    .placements
                    .iter()
                    .map(|(v, text)| (v.0.clone(), text.clone()))
                    .collect(),
            },
        };
        let started: Started = lease
            .request(&Request::Start {
                suite: &suite.qualified,
                user_task,
                // A goal judged here is no task of the provider's.
                injection_task: injection
                    .filter(|_| matches!(security, Security::Provider))
                    .map(|i| i.task.id.as_str()),
                injections: &injections,
                trace: (suite.trace != crate::external::protocol::TraceMode::All)
                    .then_some(suite.trace),
            })
            .await?;
        // The plans recomputed for this episode are checked as the described ones were.
        for (what, plan) in [
            ("the recomputed `plan`", &started.plan),
            ("the recomputed `injection_plan`", &started.injection_plan),
        ] {
            if let Some(plan) = plan {
                crate::external::check_plan(&suite.tools, what, plan).map_err(|e| {
                    ExternalError::Refused {
                        op: "start".into(),
                        message: e.to_string(),
                    }
                })?;
            }
        }
        let rendered = injection
            .and_then(|i| i.provider_attack)
            .map(|_| injections.values().cloned().collect());
        Ok((
            ExternalWorld {
                lease,
                security,
                executed: Vec::new(),
                harmful_call: None,
            },
            rendered,
            started,
        ))
    }
}

#[async_trait]
impl World for ExternalWorld {
    async fn call(&mut self, id: &str, tool: &str, args: &Value) -> Result<ToolReply, WorldError> {
        let reply: CallReply = self
            .lease
            .request(&Request::Call {
                call_id: id,
                tool,
                arguments: args,
            })
            .await?;
        let reply = match (reply.error, reply.output) {
            (Some(error), _) => ToolReply {
                text: error,
                ok: false,
            },
            (None, output) => ToolReply {
                text: output.unwrap_or_default(),
                ok: true,
            },
        };
        if let Security::Calls(check) = &self.security {
            self.executed.push(ExecutedCall {
                tool: tool.to_string(),
                args: args.clone(),
                ok: reply.ok,
            });
            if self.harmful_call.is_none() && calls_hold(check, &self.executed) {
                self.harmful_call = Some(self.executed.len() - 1);
            }
        }
        Ok(reply)
    }

    async fn finish(&mut self, answer: &str) -> Result<Verdicts, WorldError> {
        let reply: Reply = self.lease.request(&Request::Finish { answer }).await?;
        let (attack_success, harmful_call) = match &self.security {
            Security::Clean => (None, None),
            Security::Provider => match reply.security {
                // The protocol reports no attribution: which call did the harm is unknown.
                Some(won) => (Some(won), None),
                None => {
                    return Err(ExternalError::Refused {
                        op: "finish".into(),
                        message: "no `security` verdict for an attacked episode".into(),
                    }
                    .into());
                }
            },
            Security::Calls(check) => (Some(calls_hold(check, &self.executed)), self.harmful_call),
        };
        Ok(Verdicts {
            utility: reply.utility,
            attack_success,
            harmful_call,
            // The provider holds the checks: it cannot re-evaluate with a judged answer.
            answer_split: None,
            undecided: Default::default(),
        })
    }
}

/// Whether a check on the calls holds for these executed calls (it reads nothing else).
fn calls_hold(check: &Check, calls: &[ExecutedCall]) -> bool {
    let nothing = Value::Null;
    check.eval(&Outcome {
        pre: &nothing,
        post: &nothing,
        calls,
        answer: "",
    })
}
