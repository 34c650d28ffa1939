//! `exec:<command>`: a defense written in any language, run as a child process that
//! speaks versioned JSON lines on stdin/stdout (docs/defense-plugin.md is the schema).
//!
//! Processes are persistent: one per worker slot (at most `--concurrency` of them), each
//! reused episode after episode, `episode_start` marking where one episode ends and the
//! next begins. A plugin that replies `"reuse": false` to `episode_start` gets today's
//! one process per episode instead. A process that crashes, hangs or misbehaves is
//! killed with its process group and costs exactly the episode in flight (its failure
//! becomes that episode's error); the next episode starts a fresh one. One that exited
//! between episodes, or wrote a line no request asked for, is replaced before it is
//! reused. Every process is ended when the run drops the defense. The exchange is
//! [`crate::child`]'s: every reply echoes its request's id, fits a size cap and arrives
//! within the timeout. Replies are typed per hook and unknown fields are refused, so a
//! misspelt field is an error naming the hook, never a silent default.

use super::{
    Defense, DefenseCtx, DefenseError, EpisodeDefense, OutputVerdict, ProposedCall, Verdict,
};
use crate::child::{self, Child, ChildError};
use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sieve_record::{Component, Message, Usage};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Idle plugin processes, waiting for the next episode.
type Idle = Arc<Mutex<Vec<Child>>>;

/// The protocol version this harness speaks; every request carries it. Version 2 added
/// the request `id` every reply echoes (version 1 plugins are told so by name).
pub const PROTOCOL_VERSION: u64 = 2;
/// How long a plugin may take to answer one hook.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest `--plugin-timeout` (a day): a plugin slower than that is hung.
pub const MAX_TIMEOUT_SECS: f64 = 86_400.0;
/// The most one usage report may add to a count: far above any real call, far below
/// what could overflow the episode's meter.
pub const MAX_REPORTED: u64 = 1_000_000_000;

/// The defense as selected on the command line.
pub struct PluginDefense {
    name: String,
    command: String,
    timeout: Duration,
    max_reply: usize,
    idle: Idle,
}

/// `exec:` given without a command: nothing to start.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("`exec:` needs a command, e.g. `exec:python3 examples/keyword_plugin.py`")]
pub struct NoCommand;

impl PluginDefense {
    pub fn new(command: &str) -> Result<PluginDefense, NoCommand> {
        Self::with_limits(command, DEFAULT_TIMEOUT, child::DEFAULT_MAX_REPLY)
    }

    pub fn with_limits(
        command: &str,
        timeout: Duration,
        max_reply: usize,
    ) -> Result<PluginDefense, NoCommand> {
        let command = command.trim();
        if command.is_empty() {
            return Err(NoCommand);
        }
        Ok(PluginDefense {
            name: format!("exec:{command}"),
            command: command.to_string(),
            timeout,
            max_reply,
            idle: Idle::default(),
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
            spec: child::Spec {
                program: "sh".into(),
                args: vec!["-c".into(), format!("exec {}", self.command)],
                dir: None,
                timeout: self.timeout,
                max_reply: self.max_reply,
            },
            process: None,
            idle: self.idle.clone(),
            reuse: true,
            clean: true,
            system_prompt: None,
            usage_reports: 0,
        })
    }
}

struct PluginEpisode {
    command: String,
    spec: child::Spec,
    process: Option<Child>,
    /// Where a healthy process goes when the episode ends.
    idle: Idle,
    /// Whether the plugin lets its process serve the next episode (`"reuse": false` to
    /// `episode_start` says no).
    reuse: bool,
    /// No exchange is half done: the stream is at a line boundary.
    clean: bool,
    system_prompt: Option<String>,
    usage_reports: u64,
}

/// What the harness sends, one variant per hook (`hook` names it).
#[derive(Serialize)]
#[serde(tag = "hook", rename_all = "snake_case")]
enum Request<'a> {
    EpisodeStart {
        suite: SuiteInfo<'a>,
        user_prompt: &'a str,
        tools: Vec<ToolInfo<'a>>,
    },
    ProposedCall {
        call: CallInfo<'a>,
        history: &'a [Message],
    },
    ToolOutput {
        call: CallInfo<'a>,
        output: &'a str,
    },
    FinalAnswer {
        answer: &'a str,
    },
}

impl Request<'_> {
    fn hook(&self) -> &'static str {
        match self {
            Request::EpisodeStart { .. } => "episode_start",
            Request::ProposedCall { .. } => "proposed_call",
            Request::ToolOutput { .. } => "tool_output",
            Request::FinalAnswer { .. } => "final_answer",
        }
    }

    /// The hook and the request as the JSON object sent, protocol version included.
    fn encode(&self) -> (&'static str, Map<String, Value>) {
        let Value::Object(mut body) = serde_json::to_value(self).expect("requests serialise")
        else {
            unreachable!("a request is an object")
        };
        body.insert("v".into(), json!(PROTOCOL_VERSION));
        (self.hook(), body)
    }
}

#[derive(Serialize)]
struct SuiteInfo<'a> {
    name: String,
    user: &'a str,
    date: &'a str,
}

#[derive(Serialize)]
struct ToolInfo<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
    kind: Option<crate::tools::ToolKind>,
}

#[derive(Serialize)]
struct CallInfo<'a> {
    id: &'a str,
    tool: &'a str,
    arguments: &'a Value,
    step: usize,
}

impl<'a> CallInfo<'a> {
    fn of(call: &'a ProposedCall) -> Self {
        CallInfo {
            id: &call.id,
            tool: call.tool.as_str(),
            arguments: &call.args,
            step: call.step,
        }
    }
}

/// The reply to `episode_start`.
#[derive(Debug, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
enum StartReply {
    Continue {
        #[serde(default)]
        tools: Option<Vec<String>>,
        #[serde(default)]
        system_prompt: Option<String>,
        /// `false`: end this process with the episode (one process per episode).
        #[serde(default)]
        reuse: Option<bool>,
    },
}

/// The reply to `proposed_call`.
#[derive(Debug, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
enum CallReply {
    Allow {},
    Block { reason: String },
    AskUser { reason: String },
    Fake { result: String },
    Stop { reason: String },
}

/// The reply to `tool_output`.
#[derive(Debug, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
enum OutputReply {
    Pass {},
    Replace { output: String },
    Stop { output: String },
}

/// The reply to `final_answer`.
#[derive(Debug, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
enum AnswerReply {
    Allow {},
    Replace { answer: String },
}

/// The component a plugin's own model use is metered under.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
enum UsageComponent {
    Planner,
    Judge,
    #[default]
    Detector,
    Embedding,
}

/// Usage a plugin reports for its own model calls (any reply may carry one).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UsageReport {
    #[serde(default)]
    component: UsageComponent,
    #[serde(default)]
    calls: u64,
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

/// The most a plugin's replacement may grow what it replaces to: a rewrite that marks,
/// wraps or encodes an output fits; one that buries it in padding does not.
pub const MAX_REPLACEMENT_BYTES: usize = 256 << 10;

impl PluginEpisode {
    /// A replacement must be text (no NUL or other control character but tab and line
    /// breaks) and no larger than [`MAX_REPLACEMENT_BYTES`] unless what it replaces was:
    /// otherwise the episode errors naming the hook, never a silent win.
    fn check_replacement(
        &self,
        hook: &str,
        field: &str,
        before: &str,
        after: &str,
    ) -> Result<(), DefenseError> {
        if let Some(c) = after
            .chars()
            .find(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
        {
            return Err(self.err(
                hook,
                format!(
                    "`{field}` is not text: it holds the control character U+{:04X}",
                    c as u32
                ),
            ));
        }
        if after.len() > MAX_REPLACEMENT_BYTES.max(before.len()) {
            return Err(self.err(
                hook,
                format!(
                    "`{field}` grows the {} bytes it replaces to {} bytes, past the {MAX_REPLACEMENT_BYTES}-byte cap",
                    before.len(),
                    after.len()
                ),
            ));
        }
        Ok(())
    }

    fn err(&self, hook: &str, what: impl std::fmt::Display) -> DefenseError {
        let tail = self
            .process
            .as_ref()
            .map(Child::stderr_tail)
            .filter(|t| !t.is_empty())
            .map(|t| {
                let cut = t.char_indices().rev().nth(1500).map_or(0, |(i, _)| i);
                format!("\n  its stderr ends: {}", &t[cut..])
            })
            .unwrap_or_default();
        DefenseError::Other(format!(
            "plugin `{}` at hook `{hook}`: {what}{tail}",
            self.command
        ))
    }

    /// Explains a failed exchange, with the plugin's exit status when it is gone.
    async fn failed(&mut self, hook: &str, e: ChildError) -> DefenseError {
        let what = match &e {
            // A version 1 plugin neither sends ids nor reads them: name the change.
            ChildError::NoId { reply, .. }
                if reply.get("v").is_some_and(|v| v != PROTOCOL_VERSION) =>
            {
                format!(
                    "it speaks protocol version {}; this harness speaks {PROTOCOL_VERSION}, whose replies echo the request's `id` (docs/defense-plugin.md)",
                    reply["v"]
                )
            }
            _ => e.to_string(),
        };
        let status = match self.process.as_mut() {
            Some(p) => p.kill().await,
            None => None,
        };
        let status = match (&e, status) {
            (ChildError::Closed | ChildError::Write(_), Some(s)) => {
                format!(" (it exited with {s})")
            }
            _ => String::new(),
        };
        let err = self.err(hook, format!("{what}{status}"));
        self.process = None;
        err
    }

    /// Sends one request (as [`Request::encode`] gives it) and returns the hook's typed
    /// reply, metering any usage report.
    async fn exchange<R: DeserializeOwned>(
        &mut self,
        (hook, body): (&'static str, Map<String, Value>),
        ctx: &mut DefenseCtx<'_>,
    ) -> Result<R, DefenseError> {
        if self.process.is_none() {
            let p = match self.take_idle().await {
                Some(p) => p,
                None => Child::spawn(&self.spec).map_err(|e| self.err(hook, e))?,
            };
            self.process = Some(p);
        }
        let p = self.process.as_mut().expect("spawned");
        self.clean = false;
        let mut reply = match p.exchange(body).await {
            Ok(r) => r,
            Err(e) => return Err(self.failed(hook, e).await),
        };
        self.clean = true;
        if let Some(v) = reply.remove("v")
            && v != PROTOCOL_VERSION
        {
            return Err(self.err(
                hook,
                format!("it speaks protocol version {v}; this harness speaks {PROTOCOL_VERSION}"),
            ));
        }
        if let Some(u) = reply.remove("usage") {
            let u: UsageReport = serde_json::from_value(u)
                .map_err(|e| self.err(hook, format!("malformed `usage`: {e}")))?;
            self.meter(hook, u, ctx)?;
        }
        let shown = child::clip(&Value::Object(reply.clone()).to_string(), 300);
        serde_json::from_value(Value::Object(reply))
            .map_err(|e| self.err(hook, format!("malformed reply ({e}): {shown}")))
    }

    /// An idle process that is still alive and wrote nothing since its last reply; the
    /// others are ended (a late line cannot be told apart from a stray one).
    async fn take_idle(&self) -> Option<Child> {
        loop {
            let mut p = self.idle.lock().expect("plugin pool lock").pop()?;
            if p.alive() && p.quiet(Duration::ZERO).await.is_ok() {
                return Some(p);
            }
            p.kill().await;
        }
    }

    /// The episode is over: a healthy process the plugin lets us reuse goes back to the
    /// pool; any other is closed (stdin shut so it may exit on its own, then its group
    /// killed). A line written after the last reply is a stray line of this episode.
    async fn release(&mut self, hook: &str) -> Result<(), DefenseError> {
        let Some(mut p) = self.process.take() else {
            return Ok(());
        };
        if self.reuse && self.clean {
            match p.quiet(Duration::ZERO).await {
                Ok(()) => {
                    self.idle.lock().expect("plugin pool lock").push(p);
                    return Ok(());
                }
                Err(e) => {
                    self.process = Some(p);
                    return Err(self.failed(hook, e).await);
                }
            }
        }
        p.close(Duration::from_millis(200)).await;
        Ok(())
    }

    fn meter(
        &mut self,
        hook: &str,
        u: UsageReport,
        ctx: &mut DefenseCtx<'_>,
    ) -> Result<(), DefenseError> {
        for (name, n) in [
            ("calls", u.calls),
            ("prompt_tokens", u.prompt_tokens),
            ("completion_tokens", u.completion_tokens),
        ] {
            if n > MAX_REPORTED {
                return Err(self.err(
                    hook,
                    format!("usage.{name} is {n}, above the {MAX_REPORTED} one reply may report"),
                ));
            }
        }
        let component = match u.component {
            UsageComponent::Planner => Component::Planner,
            UsageComponent::Judge => Component::Judge,
            UsageComponent::Detector => Component::Detector,
            UsageComponent::Embedding => Component::Embedding,
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
        Ok(())
    }
}

#[async_trait]
impl EpisodeDefense for PluginEpisode {
    async fn start(&mut self, ctx: &mut DefenseCtx<'_>) -> Result<(), DefenseError> {
        let suite = ctx.suite;
        let tools: Vec<ToolInfo<'_>> = ctx
            .tools
            .iter()
            .map(|t| ToolInfo {
                name: t.name.as_str(),
                description: &t.description,
                parameters: &t.parameters,
                kind: suite.tools.get(t.name.as_str()).map(|x| x.kind),
            })
            .collect();
        let request = Request::EpisodeStart {
            suite: SuiteInfo {
                name: suite.qualified_name(),
                user: &suite.meta.user,
                date: &suite.meta.date,
            },
            user_prompt: ctx.user_prompt,
            tools,
        };
        let request = request.encode();
        let reply: StartReply = self.exchange(request, ctx).await?;
        let StartReply::Continue {
            tools,
            system_prompt,
            reuse,
        } = reply;
        self.reuse = reuse.unwrap_or(true);
        if let Some(keep) = tools {
            if let Some(bad) = keep
                .iter()
                .find(|k| !ctx.tools.iter().any(|t| t.name.as_str() == k.as_str()))
            {
                return Err(self.err(
                    "episode_start",
                    format!("`tools` names `{bad}`, which is not offered"),
                ));
            }
            ctx.tools
                .retain(|t| keep.iter().any(|k| k == t.name.as_str()));
        }
        self.system_prompt = system_prompt;
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
        let request = Request::ProposedCall {
            call: CallInfo::of(call),
            history: ctx.history,
        }
        .encode();
        let reply: CallReply = self.exchange(request, ctx).await?;
        Ok(match reply {
            CallReply::Allow {} => Verdict::Allow,
            CallReply::Block { reason } => Verdict::Block { reason },
            CallReply::AskUser { reason } => Verdict::AskUser { reason },
            CallReply::Fake { result } => Verdict::Fake { result },
            CallReply::Stop { reason } => Verdict::Stop { reason },
        })
    }

    async fn review_output(
        &mut self,
        call: &ProposedCall,
        output: String,
        ctx: &mut DefenseCtx<'_>,
    ) -> Result<OutputVerdict, DefenseError> {
        let request = Request::ToolOutput {
            call: CallInfo::of(call),
            output: &output,
        }
        .encode();
        let reply: OutputReply = self.exchange(request, ctx).await?;
        if let OutputReply::Replace { output: new } | OutputReply::Stop { output: new } = &reply {
            self.check_replacement("tool_output", "output", &output, new)?;
        }
        Ok(match reply {
            OutputReply::Pass {} => OutputVerdict::Pass(output),
            OutputReply::Replace { output } => {
                ctx.stats.flagged_outputs += 1;
                OutputVerdict::Pass(output)
            }
            OutputReply::Stop { output } => {
                ctx.stats.flagged_outputs += 1;
                OutputVerdict::Stop(output)
            }
        })
    }

    async fn review_answer(
        &mut self,
        answer: &str,
        ctx: &mut DefenseCtx<'_>,
    ) -> Result<Option<String>, DefenseError> {
        let request = Request::FinalAnswer { answer }.encode();
        let reply: AnswerReply = self.exchange(request, ctx).await?;
        if let AnswerReply::Replace { answer: new } = &reply {
            self.check_replacement("final_answer", "answer", answer, new)?;
        }
        self.release("final_answer").await?;
        Ok(match reply {
            AnswerReply::Allow {} => None,
            AnswerReply::Replace { answer } => Some(answer),
        })
    }

    fn notes(&self) -> Value {
        json!({"plugin": self.command, "usage_reports": self.usage_reports})
    }
}

/// An episode that ended before `final_answer` (a stop, a block that ended it, an error
/// elsewhere) hands back a process that is between exchanges; one dropped mid-exchange
/// is killed.
impl Drop for PluginEpisode {
    fn drop(&mut self) {
        if let Some(p) = self.process.take()
            && self.reuse
            && self.clean
            && p.alive()
        {
            self.idle.lock().expect("plugin pool lock").push(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_typed_per_hook_and_unknown_fields_refused() {
        let call = |v: Value| serde_json::from_value::<CallReply>(v);
        assert!(matches!(
            call(json!({"action": "block", "reason": "r"})).unwrap(),
            CallReply::Block { .. }
        ));
        assert!(matches!(
            call(json!({"action": "allow"})).unwrap(),
            CallReply::Allow {}
        ));
        for bad in [
            json!({"action": "allow", "reasn": "typo"}),
            json!({"action": "block"}),
            json!({"action": "pass"}),
            json!({"reason": "no action"}),
        ] {
            assert!(call(bad.clone()).is_err(), "{bad}");
        }
        let out = serde_json::from_value::<OutputReply>(json!({"action": "allow"}));
        assert!(out.unwrap_err().to_string().contains("unknown variant"));
        let usage = serde_json::from_value::<UsageReport>(json!({"component": "oracle"}));
        assert!(usage.is_err());
    }
}
