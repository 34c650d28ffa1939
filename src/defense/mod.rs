//! Defenses: one trait with hooks into the agent loop, one module per defense.
//!
//! A [`Defense`] is shared by the whole run and makes a fresh [`EpisodeDefense`] for each
//! episode, which holds per-episode state (an intent graph, a cache of masked calls).
//! Each hook has a default that does nothing, so a defense implements only what it needs.
//!
//! A defense is its file: `<name>.rs` (or `<name>/mod.rs`) implements [`Defense`] and
//! declares its [`Entry`] as `pub const ENTRY` with the build function the entry points
//! to. This file adds only its `pub mod` line (Rust declares a module in its parent) and
//! one `<name>::ENTRY` line of [`REGISTRY`]; `one_place` checks that it stays so.

pub mod argus;
pub mod audit;
pub mod drift;
pub mod dual_llm;
pub mod ipiguard;
pub mod keyword_filter;
pub mod melon;
pub mod none;
pub mod pi_detector;
pub mod plan_then_execute;
pub mod plugin;
pub mod sandwich;
pub mod scripted_plan;
pub mod sieve;
pub mod spotlight;
pub mod support;
pub mod task_shield;
pub mod tool_filter;

use crate::ids::ToolName;
use crate::model::sim::EpisodeScript;
use crate::model::{ChatReply, ModelError, Models, NamedValue, SimChannel, SimHint};
use crate::suite::Suite;
use crate::tools::ToolSchema;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sieve_record::{Component, CostMeter, Message};
use std::sync::Arc;

/// A tool call the agent proposed, with arguments already parsed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProposedCall {
    pub id: String,
    pub tool: ToolName,
    pub args: Value,
    /// The agent step (model turn) that proposed it, from 0.
    pub step: usize,
}

/// A defense's decision on a proposed call.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Execute it.
    Allow,
    /// Do not execute; tell the agent why.
    Block { reason: String },
    /// Do not execute; show the agent this result as if it had run.
    Fake { result: String },
    /// Would ask the user; no user exists in a benchmark, so it counts as a block and is
    /// reported apart.
    AskUser { reason: String },
    /// Do not execute; tell the agent why and end the episode (MELON on detection).
    Stop { reason: String },
    /// Execute with these arguments instead of the proposed ones (the dual-LLM pattern
    /// fills in values passed by reference).
    Rewrite { args: Value },
}

/// A defense's decision on a tool output.
#[derive(Clone, Debug, PartialEq)]
pub enum OutputVerdict {
    /// Show the agent this (possibly rewritten) text.
    Pass(String),
    /// Show this text and end the episode (MELON's behaviour on detection).
    Stop(String),
}

/// Counters a defense keeps for the episode record.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DefenseStats {
    /// Proposed calls sent to a semantic judge.
    pub escalated: u64,
    /// Escalated calls the judge approved.
    pub approved: u64,
    /// Tool outputs flagged as injected.
    pub flagged_outputs: u64,
}

/// A defense failure (its planner unreachable, say): the episode is recorded as errored.
#[derive(Debug, thiserror::Error)]
pub enum DefenseError {
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error("defense error: {0}")]
    Other(String),
}

/// What a hook may see and use.
pub struct DefenseCtx<'a> {
    pub suite: &'a Suite,
    pub user_prompt: &'a str,
    /// The tools offered to the agent; `start` may narrow them.
    pub tools: &'a mut Vec<ToolSchema>,
    /// The conversation so far.
    pub history: &'a [Message],
    pub models: &'a Models,
    /// The episode's seed: every model call a hook makes carries it.
    pub seed: u64,
    pub script: Option<&'a Arc<EpisodeScript>>,
    pub meter: &'a mut CostMeter,
    pub stats: &'a mut DefenseStats,
}

impl DefenseCtx<'_> {
    /// Calls a model in a defense role and meters it. `sim_reply` is what a perfect model
    /// in this role would answer; only the scripted backend ever sees it.
    pub async fn ask(
        &mut self,
        component: Component,
        messages: &[Message],
        sim_hint: SimHint,
    ) -> Result<ChatReply, ModelError> {
        let model = match component {
            Component::Planner => &self.models.planner,
            _ => &self.models.judge,
        };
        let req = crate::model::ChatRequest {
            component,
            messages,
            tools: &[],
            json: true,
            seed: Some(self.seed),
            sim: self.script.map(|s| SimChannel {
                script: s.clone(),
                hint: sim_hint,
            }),
        };
        let reply = model.chat(&req).await?;
        self.meter.record(component, &reply);
        Ok(reply)
    }

    /// Calls a model in any role with full control of the request (MELON's masked run
    /// offers tools and wants a free-text reply) and meters it under `component`.
    pub async fn ask_with(
        &mut self,
        model: &Arc<dyn crate::model::ChatModel>,
        component: Component,
        messages: &[Message],
        tools: &[ToolSchema],
        json: bool,
        sim_hint: SimHint,
    ) -> Result<ChatReply, ModelError> {
        let req = crate::model::ChatRequest {
            component,
            messages,
            tools,
            json,
            seed: Some(self.seed),
            sim: self.script.map(|s| SimChannel {
                script: s.clone(),
                hint: sim_hint,
            }),
        };
        let reply = model.chat(&req).await?;
        self.meter.record(component, &reply);
        Ok(reply)
    }

    /// Embeds texts with the run's embedder and meters it.
    pub async fn embed(&mut self, texts: &[String]) -> Result<Vec<Vec<f32>>, DefenseError> {
        let out = self
            .models
            .embedder
            .embed(texts)
            .await
            .map_err(|e| match e {
                crate::embed::EmbedError::Model(m) => DefenseError::Model(m),
                other => DefenseError::Other(other.to_string()),
            })?;
        let tokens: u64 = texts.iter().map(|t| self.models.tokens.count(t)).sum();
        self.meter.record_embedding(1, tokens);
        Ok(out)
    }
}

/// A defense's state for one episode.
#[async_trait]
pub trait EpisodeDefense: Send {
    /// Before the first model call: plan, filter tools.
    async fn start(&mut self, _ctx: &mut DefenseCtx<'_>) -> Result<(), DefenseError> {
        Ok(())
    }
    /// Text appended to the system prompt.
    fn system_prompt(&self) -> Option<String> {
        None
    }
    /// Rewrites the conversation sent to the agent model (e.g. repeat the user prompt).
    fn agent_view(&self, _messages: &[Message]) -> Option<Vec<Message>> {
        None
    }
    /// Decides on a proposed call.
    async fn review_call(
        &mut self,
        _call: &ProposedCall,
        _ctx: &mut DefenseCtx<'_>,
    ) -> Result<Verdict, DefenseError> {
        Ok(Verdict::Allow)
    }
    /// Reviews a tool output (of an executed call) before the agent reads it.
    async fn review_output(
        &mut self,
        _call: &ProposedCall,
        output: String,
        _ctx: &mut DefenseCtx<'_>,
    ) -> Result<OutputVerdict, DefenseError> {
        Ok(OutputVerdict::Pass(output))
    }
    /// Sees the agent's final answer; may replace it (a plugin redacting a leak).
    async fn review_answer(
        &mut self,
        _answer: &str,
        _ctx: &mut DefenseCtx<'_>,
    ) -> Result<Option<String>, DefenseError> {
        Ok(None)
    }
    /// Defense-specific facts for the episode record (e.g. why a call passed).
    fn notes(&self) -> Value {
        Value::Null
    }
    /// The values this defense has announced to the agent by name so far, which it fills
    /// in itself where the agent writes the name (a dual LLM's `$VAR1.iban`); the scripted
    /// agent may write such a name for a value it was not shown. Empty for most.
    fn named_values(&self) -> Vec<NamedValue> {
        Vec::new()
    }
}

/// A defense as selected on the command line.
pub trait Defense: Send + Sync {
    /// The name in reports (`sieve:no-causal`).
    fn name(&self) -> &str;
    fn episode(&self) -> Box<dyn EpisodeDefense>;
}

/// Makes a defense from its variant (the text after `name:`) and the run's options.
pub type Builder =
    fn(variant: Option<&str>, opts: &BuildOptions) -> Result<Arc<dyn Defense>, BuildError>;

/// One registered defense: how `list defenses` describes it and how to build it.
pub struct Entry {
    /// The name before any `:variant` (`pi_detector`).
    pub name: &'static str,
    /// The variants accepted after `name:`, for help (`lexical|judge|http=<url>`).
    pub variants: &'static str,
    /// One line: what it does.
    pub mechanism: &'static str,
    /// The paper or project it comes from.
    pub source: &'static str,
    /// What of this defense's effect on a real model the scripted agent cannot represent
    /// (marking, delimiting, reminders, a quarantined reader), for the label of its `sim`
    /// rows; `None` when the scripted roles model all of it.
    pub sim_caveat: Option<&'static str>,
    /// Part of `--defense all`.
    pub in_all: bool,
    /// The role whose model its `detector` requests go to: the judge's, except where the
    /// defense re-runs the agent (MELON's masked run). Budgets and `--dry-run` price and
    /// count those requests on that model ([`model_role`]).
    pub detector_model: Component,
    pub build: Builder,
}

/// Refuses a `:variant` on a defense that has none.
pub fn no_variant(name: &str, variant: Option<&str>) -> Result<(), BuildError> {
    match variant {
        None => Ok(()),
        Some(v) => Err(BuildError::Variant(format!(
            "defense `{name}` takes no variant, got `{name}:{v}`"
        ))),
    }
}

/// Why a defense could not be built from its command-line name.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// No registered defense has that name.
    #[error(
        "unknown defense `{spec}`{}; available: {}",
        crate::suggest::did_you_mean(name, REGISTRY.iter().map(|e| e.name)),
        names().join(", ")
    )]
    Unknown { spec: String, name: String },
    /// The variant or setting after the name is not one the defense takes.
    #[error("{0}")]
    Variant(String),
    /// A baseline's variant or option refused (`support::VariantError`).
    #[error(transparent)]
    Option(#[from] support::VariantError),
    /// SIEVE's configuration refused the variant or the setting.
    #[error(transparent)]
    Sieve(#[from] sieve::config::SieveConfigError),
    /// An `exec:` plugin given without a command.
    #[error(transparent)]
    Plugin(#[from] plugin::NoCommand),
}

/// Every defense `--defense` accepts besides `exec:<command>`, in the order of the main
/// table: one line per defense, its entry declared in its own file.
pub const REGISTRY: &[Entry] = &[
    none::ENTRY,
    audit::ENTRY,
    sieve::ENTRY,
    spotlight::ENTRY,
    sandwich::ENTRY,
    tool_filter::ENTRY,
    pi_detector::ENTRY,
    keyword_filter::ENTRY,
    plan_then_execute::ENTRY,
    dual_llm::ENTRY,
    melon::ENTRY,
    ipiguard::ENTRY,
    task_shield::ENTRY,
    drift::ENTRY,
    argus::ENTRY,
];

/// Looks a registered defense up by name.
pub fn entry(name: &str) -> Option<&'static Entry> {
    REGISTRY.iter().find(|e| e.name == name)
}

/// The role whose model serves a defense's `c` requests (the defense as records name
/// it, `melon:threshold=0.5`): `c` itself, except a `detector` request of a defense that
/// runs it on another role's model. An `exec:` plugin's requests are its own.
pub fn model_role(defense: &str, c: Component) -> Component {
    match entry(DefenseSpec::parse(defense).registered()) {
        Some(e) if c == Component::Detector => e.detector_model,
        _ => c,
    }
}

/// What of a defense's effect (as named in records, `spotlight:datamark`) the scripted
/// agent cannot represent, for the label of its simulated rows.
pub fn sim_caveat(defense: &str) -> Option<&'static str> {
    entry(DefenseSpec::parse(defense).registered()).and_then(|e| e.sim_caveat)
}

/// A defense as `--defense` and the records name it: the registered defense with its
/// variant (`sieve:no_layer1`) and, for a point of a sensitivity sweep (`ablate
/// --sweep`), the one setting it moves (`sieve@threshold=0.4`). A point's name is written
/// (`Display`) and read ([`DefenseSpec::read`], leniently [`DefenseSpec::parse`]) here
/// only; building and reports read its parts through [`DefenseSpec::registered`],
/// [`DefenseSpec::variant`], [`DefenseSpec::command`] and the point's fields.
#[derive(Clone, Debug, PartialEq)]
pub struct DefenseSpec {
    /// The defense with its variant (`sieve`, `sieve:no_layer1`).
    pub name: String,
    /// The sweep point, when the defense is one.
    pub point: Option<SweepPoint>,
}

/// One setting of a defense moved to one value (`threshold` at 0.4).
#[derive(Clone, Debug, PartialEq)]
pub struct SweepPoint {
    pub setting: String,
    pub value: f64,
}

impl DefenseSpec {
    /// `name` with `setting` moved to `value`.
    pub fn point(name: &str, setting: &str, value: f64) -> DefenseSpec {
        DefenseSpec {
            name: name.to_string(),
            point: Some(SweepPoint {
                setting: setting.to_string(),
                value,
            }),
        }
    }

    /// Reads a defense's name as `--defense` gives it (trimmed): `name[:variant]`, then
    /// optionally `@<setting>=<value>` with a setting SIEVE takes and a value in [0,1]
    /// (whether the defense takes a setting is for building to say). An `exec:<command>`
    /// is read whole: a command may hold `:` and `@`.
    pub fn read(text: &str) -> Result<DefenseSpec, BuildError> {
        let text = text.trim();
        let whole = || DefenseSpec {
            name: text.to_string(),
            point: None,
        };
        if text.starts_with(EXEC) {
            return Ok(whole());
        }
        let Some((name, point)) = text.split_once('@') else {
            return Ok(whole());
        };
        let o = sieve::config::Override::parse(point)
            .map_err(|e| BuildError::Variant(format!("`{text}`: {e}")))?;
        Ok(DefenseSpec::point(name.trim(), &o.setting(), o.value()))
    }

    /// Reads a defense's name as the records hold it. A name [`DefenseSpec::read`]
    /// refuses is no sweep point and is its own `name`, whatever it holds (building it
    /// says what is wrong with it).
    pub fn parse(text: &str) -> DefenseSpec {
        DefenseSpec::read(text).unwrap_or_else(|_| DefenseSpec {
            name: text.to_string(),
            point: None,
        })
    }

    /// The registered defense: the name before any `:variant` (`sieve` of
    /// `sieve:no-sem@threshold=0.4`; `exec` of a plugin).
    pub fn registered(&self) -> &str {
        self.name.split_once(':').map_or(&self.name, |(n, _)| n)
    }

    /// The variant after `name:` (`no-sem`), trimmed; `None` for a plugin.
    pub fn variant(&self) -> Option<&str> {
        if self.command().is_some() {
            return None;
        }
        self.name.split_once(':').map(|(_, v)| v.trim())
    }

    /// The command of an `exec:<command>` plugin, as given.
    pub fn command(&self) -> Option<&str> {
        self.name.strip_prefix(EXEC)
    }
}

/// How `--defense` names a plugin: `exec:<command>`.
const EXEC: &str = "exec:";

impl std::fmt::Display for DefenseSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)?;
        if let Some(p) = &self.point {
            write!(f, "@{}={}", p.setting, p.value)?;
        }
        Ok(())
    }
}

/// Names accepted by `--defense`, for help and error messages.
pub fn names() -> Vec<String> {
    let mut v: Vec<String> = REGISTRY
        .iter()
        .map(|e| {
            if e.variants.is_empty() {
                e.name.to_string()
            } else {
                format!("{}[:{}]", e.name, e.variants)
            }
        })
        .collect();
    v.push("exec:<command>".into());
    v.push("all".into());
    v
}

/// Expands a comma-separated `--defense` value: `all` stands for every registered
/// defense in registry order. An `exec:` command keeps its commas.
pub fn expand(spec: &str) -> Vec<String> {
    let spec = spec.trim();
    if spec.starts_with(EXEC) {
        return vec![spec.to_string()];
    }
    let mut out: Vec<String> = Vec::new();
    for d in spec.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        if d == "all" {
            out.extend(
                REGISTRY
                    .iter()
                    .filter(|e| e.in_all)
                    .map(|e| e.name.to_string()),
            );
        } else {
            out.push(d.to_string());
        }
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|d| seen.insert(d.clone()));
    out
}

/// What defenses may be configured with beyond their name.
#[derive(Clone, Default)]
pub struct BuildOptions {
    /// SIEVE's config (variants, trust and risk tables); the built-in one when `None`.
    pub sieve_config: Option<Arc<sieve::config::SieveConfig>>,
    /// An ad-hoc weight set for `sieve` and `audit` (`--weights`).
    pub weights: Option<sieve::config::Weights>,
    /// How long an `exec:` plugin may take per hook.
    pub plugin_timeout: Option<std::time::Duration>,
    /// The longest reply line an `exec:` plugin may send, in bytes.
    pub plugin_max_reply: Option<usize>,
}

impl BuildOptions {
    fn sieve(&self) -> Arc<sieve::config::SieveConfig> {
        self.sieve_config
            .clone()
            .unwrap_or_else(|| Arc::new(sieve::config::SieveConfig::builtin()))
    }
}

/// Builds a defense from its command-line name.
pub fn build(spec: &str) -> Result<Arc<dyn Defense>, BuildError> {
    build_with(spec, &BuildOptions::default())
}

/// Builds a defense from its command-line name and options.
pub fn build_with(spec: &str, opts: &BuildOptions) -> Result<Arc<dyn Defense>, BuildError> {
    build_spec(&DefenseSpec::read(spec)?, opts)
}

/// Builds a defense from its name as read.
fn build_spec(spec: &DefenseSpec, opts: &BuildOptions) -> Result<Arc<dyn Defense>, BuildError> {
    if let Some(cmd) = spec.command() {
        return Ok(Arc::new(plugin::PluginDefense::with_limits(
            cmd,
            opts.plugin_timeout.unwrap_or(plugin::DEFAULT_TIMEOUT),
            opts.plugin_max_reply
                .unwrap_or(crate::child::DEFAULT_MAX_REPLY),
        )?));
    }
    let (name, variant) = (spec.registered(), spec.variant());
    // `sieve[:variant]@setting=value`: one setting moved, a point of a sweep.
    if let Some(point) = &spec.point {
        if name != sieve::ENTRY.name {
            return Err(BuildError::Variant(format!(
                "`{}@…`: only sieve and its variants take a setting after `@`",
                spec.name
            )));
        }
        let tweak = sieve::config::Override::new(&point.setting, point.value)?;
        let weights = if variant.is_none() {
            opts.weights
        } else {
            None
        };
        let d = sieve::SieveDefense::new(sieve::Mode::Sieve, opts.sieve(), variant, weights)?;
        return Ok(Arc::new(d.with_override(tweak)?));
    }
    match entry(name) {
        Some(e) => (e.build)(variant, opts),
        None => Err(BuildError::Unknown {
            spec: spec.name.clone(),
            name: name.to_string(),
        }),
    }
}

#[cfg(test)]
mod one_place;

#[cfg(test)]
mod tests {
    use super::*;

    fn read_err(text: &str) -> String {
        DefenseSpec::read(text).unwrap_err().to_string()
    }

    #[test]
    fn read_gives_the_registered_name_and_the_variant() {
        let plain = DefenseSpec::read(" melon ").unwrap();
        assert_eq!((plain.name.as_str(), plain.point.as_ref()), ("melon", None));
        assert_eq!((plain.registered(), plain.variant()), ("melon", None));
        let v = DefenseSpec::read("spotlight: datamark").unwrap();
        assert_eq!(v.registered(), "spotlight");
        assert_eq!(v.variant(), Some("datamark"));
        assert_eq!(v.command(), None);
        // A variant may hold `=` and `:` (`pi_detector:http=<url>`).
        let url = DefenseSpec::read("pi_detector:http=http://h:1/x").unwrap();
        assert_eq!(url.registered(), "pi_detector");
        assert_eq!(url.variant(), Some("http=http://h:1/x"));
        assert_eq!(url.point, None);
    }

    #[test]
    fn read_gives_a_sweep_point_and_display_writes_it_back() {
        let p = DefenseSpec::read("sieve:no-sem @ threshold = 0.4").unwrap();
        assert_eq!(p, DefenseSpec::point("sieve:no-sem", "threshold", 0.4));
        assert_eq!((p.registered(), p.variant()), ("sieve", Some("no-sem")));
        assert_eq!(p.to_string(), "sieve:no-sem@threshold=0.4");
        let w = DefenseSpec::read("sieve@w_causal=0.5").unwrap();
        assert_eq!(w, DefenseSpec::point("sieve", "w_causal", 0.5));
        assert_eq!(DefenseSpec::read(&w.to_string()).unwrap(), w);
        assert_eq!(DefenseSpec::parse("sieve@w_causal=0.5"), w);
    }

    #[test]
    fn read_refuses_a_bad_setting_with_the_text_it_was_given() {
        assert_eq!(
            read_err("sieve@threshold"),
            "`sieve@threshold`: expected <setting>=<value>, got `threshold`"
        );
        assert_eq!(
            read_err(" sieve@threshold=1.5 "),
            "`sieve@threshold=1.5`: `threshold` needs a value in [0,1], got `1.5`"
        );
        assert_eq!(
            read_err("sieve@depth=0.5"),
            "`sieve@depth=0.5`: unknown setting `depth`; use threshold, w_sem, w_causal, w_prov or w_risk"
        );
        assert!(read_err("sieve@w_foo=0.5").contains("unknown S_align term `foo`"));
        // Records keep a name the strict reader refuses as a plain name.
        let kept = DefenseSpec::parse("sieve@threshold=x");
        assert_eq!(kept.name, "sieve@threshold=x");
        assert_eq!(kept.point, None);
    }

    #[test]
    fn a_plugin_is_read_whole() {
        let p = DefenseSpec::read("exec:python3 d.py --url http://a@b:1").unwrap();
        assert_eq!(p.command(), Some("python3 d.py --url http://a@b:1"));
        assert_eq!((p.registered(), p.variant()), ("exec", None));
        assert_eq!(p.point, None);
    }

    #[test]
    fn building_reads_the_name_once() {
        let e = |s: &str| build(s).err().map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(
            e("melon@threshold=0.5"),
            "`melon@…`: only sieve and its variants take a setting after `@`"
        );
        assert!(e("sieve@threshold=2").contains("needs a value in [0,1]"));
        assert!(e("nosuch").starts_with("unknown defense `nosuch`"));
        assert_eq!(
            build("sieve@threshold=0.35").unwrap().name(),
            "sieve@threshold=0.35"
        );
        assert_eq!(
            model_role("melon:x@threshold=0.5", Component::Detector),
            melon::ENTRY.detector_model
        );
        assert_eq!(
            sim_caveat("spotlight:datamark"),
            spotlight::ENTRY.sim_caveat
        );
    }
}
