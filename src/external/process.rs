//! One provider process: [`crate::child`]'s exchange (its own process group, request ids,
//! a size cap on replies, a deadline, stderr drained as bytes) with the provider
//! protocol's envelope: `op` out, `ok` (and `error`) back. Any failure that leaves the
//! stream in doubt (crash, hang, malformed or stray reply) marks the process broken; the
//! pool then discards it and starts a fresh one.

use super::ExternalError;
use super::protocol::{Hello, PROTOCOL, Request};
use crate::child::{self, Child, ChildError};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::time::Duration;

/// How to start a provider.
#[derive(Clone, Debug)]
pub struct Launch {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub dir: PathBuf,
    /// The longest a single reply may take before the process counts as hung.
    pub timeout: Duration,
    /// The longest reply line, in bytes.
    pub max_reply: usize,
}

pub struct ProviderProcess {
    child: Child,
    broken: bool,
    pub hello: Hello,
}

/// An `ok: false` reply.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Refusal {
    #[serde(default)]
    error: Option<String>,
}

impl ProviderProcess {
    /// Starts the process and checks its protocol version.
    pub async fn spawn(launch: &Launch) -> Result<Self, ExternalError> {
        let child = Child::spawn(&child::Spec {
            program: launch.program.clone(),
            args: launch.args.clone(),
            dir: Some(launch.dir.clone()),
            timeout: launch.timeout,
            max_reply: launch.max_reply,
        })
        .map_err(|e| ExternalError::Spawn {
            program: launch.program.display().to_string(),
            message: match e {
                ChildError::Spawn(m) => m,
                other => other.to_string(),
            },
        })?;
        let mut p = ProviderProcess {
            child,
            broken: false,
            hello: Hello {
                protocol: 0,
                provider: String::new(),
                package: String::new(),
                package_version: String::new(),
                package_origin: None,
                traces: Vec::new(),
            },
        };
        let hello: Hello = p.request(&Request::Hello { protocol: PROTOCOL }).await?;
        if hello.protocol != PROTOCOL {
            return Err(ExternalError::Version {
                theirs: hello.protocol,
                ours: PROTOCOL,
            });
        }
        p.hello = hello;
        Ok(p)
    }

    /// Whether the process can take another request.
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    async fn fail(&mut self, what: String) -> ExternalError {
        self.broken = true;
        let status = self
            .child
            .kill()
            .await
            .map(|s| format!(" ({s})"))
            .unwrap_or_default();
        let tail = self.child.stderr_tail();
        let tail = if tail.is_empty() {
            String::new()
        } else {
            let lines: Vec<&str> = tail.lines().collect();
            let from = lines.len().saturating_sub(20);
            format!(
                "\n  its last stderr lines:\n    {}",
                lines[from..].join("\n    ")
            )
        };
        ExternalError::Broken(format!("{what}{status}{tail}"))
    }

    /// Sends one request and parses the reply's payload as `T`.
    pub async fn request<T: DeserializeOwned>(
        &mut self,
        req: &Request<'_>,
    ) -> Result<T, ExternalError> {
        if self.broken {
            return Err(ExternalError::Broken(
                "the provider process was already discarded".into(),
            ));
        }
        let op = req.op();
        let Value::Object(body) = serde_json::to_value(req).expect("requests serialise") else {
            unreachable!("a request is an object")
        };
        let mut reply = match self.child.exchange(body).await {
            Ok(r) => r,
            Err(e) => return Err(self.failed(op, e).await),
        };
        match reply.remove("ok") {
            Some(Value::Bool(true)) => {}
            Some(Value::Bool(false)) => {
                return match serde_json::from_value::<Refusal>(Value::Object(reply)) {
                    Ok(r) => Err(ExternalError::Refused {
                        op: op.to_string(),
                        message: r.error.unwrap_or_else(|| "(no error message)".into()),
                    }),
                    Err(e) => Err(self.fail(format!("malformed refusal of `{op}`: {e}")).await),
                };
            }
            _ => {
                return Err(self
                    .fail(format!("malformed reply to `{op}`: no boolean `ok` field"))
                    .await);
            }
        }
        match serde_json::from_value(Value::Object(reply)) {
            Ok(t) => Ok(t),
            Err(e) => Err(self.fail(format!("malformed reply to `{op}`: {e}")).await),
        }
    }

    /// Explains a failed exchange; a version 1 provider (no ids) is told what changed.
    async fn failed(&mut self, op: &str, e: ChildError) -> ExternalError {
        if let ChildError::NoId { reply, .. } = &e
            && let Some(theirs) = old_protocol(reply)
        {
            self.broken = true;
            self.child.kill().await;
            return ExternalError::Version {
                theirs,
                ours: PROTOCOL,
            };
        }
        let what = match e {
            ChildError::Timeout(secs) => {
                format!("the provider did not answer `{op}` within {secs:.1} s (hung)")
            }
            ChildError::Closed => format!("the provider exited before answering `{op}` (crashed)"),
            e => format!("the provider's reply to `{op}`: {e}"),
        };
        self.fail(what).await
    }
}

/// The protocol version a reply without an id says it speaks, when it says one.
fn old_protocol(reply: &Map<String, Value>) -> Option<u32> {
    reply
        .get("protocol")
        .and_then(Value::as_u64)
        .and_then(|v| u32::try_from(v).ok())
        .filter(|v| *v != PROTOCOL)
}
