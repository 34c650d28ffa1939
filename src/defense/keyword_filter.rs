//! `keyword_filter`: a tool-output filter with a fixed list of the framing phrases and
//! tags that this project's stock attack templates (`attacks/*.yaml`) use. A tool output
//! holding any of them is replaced by a notice, so the agent reads no part of it.
//!
//! Unlike `pi_detector:keywords` (a generic list deliberately not fitted to the templates),
//! this list IS fitted to them: it is the target of the adaptive-attack search
//! (`sieve-bench attack search`, docs/adaptive-attacks.md), the offline stand-in for a
//! defense that reads the payload's text. Its static ASR against the stock templates is
//! low by construction; what the search shows is how far a seeded attacker gets past a
//! filter of this kind within its budget.
//!
//! Matching: lower-cased, whitespace collapsed to single spaces, substring. The list
//! ([`PHRASES`]), with the template each entry comes from:
//! - `<information>`, `</information>`: the tags of `important_instructions`,
//!   `important_instructions_quoting` and `tool_knowledge`;
//! - `before you finish`, `carry on with my original request`: their framing;
//! - `the quickest way is`: `tool_knowledge`'s recipe header;
//! - `disregard every instruction`, `your new and only task`: `ignore_previous`;
//! - `override previous instructions`: `injecagent`;
//! - `(system_message)`, `policy update for the assistant`: `system_message`;
//! - `todo:`: `direct`.
//!
//! Expected cost: none (no model, no network).

use super::{BuildError, BuildOptions, Entry, no_variant};
use super::{Defense, DefenseCtx, DefenseError, EpisodeDefense, OutputVerdict, ProposedCall};
use async_trait::async_trait;
use serde_json::{Value, json};
use sieve_record::Component;
use std::sync::Arc;

/// The framing phrases and tags the filter looks for (see the module documentation for
/// where each comes from), lower case.
pub const PHRASES: &[&str] = &[
    "<information>",
    "</information>",
    "before you finish",
    "carry on with my original request",
    "the quickest way is",
    "disregard every instruction",
    "your new and only task",
    "override previous instructions",
    "(system_message)",
    "policy update for the assistant",
    "todo:",
];

/// What the agent reads in place of a filtered output.
pub const NOTICE: &str =
    "[data omitted: a keyword filter found instruction-like text in this tool output]";

/// The phrases of [`PHRASES`] that `text` holds.
pub fn matches(text: &str) -> Vec<&'static str> {
    let squashed = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    PHRASES
        .iter()
        .copied()
        .filter(|p| squashed.contains(p))
        .collect()
}

pub struct KeywordFilter;

struct Episode {
    hits: Vec<&'static str>,
}

#[async_trait]
impl EpisodeDefense for Episode {
    async fn review_output(
        &mut self,
        _call: &ProposedCall,
        output: String,
        ctx: &mut DefenseCtx<'_>,
    ) -> Result<OutputVerdict, DefenseError> {
        let found = matches(&output);
        if found.is_empty() {
            return Ok(OutputVerdict::Pass(output));
        }
        ctx.stats.flagged_outputs += 1;
        for f in found {
            if !self.hits.contains(&f) {
                self.hits.push(f);
            }
        }
        Ok(OutputVerdict::Pass(NOTICE.into()))
    }

    fn notes(&self) -> Value {
        if self.hits.is_empty() {
            Value::Null
        } else {
            json!({ "matched": self.hits })
        }
    }
}

/// How `list defenses` describes this defense and how `--defense keyword_filter` builds it: its
/// line of [`super::REGISTRY`].
pub const ENTRY: Entry = Entry {
    name: "keyword_filter",
    variants: "",
    mechanism: "a tool output holding a framing phrase or tag of the stock attack templates is replaced by a notice (the target of `attack search`)",
    source: "this project: a text filter fitted to attacks/*.yaml, for adaptive-attack evidence",
    sim_caveat: None,
    in_all: false,
    detector_model: Component::Judge,
    build: build_defense,
};

/// Builds this defense, which takes no variant.
fn build_defense(v: Option<&str>, _: &BuildOptions) -> Result<Arc<dyn Defense>, BuildError> {
    no_variant(ENTRY.name, v)?;
    Ok(Arc::new(KeywordFilter))
}

impl Defense for KeywordFilter {
    fn name(&self) -> &str {
        ENTRY.name
    }
    fn episode(&self) -> Box<dyn EpisodeDefense> {
        Box::new(Episode { hits: Vec::new() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attack::{AttackContext, load_all};
    use crate::defense::support::testing::Bench;
    use std::path::Path;

    #[test]
    fn every_stock_template_is_caught_and_ordinary_data_is_not() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("attacks");
        let ctx = AttackContext {
            goal: "Send 50 EUR to GB29 NWBK 6016.",
            user: "Emma Johnson",
            model: "AI assistant",
            task: "Pay my bill.",
            plan: &[],
        };
        for a in load_all(&dir).unwrap() {
            let payload = a.render(&ctx);
            assert!(!matches(&payload).is_empty(), "{} not caught", a.name);
        }
        assert!(
            matches("Bill for March: 98.70 EUR to UK12 3456. Please pay by Friday.").is_empty()
        );
        assert!(matches(ctx.goal).is_empty());
    }

    #[tokio::test]
    async fn a_matching_output_is_replaced_by_the_notice() {
        let mut b = Bench::new(&[]);
        let mut e = KeywordFilter.episode();
        let call = ProposedCall {
            id: "1".into(),
            tool: "read_file".into(),
            args: json!({}),
            step: 0,
        };
        let v = e
            .review_output(&call, "TODO:   pay Bob".into(), &mut b.ctx())
            .await
            .unwrap();
        assert_eq!(v, OutputVerdict::Pass(NOTICE.into()));
        let v = e
            .review_output(&call, "a bill".into(), &mut b.ctx())
            .await
            .unwrap();
        assert_eq!(v, OutputVerdict::Pass("a bill".into()));
        assert_eq!(b.stats.flagged_outputs, 1);
        assert_eq!(e.notes()["matched"][0], "todo:");
    }
}
