//! `exec:<command>`: a defense written in any language, run as a child process that
//! speaks versioned JSON lines on stdin/stdout (docs/defense-plugin.md is the schema).
//!
//! One process per episode, started at the episode's first hook and killed when the
//! episode ends, so a plugin that crashes or hangs costs exactly that episode: its
//! failure becomes the episode's error and the run goes on. Every reply is awaited with
//! a timeout; a reply that is not the schema's JSON is an error naming the hook and the
//! offending line.

use super::{
    Defense, DefenseCtx, DefenseError, EpisodeDefense, OutputVerdict, ProposedCall, Verdict,
};
use crate::model::{Component, Usage};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// The protocol version this harness speaks; every request carries it.
pub const PROTOCOL_VERSION: u64 = 1;
/// How long a plugin may take to answer one hook.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// How much of the plugin's stderr an error message quotes.
const STDERR_TAIL: usize = 1500;

/// The defense as selected on the command line.
pub struct PluginDefense {
    name: String,
    command: String,
    timeout: Duration,
}

impl PluginDefense {
    pub fn new(command: &str) -> Result<PluginDefense, String> {
        Self::with_timeout(command, DEFAULT_TIMEOUT)
    }

    pub fn with_timeout(command: &str, timeout: Duration) -> Result<PluginDefense, String> {
        let command = command.trim();
        if command.is_empty() {
            return Err(
                "`exec:` needs a command, e.g. `exec:python3 examples/keyword_plugin.py`".into(),
            );
        }
        Ok(PluginDefense {
            name: format!("exec:{command}"),
            command: command.to_string(),
            timeout,
        })
    }
}

impl Defense for PluginDefense {
    fn name(&self) -> &str {
        &self.name
    }
    fn episode(&self) -> Box<dyn EpisodeDefense> {
        Box::new(PluginEpisode {
            command: self.command.clone(),
            timeout: self.timeout,
            process: None,
            system_prompt: None,
            usage_reports: 0,
        })
    }
}

/// A running plugin.
struct Process {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    stderr: Arc<Mutex<String>>,
}

struct PluginEpisode {
    command: String,
    timeout: Duration,
    process: Option<Process>,
    system_prompt: Option<String>,
    usage_reports: u64,
}

/// Usage a plugin reports for its own model calls, metered under its component.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UsageReport {
    #[serde(default = "default_component")]
    component: String,
    #[serde(default)]
    calls: u64,
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

fn default_component() -> String {
    "detector".into()
}

/// A reply, before it is checked against the hook it answers.
#[derive(Debug, Deserialize)]
struct Reply {
    #[serde(default)]
    v: Option<u64>,
    action: String,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    result: Option<String>,
    #[serde(default)]
    output: Option<String>,
    #[serde(default)]
    answer: Option<String>,
    #[serde(default)]
    tools: Option<Vec<String>>,
    #[serde(default)]
    system_prompt: Option<String>,
    #[serde(default)]
    usage: Option<UsageReport>,
}

impl PluginEpisode {
    fn err(&self, hook: &str, what: impl std::fmt::Display) -> DefenseError {
        let stderr = self
            .process
            .as_ref()
            .map(|p| p.stderr.lock().expect("stderr lock").clone())
            .unwrap_or_default();
        let tail = if stderr.trim().is_empty() {
            String::new()
        } else {
            let s = stderr.trim();
            let cut = s
                .char_indices()
                .rev()
                .nth(STDERR_TAIL)
                .map_or(0, |(i, _)| i);
            format!("; its stderr ends: {}", &s[cut..])
        };
        DefenseError::Other(format!(
            "plugin `{}` at hook `{hook}`: {what}{tail}",
            self.command
        ))
    }

    fn spawn(&mut self) -> Result<(), DefenseError> {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(format!("exec {}", self.command))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| self.err("episode_start", format!("cannot start it: {e}")))?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut stderr_pipe = child.stderr.take().expect("piped stderr");
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr_pipe.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                let mut s = sink.lock().expect("stderr lock");
                s.push_str(&String::from_utf8_lossy(&buf[..n]));
                // Keep only the tail; a chatty plugin must not grow memory.
                if s.len() > 4 * STDERR_TAIL {
                    let mut cut = s.len() - 2 * STDERR_TAIL;
                    while !s.is_char_boundary(cut) {
                        cut += 1;
                    }
                    s.drain(..cut);
                }
            }
        });
        self.process = Some(Process {
            child,
            stdin,
            stdout,
            stderr,
        });
        Ok(())
    }

    /// Sends one request and reads one reply line, within the timeout.
    async fn exchange(
        &mut self,
        hook: &str,
        mut request: Value,
        ctx: &mut DefenseCtx<'_>,
    ) -> Result<Reply, DefenseError> {
        if self.process.is_none() {
            self.spawn()?;
        }
        request["v"] = json!(PROTOCOL_VERSION);
        request["hook"] = json!(hook);
        let mut line = serde_json::to_string(&request).expect("requests serialise");
        line.push('\n');
        let timeout = self.timeout;
        let p = self.process.as_mut().expect("spawned");
        let io = async {
            p.stdin.write_all(line.as_bytes()).await?;
            p.stdin.flush().await?;
            let mut reply = String::new();
            let n = p.stdout.read_line(&mut reply).await?;
            Ok::<_, std::io::Error>((n, reply))
        };
        let (n, reply) = match tokio::time::timeout(timeout, io).await {
            Err(_) => {
                return Err(self.err(
                    hook,
                    format!("no reply within {:.1} s (timeout)", timeout.as_secs_f64()),
                ));
            }
            Ok(Err(e)) => return Err(self.exited(hook, format!("pipe error: {e}")).await),
            Ok(Ok(x)) => x,
        };
        if n == 0 {
            return Err(self
                .exited(hook, "closed its stdout without replying")
                .await);
        }
        let parsed: Reply = serde_json::from_str(reply.trim()).map_err(|e| {
            self.err(
                hook,
                format!("malformed reply ({e}): {}", clip(reply.trim(), 300)),
            )
        })?;
        if let Some(v) = parsed.v
            && v != PROTOCOL_VERSION
        {
            return Err(self.err(
                hook,
                format!("speaks protocol version {v}; this harness speaks {PROTOCOL_VERSION}"),
            ));
        }
        if let Some(u) = &parsed.usage {
            let component = match u.component.as_str() {
                "planner" => Component::Planner,
                "judge" => Component::Judge,
                "detector" => Component::Detector,
                "embedding" => Component::Embedding,
                other => {
                    return Err(self.err(
                        hook,
                        format!(
                            "usage.component `{other}` is not one of planner, judge, detector, embedding"
                        ),
                    ));
                }
            };
            ctx.meter.record_usage(
                component,
                u.calls,
                Usage {
                    prompt_tokens: u.prompt_tokens,
                    completion_tokens: u.completion_tokens,
                    reasoning_tokens: 0,
                    estimated: false,
                },
            );
            self.usage_reports += 1;
        }
        Ok(parsed)
    }

    /// The error for a plugin that stopped talking, with its exit status when it has one.
    async fn exited(&mut self, hook: &str, what: impl std::fmt::Display) -> DefenseError {
        let mut status = String::new();
        if let Some(p) = self.process.as_mut()
            && let Ok(Ok(s)) =
                tokio::time::timeout(Duration::from_millis(500), p.child.wait()).await
        {
            status = format!(" (it exited with {s})");
        }
        // Give the stderr reader a moment to drain what the plugin wrote before dying.
        tokio::time::sleep(Duration::from_millis(20)).await;
        self.err(hook, format!("{what}{status}"))
    }

    fn unexpected(&self, hook: &str, action: &str, allowed: &str) -> DefenseError {
        self.err(
            hook,
            format!("action `{action}` is not valid here; expected one of {allowed}"),
        )
    }

    fn need(&self, hook: &str, field: Option<String>, name: &str) -> Result<String, DefenseError> {
        field.ok_or_else(|| self.err(hook, format!("the reply lacks `{name}`")))
    }
}

fn clip(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

fn call_json(call: &ProposedCall) -> Value {
    json!({"id": call.id, "tool": call.tool.as_str(), "arguments": call.args, "step": call.step})
}

#[async_trait]
impl EpisodeDefense for PluginEpisode {
    async fn start(&mut self, ctx: &mut DefenseCtx<'_>) -> Result<(), DefenseError> {
        let tools: Vec<Value> = ctx
            .tools
            .iter()
            .map(|t| {
                let kind = ctx.suite.tools.get(t.name.as_str()).map(|x| x.kind);
                json!({"name": t.name.as_str(), "description": t.description,
                       "parameters": t.parameters, "kind": kind})
            })
            .collect();
        let request = json!({
            "suite": {"name": ctx.suite.qualified_name(), "user": ctx.suite.meta.user,
                      "date": ctx.suite.meta.date},
            "user_prompt": ctx.user_prompt,
            "tools": tools,
        });
        const HOOK: &str = "episode_start";
        let reply = self.exchange(HOOK, request, ctx).await?;
        if reply.action != "continue" {
            return Err(self.unexpected(HOOK, &reply.action, "`continue`"));
        }
        if let Some(keep) = reply.tools {
            if let Some(bad) = keep
                .iter()
                .find(|k| !ctx.tools.iter().any(|t| t.name.as_str() == k.as_str()))
            {
                return Err(self.err(HOOK, format!("`tools` names `{bad}`, which is not offered")));
            }
            ctx.tools
                .retain(|t| keep.iter().any(|k| k == t.name.as_str()));
        }
        self.system_prompt = reply.system_prompt;
        Ok(())
    }

    fn system_prompt(&self) -> Option<String> {
        self.system_prompt.clone()
    }

    async fn review_call(
        &mut self,
        call: &ProposedCall,
        ctx: &mut DefenseCtx<'_>,
    ) -> Result<Verdict, DefenseError> {
        const HOOK: &str = "proposed_call";
        let request = json!({"call": call_json(call), "history": ctx.history});
        let reply = self.exchange(HOOK, request, ctx).await?;
        Ok(match reply.action.as_str() {
            "allow" => Verdict::Allow,
            "block" => Verdict::Block {
                reason: self.need(HOOK, reply.reason, "reason")?,
            },
            "ask_user" => Verdict::AskUser {
                reason: self.need(HOOK, reply.reason, "reason")?,
            },
            "fake" => Verdict::Fake {
                result: self.need(HOOK, reply.result, "result")?,
            },
            "stop" => Verdict::Stop {
                reason: self.need(HOOK, reply.reason, "reason")?,
            },
            other => {
                return Err(self.unexpected(HOOK, other, "allow, block, ask_user, fake, stop"));
            }
        })
    }

    async fn review_output(
        &mut self,
        call: &ProposedCall,
        output: String,
        ctx: &mut DefenseCtx<'_>,
    ) -> Result<OutputVerdict, DefenseError> {
        const HOOK: &str = "tool_output";
        let request = json!({"call": call_json(call), "output": output});
        let reply = self.exchange(HOOK, request, ctx).await?;
        Ok(match reply.action.as_str() {
            "pass" => OutputVerdict::Pass(output),
            "replace" => {
                ctx.stats.flagged_outputs += 1;
                OutputVerdict::Pass(self.need(HOOK, reply.output, "output")?)
            }
            "stop" => {
                ctx.stats.flagged_outputs += 1;
                OutputVerdict::Stop(self.need(HOOK, reply.output, "output")?)
            }
            other => return Err(self.unexpected(HOOK, other, "pass, replace, stop")),
        })
    }

    async fn review_answer(
        &mut self,
        answer: &str,
        ctx: &mut DefenseCtx<'_>,
    ) -> Result<Option<String>, DefenseError> {
        const HOOK: &str = "final_answer";
        let reply = self.exchange(HOOK, json!({"answer": answer}), ctx).await?;
        let out = match reply.action.as_str() {
            "allow" => None,
            "replace" => Some(self.need(HOOK, reply.answer, "answer")?),
            other => return Err(self.unexpected(HOOK, other, "allow, replace")),
        };
        // The episode is over: close stdin so the plugin can exit on its own.
        if let Some(mut p) = self.process.take() {
            let _ = p.stdin.shutdown().await;
            let _ = tokio::time::timeout(Duration::from_millis(200), p.child.wait()).await;
        }
        Ok(out)
    }

    fn notes(&self) -> Value {
        json!({"plugin": self.command, "usage_reports": self.usage_reports})
    }
}
