//! Attack templates and payload rendering.
//!
//! An attack is a text template (`attacks/<name>.yaml`) with `{goal}`, `{user}`,
//! `{model}`, `{task}` and `{tools}` fields. The payload is placed in every injection
//! vector that the user task's reference plan reads (found by a canary run at suite
//! load), as AgentDojo does.

use crate::suite::PlannedCall;
use serde::Deserialize;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// The name that selects a suite's own context-aware samples (`samples.yaml`) instead of
/// a template, and its alias.
pub const CONTEXT: &str = "context";
pub const CONTEXT_ALIAS: &str = "agentlure";

/// What `--attack` selected: templates, and whether the suites' samples run too.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    pub templates: Vec<Attack>,
    /// Run every sample of `samples.yaml` as its own attacked episode (`context`).
    pub context: bool,
}

/// Fields a template may use.
pub const FIELDS: &[&str] = &["goal", "user", "model", "task", "tools"];

/// A loaded attack template.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Attack {
    pub name: String,
    #[serde(default)]
    pub aliases: Vec<String>,
    /// `agentdojo` for generic templates.
    #[serde(default = "default_family")]
    pub family: String,
    #[serde(default)]
    pub description: String,
    pub template: String,
}

fn default_family() -> String {
    "agentdojo".into()
}

/// What a template is filled with.
pub struct AttackContext<'a> {
    /// The injection task's goal.
    pub goal: &'a str,
    /// The user's name (from the suite).
    pub user: &'a str,
    /// A display name for the agent's model.
    pub model: &'a str,
    /// The user's request.
    pub task: &'a str,
    /// The injection task's reference plan, for recipe-style attacks.
    pub plan: &'a [PlannedCall],
}

/// A problem with an attack file.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {message}")]
pub struct AttackError {
    pub file: PathBuf,
    pub message: String,
}

/// Writes the injection plan as a numbered list of calls.
pub fn recipe(plan: &[PlannedCall]) -> String {
    let mut out = String::new();
    for (i, call) in plan.iter().enumerate() {
        let args = serde_json::to_string(&call.args).expect("args serialise");
        writeln!(
            out,
            "{}. call `{}` with arguments {}",
            i + 1,
            call.tool,
            args
        )
        .unwrap();
    }
    out.trim_end().to_string()
}

fn placeholders(template: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close)
                if after[..close]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_')
                    && close > 0 =>
            {
                out.push(&after[..close]);
                rest = &after[close + 1..];
            }
            _ => rest = after,
        }
    }
    out
}

impl Attack {
    /// Renders the payload.
    pub fn render(&self, ctx: &AttackContext) -> String {
        let mut out = self.template.clone();
        for (field, value) in [
            ("goal", ctx.goal.to_string()),
            ("user", ctx.user.to_string()),
            ("model", ctx.model.to_string()),
            ("task", ctx.task.to_string()),
            ("tools", recipe(ctx.plan)),
        ] {
            out = out.replace(&format!("{{{field}}}"), &value);
        }
        out.trim().to_string()
    }

    /// SHA-256 of the template: records carry it, so a resumed run never mixes payloads
    /// of two versions of an attack.
    pub fn fingerprint(&self) -> String {
        use sha2::{Digest, Sha256};
        Sha256::digest(self.template.as_bytes())
            .iter()
            .take(8)
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// Whether `name` selects this attack (its name or an alias).
    pub fn answers_to(&self, name: &str) -> bool {
        self.name == name || self.aliases.iter().any(|a| a == name)
    }

    fn validate(&self, file: &Path) -> Result<(), AttackError> {
        let err = |message: String| AttackError {
            file: file.to_path_buf(),
            message,
        };
        if self.name.trim().is_empty() {
            return Err(err("`name` is empty".into()));
        }
        for p in placeholders(&self.template) {
            if !FIELDS.contains(&p) {
                return Err(err(format!(
                    "template uses unknown field `{{{p}}}`; known: {}",
                    FIELDS
                        .iter()
                        .map(|f| format!("{{{f}}}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
        }
        if !self.template.contains("{goal}") && !self.template.contains("{tools}") {
            return Err(err(
                "template never states the attacker's goal: use {goal} or {tools}".into(),
            ));
        }
        Ok(())
    }
}

/// Loads every `*.yaml` in the attacks folder, sorted by name.
pub fn load_all(dir: &Path) -> Result<Vec<Attack>, AttackError> {
    let read_err = |message: String| AttackError {
        file: dir.to_path_buf(),
        message,
    };
    let entries = std::fs::read_dir(dir).map_err(|e| {
        read_err(format!(
            "cannot read attacks directory: {e}; run from the repository root, or pass --attacks-dir or set SIEVE_BENCH_HOME"
        ))
    })?;
    let mut attacks: Vec<Attack> = Vec::new();
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    paths.sort();
    for path in paths {
        let text = std::fs::read_to_string(&path).map_err(|e| AttackError {
            file: path.clone(),
            message: e.to_string(),
        })?;
        let attack: Attack = serde_saphyr::from_str(&text).map_err(|e| AttackError {
            file: path.clone(),
            message: format!("invalid attack file: {e}"),
        })?;
        attack.validate(&path)?;
        if let Some(reserved) = std::iter::once(&attack.name)
            .chain(&attack.aliases)
            .find(|n| *n == CONTEXT || *n == CONTEXT_ALIAS)
        {
            return Err(AttackError {
                file: path.clone(),
                message: format!(
                    "`{reserved}` is reserved for the suites' context-aware samples (samples.yaml)"
                ),
            });
        }
        for other in &attacks {
            let names = std::iter::once(&attack.name).chain(&attack.aliases);
            if let Some(clash) = names.into_iter().find(|n| other.answers_to(n)) {
                return Err(AttackError {
                    file: path.clone(),
                    message: format!(
                        "name or alias `{clash}` is already used by attack `{}`",
                        other.name
                    ),
                });
            }
        }
        attacks.push(attack);
    }
    attacks.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(attacks)
}

/// Resolves `--attack`: `none` (clean runs only), `all` (every template and the
/// samples), `context` (alias `agentlure`: the samples), or comma-separated names and
/// aliases.
pub fn select(all: &[Attack], selector: &str) -> Result<Selection, String> {
    let mut out: Vec<Attack> = Vec::new();
    let mut context = false;
    for part in selector.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if part == "none" {
            continue;
        }
        if part == CONTEXT || part == CONTEXT_ALIAS || part == "all" {
            context = true;
            if part != "all" {
                continue;
            }
        }
        let matched: Vec<&Attack> = if part == "all" {
            all.iter().collect()
        } else {
            all.iter().filter(|a| a.answers_to(part)).collect()
        };
        if matched.is_empty() {
            let names: Vec<String> = all
                .iter()
                .map(|a| {
                    if a.aliases.is_empty() {
                        a.name.clone()
                    } else {
                        format!("{} ({})", a.name, a.aliases.join(", "))
                    }
                })
                .collect();
            return Err(format!(
                "unknown attack `{part}`; available: none, all, {CONTEXT} ({CONTEXT_ALIAS}), {}",
                names.join(", ")
            ));
        }
        for a in matched {
            if !out.iter().any(|o| o.name == a.name) {
                out.push(a.clone());
            }
        }
    }
    Ok(Selection {
        templates: out,
        context,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn attack(template: &str) -> Attack {
        Attack {
            name: "t".into(),
            aliases: vec!["tt".into()],
            family: "agentdojo".into(),
            description: String::new(),
            template: template.into(),
        }
    }

    #[test]
    fn renders_every_field() {
        let plan = vec![PlannedCall {
            tool: "send_money".into(),
            args: json!({"amount": 5}),
        }];
        let ctx = AttackContext {
            goal: "pay me",
            user: "Ann",
            model: "M",
            task: "do x",
            plan: &plan,
        };
        let out = attack("{user}/{model}/{task}/{goal}\n{tools}").render(&ctx);
        assert_eq!(
            out,
            "Ann/M/do x/pay me\n1. call `send_money` with arguments {\"amount\":5}"
        );
    }

    #[test]
    fn rejects_unknown_fields_and_goalless_templates() {
        let p = Path::new("a.yaml");
        assert!(
            attack("{goal} {colour}")
                .validate(p)
                .unwrap_err()
                .message
                .contains("{colour}")
        );
        assert!(attack("hello {user}").validate(p).is_err());
        assert!(attack("{goal}").validate(p).is_ok());
    }

    #[test]
    fn selects_by_alias_and_lists_names_on_error() {
        let all = vec![attack("{goal}")];
        assert_eq!(select(&all, "tt").unwrap().templates.len(), 1);
        assert_eq!(select(&all, "none").unwrap().templates.len(), 0);
        let e = select(&all, "zzz").unwrap_err();
        assert!(e.contains("t (tt)"), "{e}");
        assert!(e.contains("context (agentlure)"), "{e}");
    }

    #[test]
    fn context_selects_the_samples_and_all_includes_them() {
        let all = vec![attack("{goal}")];
        for sel in ["context", "agentlure"] {
            let s = select(&all, sel).unwrap();
            assert!(s.context && s.templates.is_empty());
        }
        let s = select(&all, "all").unwrap();
        assert!(s.context && s.templates.len() == 1);
        assert!(!select(&all, "t").unwrap().context);
    }
}
