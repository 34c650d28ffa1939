//! What an episode spent: calls and tokens per component, as records keep them.

use crate::role::Component;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Token usage of one call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    #[serde(default)]
    pub reasoning_tokens: u64,
    /// Counted locally with a tokenizer rather than reported by the endpoint.
    #[serde(default)]
    pub estimated: bool,
}

/// Cost of one component over an episode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CostTotals {
    /// Model (or classifier, or embedding) requests.
    pub calls: u64,
    /// Prompt tokens over those requests.
    pub prompt_tokens: u64,
    /// Completion tokens over those requests.
    pub completion_tokens: u64,
    #[serde(default)]
    pub reasoning_tokens: u64,
    #[serde(default)]
    pub latency_ms: f64,
    #[serde(default)]
    pub retries: u64,
    /// Some counts came from the local tokenizer rather than the endpoint.
    #[serde(default)]
    pub estimated: bool,
    /// Replies cut at the completion token cap (`finish_reason: "length"`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub truncated: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl CostTotals {
    pub fn tokens(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }
    /// Adds another total; counts saturate rather than wrap (an endpoint or plugin can
    /// report any number).
    pub fn add(&mut self, o: &CostTotals) {
        self.calls = self.calls.saturating_add(o.calls);
        self.prompt_tokens = self.prompt_tokens.saturating_add(o.prompt_tokens);
        self.completion_tokens = self.completion_tokens.saturating_add(o.completion_tokens);
        self.reasoning_tokens = self.reasoning_tokens.saturating_add(o.reasoning_tokens);
        self.latency_ms += o.latency_ms;
        self.retries = self.retries.saturating_add(o.retries);
        self.estimated |= o.estimated;
        self.truncated = self.truncated.saturating_add(o.truncated);
    }
}

/// What the meter reads of one model reply (the main crate's `ChatReply` is one).
pub trait MeteredCall {
    fn usage(&self) -> Usage;
    fn latency_ms(&self) -> f64;
    /// Transport retries spent on the call.
    fn retries(&self) -> u64;
    /// The reply was cut at the completion token cap (`finish_reason: "length"`).
    fn truncated(&self) -> bool;
    /// The model id the endpoint says served the reply.
    fn served_model(&self) -> Option<&str>;
}

/// Per-episode cost, split by component so a defense's overhead is visible apart from
/// the agent's own spending.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CostMeter {
    /// Per component (keys `agent`, `planner`, `judge`, `detector`, `embedding`,
    /// `answer_judge`, and `attacker` in a search's cost), its calls and tokens.
    #[serde(flatten)]
    pub by_component: BTreeMap<Component, CostTotals>,
    /// The model ids endpoints said served each component's calls (lineage). Not part of
    /// the serialised cost: the runner moves it to the record's `served_models`.
    #[serde(skip)]
    pub served: BTreeMap<Component, BTreeSet<String>>,
}

impl CostMeter {
    /// Records one model call of `component`.
    pub fn record(&mut self, component: Component, reply: &impl MeteredCall) {
        let usage = reply.usage();
        self.by_component
            .entry(component)
            .or_default()
            .add(&CostTotals {
                calls: 1,
                prompt_tokens: usage.prompt_tokens,
                completion_tokens: usage.completion_tokens,
                reasoning_tokens: usage.reasoning_tokens,
                latency_ms: reply.latency_ms(),
                retries: reply.retries(),
                estimated: usage.estimated,
                truncated: u64::from(reply.truncated()),
            });
        if let Some(m) = reply.served_model() {
            self.served
                .entry(component)
                .or_default()
                .insert(m.to_string());
        }
    }

    /// Records calls that did not go through a chat model (a classifier endpoint, a
    /// plugin's own model use), with the usage they report.
    pub fn record_usage(&mut self, component: Component, calls: u64, usage: Usage) {
        self.by_component
            .entry(component)
            .or_default()
            .add(&CostTotals {
                calls,
                prompt_tokens: usage.prompt_tokens,
                completion_tokens: usage.completion_tokens,
                reasoning_tokens: usage.reasoning_tokens,
                estimated: usage.estimated,
                ..Default::default()
            });
    }

    /// Records embedding calls (one API call embeds a batch).
    pub fn record_embedding(&mut self, calls: u64, tokens: u64) {
        self.by_component
            .entry(Component::Embedding)
            .or_default()
            .add(&CostTotals {
                calls,
                prompt_tokens: tokens,
                ..Default::default()
            });
    }

    /// Adds another meter's totals, component by component.
    pub fn add(&mut self, o: &CostMeter) {
        for (c, t) in &o.by_component {
            self.by_component.entry(*c).or_default().add(t);
        }
    }

    pub fn total(&self) -> CostTotals {
        let mut t = CostTotals::default();
        for c in self.by_component.values() {
            t.add(c);
        }
        t
    }

    pub fn get(&self, c: Component) -> CostTotals {
        self.by_component.get(&c).copied().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meter_counts_saturate_instead_of_wrapping() {
        let mut m = CostMeter::default();
        let huge = Usage {
            prompt_tokens: u64::MAX / 2 + 1,
            completion_tokens: 1,
            reasoning_tokens: 0,
            estimated: false,
        };
        m.record_usage(Component::Judge, u64::MAX, huge);
        m.record_usage(Component::Judge, 1, huge);
        let t = m.get(Component::Judge);
        assert_eq!((t.calls, t.prompt_tokens), (u64::MAX, u64::MAX));
        assert_eq!(m.total().tokens(), u64::MAX);
    }

    struct Reply;
    impl MeteredCall for Reply {
        fn usage(&self) -> Usage {
            Usage {
                prompt_tokens: 10,
                completion_tokens: 2,
                reasoning_tokens: 1,
                estimated: true,
            }
        }
        fn latency_ms(&self) -> f64 {
            1.5
        }
        fn retries(&self) -> u64 {
            2
        }
        fn truncated(&self) -> bool {
            true
        }
        fn served_model(&self) -> Option<&str> {
            Some("m-1")
        }
    }

    #[test]
    fn a_call_is_metered_per_component_and_served_models_stay_off_disk() {
        let mut m = CostMeter::default();
        m.record(Component::Agent, &Reply);
        m.record(Component::Agent, &Reply);
        let t = m.get(Component::Agent);
        assert_eq!(
            (t.calls, t.prompt_tokens, t.retries, t.truncated),
            (2, 20, 4, 2)
        );
        assert!(t.estimated);
        assert_eq!(m.served[&Component::Agent].len(), 1);
        let text = serde_json::to_string(&m).unwrap();
        assert!(text.starts_with(r#"{"agent":{"calls":2,"#), "{text}");
        assert!(
            !text.contains("m-1"),
            "lineage is the record's, not the cost's"
        );
        let back: CostMeter = serde_json::from_str(&text).unwrap();
        assert_eq!(back.by_component, m.by_component);
    }
}
