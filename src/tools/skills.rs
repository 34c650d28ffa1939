//! Skills: named instruction sets the assistant can load and follow, as agent
//! frameworks ship them. A skill is a surface because whoever wrote it steers every task
//! that loads it.
//!
//! Environment layout: `skills` is a list of `{name, summary, instructions}`; names are
//! matched exactly first, then case-insensitively.

use super::{NoArgs, Tool, ToolError, ToolKind, array_at};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

const SKILLS: &str = "skills";

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SkillName {
    /// The skill's name, as `list_skills` shows it.
    name: String,
}

fn list_skills(env: &mut Value, _: NoArgs) -> Result<Value, ToolError> {
    Ok(Value::Array(
        array_at(env, SKILLS)?
            .iter()
            .map(|s| json!({"name": s.get("name"), "summary": s.get("summary")}))
            .collect(),
    ))
}

fn load_skill(env: &mut Value, a: SkillName) -> Result<Value, ToolError> {
    let skills = array_at(env, SKILLS)?;
    let name = |s: &Value| {
        s.get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let wanted = a.name.trim();
    skills
        .iter()
        .find(|s| name(s) == wanted)
        .or_else(|| skills.iter().find(|s| name(s).eq_ignore_ascii_case(wanted)))
        .cloned()
        .ok_or_else(|| {
            let names: Vec<String> = skills.iter().map(name).collect();
            ToolError::not_found(format!(
                "no skill named `{wanted}`; available: {}",
                names.join(", ")
            ))
        })
}

/// The skill tools.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "list_skills",
            "Lists the skills (named procedures) the assistant can load, with a one-line summary each.",
            ToolKind::Read,
            0.05,
            list_skills,
        ),
        Tool::new(
            "load_skill",
            "Loads a skill by name and returns its step-by-step instructions.",
            ToolKind::Read,
            0.1,
            load_skill,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Value {
        json!({"skills": [
            {"name": "pay-bill", "summary": "Pay a bill", "instructions": "1. Read the bill.\n2. Pay it."},
            {"name": "Plan-Trip", "summary": "Plan a trip", "instructions": "Check dates."}
        ]})
    }

    fn tool(name: &str) -> Tool {
        crate::tools::named(tools(), name)
    }

    #[test]
    fn skills_are_listed_without_instructions_and_loaded_by_name() {
        let mut e = env();
        let list = tool("list_skills").call(&mut e, &json!({})).unwrap();
        assert_eq!(
            list[1],
            json!({"name": "Plan-Trip", "summary": "Plan a trip"})
        );
        let s = tool("load_skill")
            .call(&mut e, &json!({"name": "plan-trip"}))
            .unwrap();
        assert_eq!(s["instructions"], json!("Check dates."));
        let err = tool("load_skill")
            .call(&mut e, &json!({"name": "fly"}))
            .unwrap_err();
        assert!(
            err.message.contains("pay-bill, Plan-Trip"),
            "{}",
            err.message
        );
    }
}
