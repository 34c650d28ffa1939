//! An external suite's episode: a leased provider process holds the environment, runs
//! the tools and judges the outcome.

use crate::episode::Injection;
use crate::episode::world::{ToolReply, Verdicts, World, WorldError};
use crate::external::pool::Lease;
use crate::external::protocol::{CallReply, Injections, Request, Started, Verdicts as Reply};
use crate::external::{ExternalError, ExternalSuite};
use crate::ids::VectorId;
use async_trait::async_trait;
use serde_json::Value;
use std::collections::BTreeMap;

pub struct ExternalWorld {
    lease: Lease,
    attacked: bool,
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
                injection_task: injection.map(|i| i.task.id.as_str()),
                injections: &injections,
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
                attacked: injection.is_some(),
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
        Ok(match (reply.error, reply.output) {
            (Some(error), _) => ToolReply {
                text: error,
                ok: false,
            },
            (None, output) => ToolReply {
                text: output.unwrap_or_default(),
                ok: true,
            },
        })
    }

    async fn finish(&mut self, answer: &str) -> Result<Verdicts, WorldError> {
        let reply: Reply = self.lease.request(&Request::Finish { answer }).await?;
        if self.attacked && reply.security.is_none() {
            return Err(ExternalError::Refused {
                op: "finish".into(),
                message: "no `security` verdict for an attacked episode".into(),
            }
            .into());
        }
        Ok(Verdicts {
            utility: reply.utility,
            attack_success: if self.attacked { reply.security } else { None },
            // The protocol reports no attribution: which call did the harm is unknown.
            harmful_call: None,
            // The provider holds the checks: it cannot re-evaluate with a judged answer.
            answer_split: None,
        })
    }
}
