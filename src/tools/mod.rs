//! The tool runtime: what a tool is, how it is called, how results reach the model.
//!
//! Tools act only on the in-memory JSON environment of an episode. Each domain file
//! registers its tools; a suite names the domains it uses.

pub mod banking;
pub mod calendar;
pub mod documents;
pub mod drive;
pub mod email;
pub mod memory;
pub mod peer;
pub mod render;
pub mod skills;
pub mod slack;
pub mod travel;

use crate::ids::ToolName;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// A tool as offered to a model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSchema {
    pub name: ToolName,
    pub description: String,
    pub parameters: Value,
}

/// Whether a tool only reads the environment or changes it. Defenses treat the two
/// differently (read-only whitelists, read auto-approval).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    Read,
    Write,
}

/// The class of a tool failure, shown to the model as `Kind: message`, as AgentDojo does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ToolErrorKind {
    /// Arguments missing, of the wrong type, or unknown.
    ValidationError,
    /// An id, file, channel or record that does not exist.
    NotFoundError,
    /// A well-typed argument with an unacceptable value (negative amount, bad date).
    ValueError,
    /// The model named a tool that does not exist.
    UnknownToolError,
    /// The arguments were not valid JSON.
    ArgumentParseError,
}

/// A tool failure the model can read and react to.
#[derive(Clone, Debug, PartialEq, thiserror::Error, Serialize, Deserialize)]
#[error("{kind:?}: {message}")]
pub struct ToolError {
    pub kind: ToolErrorKind,
    pub message: String,
}

impl ToolError {
    pub fn new(kind: ToolErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ToolErrorKind::NotFoundError, message)
    }
    pub fn value(message: impl Into<String>) -> Self {
        Self::new(ToolErrorKind::ValueError, message)
    }
}

type ToolFn = dyn Fn(&mut Value, &Value) -> Result<Value, ToolError> + Send + Sync;
type ArgCheckFn = dyn Fn(&Value) -> Result<(), ToolError> + Send + Sync;

/// One callable tool: its interface as the model sees it, and its effect on the environment.
pub struct Tool {
    pub name: ToolName,
    pub description: String,
    /// JSON Schema (draft 2020-12, no `$defs`) of the arguments object.
    pub parameters: Value,
    pub kind: ToolKind,
    /// Default risk in [0,1]; defenses may override it from their own tables.
    pub risk: f64,
    /// Whether a later call replaces what an earlier call set (one password, one
    /// booking) rather than adding to it. The obedient scripted agent uses it to keep an
    /// attacker's such call standing after its own (see `model::sim`).
    pub replaces: bool,
    /// The tool that achieves the same act another way (a payment sent now or scheduled):
    /// `check-suites` makes every reference write through it too, which a utility check
    /// must refuse and a security check must still count.
    pub sibling: Option<&'static str>,
    /// Whether the tool's change to the environment only records a read (a request log, a
    /// read mark), so its call is no act a task's writes are checked for.
    pub bookkeeping: bool,
    run: Box<ToolFn>,
    check: Box<ArgCheckFn>,
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool").field("name", &self.name).finish()
    }
}

/// The schema generator settings every tool uses: inline subschemas, no meta-schema,
/// because local servers' grammar compilers reject `$defs` and `$schema`.
pub fn schema_for<A: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut schema = generator.into_root_schema_for::<A>().to_value();
    if let Value::Object(map) = &mut schema {
        map.remove("title");
        map.entry("properties")
            .or_insert_with(|| Value::Object(Default::default()));
    }
    schema
}

fn parse_args<A: DeserializeOwned>(name: &str, args: &Value) -> Result<A, ToolError> {
    let args = if args.is_null() {
        Value::Object(Default::default())
    } else {
        args.clone()
    };
    serde_json::from_value(args).map_err(|e| {
        ToolError::new(
            ToolErrorKind::ValidationError,
            format!("invalid arguments for `{name}`: {e}"),
        )
    })
}

impl Tool {
    /// Builds a tool from a typed argument struct; its schema and validation both come
    /// from that one type, so they cannot drift apart.
    pub fn new<A, F>(name: &str, description: &str, kind: ToolKind, risk: f64, f: F) -> Tool
    where
        A: DeserializeOwned + JsonSchema + 'static,
        F: Fn(&mut Value, A) -> Result<Value, ToolError> + Send + Sync + 'static,
    {
        let tool_name = name.to_string();
        let check_name = name.to_string();
        Tool {
            name: ToolName::from(name),
            description: description.to_string(),
            parameters: schema_for::<A>(),
            kind,
            risk,
            replaces: false,
            sibling: None,
            bookkeeping: false,
            run: Box::new(move |env, args| f(env, parse_args::<A>(&tool_name, args)?)),
            check: Box::new(move |args| parse_args::<A>(&check_name, args).map(|_| ())),
        }
    }

    /// A tool that runs in an external suite's provider process (docs/external-suites.md):
    /// its interface is known here, its effect is not, so calling it locally is an error
    /// and its arguments are checked by the provider.
    pub fn external(
        name: &str,
        description: &str,
        parameters: Value,
        kind: ToolKind,
        risk: f64,
    ) -> Tool {
        let tool_name = name.to_string();
        Tool {
            name: ToolName::from(name),
            description: description.to_string(),
            parameters,
            kind,
            risk,
            replaces: false,
            sibling: None,
            bookkeeping: false,
            run: Box::new(move |_, _| {
                Err(ToolError::new(
                    ToolErrorKind::UnknownToolError,
                    format!("`{tool_name}` runs in the suite's provider process, not here"),
                ))
            }),
            check: Box::new(|_| Ok(())),
        }
    }

    /// The same tool, marked as one whose later call replaces an earlier call's effect.
    pub fn replacing(mut self, replaces: bool) -> Tool {
        self.replaces = replaces;
        self
    }

    /// The same tool, with the tool that achieves its act another way.
    pub fn with_sibling(mut self, sibling: &'static str) -> Tool {
        self.sibling = Some(sibling);
        self
    }

    /// The same tool, marked as one whose change only records a read.
    pub fn bookkeeping(mut self) -> Tool {
        self.bookkeeping = true;
        self
    }

    /// Runs the tool. On error the environment is left exactly as it was.
    pub fn call(&self, env: &mut Value, args: &Value) -> Result<Value, ToolError> {
        (self.run)(env, args)
    }

    /// Checks that arguments fit the schema without running the tool.
    pub fn check_args(&self, args: &Value) -> Result<(), ToolError> {
        (self.check)(args)
    }
}

/// The tools one suite exposes, by name.
#[derive(Debug, Default)]
pub struct ToolSet {
    tools: BTreeMap<ToolName, Arc<Tool>>,
    order: Vec<ToolName>,
}

impl ToolSet {
    pub fn get(&self, name: &str) -> Option<&Arc<Tool>> {
        self.tools.get(name)
    }
    /// Tools in registration order, as they are shown to the model.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Tool>> {
        self.order.iter().map(|n| &self.tools[n])
    }
    pub fn len(&self) -> usize {
        self.order.len()
    }
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
    pub fn names(&self) -> impl Iterator<Item = &ToolName> {
        self.order.iter()
    }
    /// Keeps only the named tools, in the given order; an unknown name is an error.
    pub fn restrict(mut self, keep: &[ToolName]) -> Result<ToolSet, ToolSetError> {
        let mut out = ToolSet::default();
        for name in keep {
            let tool = self
                .tools
                .remove(name)
                .ok_or_else(|| ToolSetError::UnknownTool(name.clone()))?;
            out.order.push(name.clone());
            out.tools.insert(name.clone(), tool);
        }
        Ok(out)
    }

    /// The tools as offered to a model.
    pub fn schemas(&self) -> Vec<crate::tools::ToolSchema> {
        self.iter()
            .map(|t| crate::tools::ToolSchema {
                name: t.name.clone(),
                description: t.description.clone(),
                parameters: t.parameters.clone(),
            })
            .collect()
    }

    /// A tool set from a list, in that order; a repeated name keeps the last definition.
    pub fn from_tools(tools: impl IntoIterator<Item = Tool>) -> ToolSet {
        let mut set = ToolSet::default();
        for t in tools {
            set.insert(t);
        }
        set
    }

    fn insert(&mut self, tool: Tool) {
        if !self.tools.contains_key(&tool.name) {
            self.order.push(tool.name.clone());
        }
        self.tools.insert(tool.name.clone(), Arc::new(tool));
    }
}

/// Every domain this build knows, by name.
pub const DOMAINS: &[&str] = &[
    "banking",
    "slack",
    "email",
    "calendar",
    "drive",
    "travel",
    "memory",
    "skills",
    "peer",
    "documents",
];

/// The tools of one domain, or `None` for an unknown name.
pub fn domain_tools(domain: &str) -> Option<Vec<Tool>> {
    match domain {
        "banking" => Some(banking::tools()),
        "slack" => Some(slack::tools()),
        "email" => Some(email::tools()),
        "calendar" => Some(calendar::tools()),
        "drive" => Some(drive::tools()),
        "travel" => Some(travel::tools()),
        // Surfaces shared by every lure-style suite.
        "memory" => Some(memory::tools()),
        "skills" => Some(skills::tools()),
        "peer" => Some(peer::tools()),
        "documents" => Some(documents::tools()),
        _ => None,
    }
}

/// A suite's `domains` or `tools` naming what no domain provides; the suite loader adds
/// the file and the field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolSetError {
    #[error("unknown tool domain `{0}`; known domains: {known}", known = DOMAINS.join(", "))]
    UnknownDomain(String),
    #[error("tool `{0}` is not provided by the suite's domains")]
    UnknownTool(ToolName),
}

/// Builds the tool set of a list of domains; a tool defined by two domains (a shared
/// calendar, say) is taken once.
pub fn toolset(domains: &[String]) -> Result<ToolSet, ToolSetError> {
    let mut set = ToolSet::default();
    for d in domains {
        let tools = domain_tools(d).ok_or_else(|| ToolSetError::UnknownDomain(d.clone()))?;
        for t in tools {
            set.insert(t);
        }
    }
    Ok(set)
}

// ---- helpers shared by the domain files ----

/// The arguments of a tool that takes none.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// Accepts an id given as a string or as a non-negative integer: models send either.
pub fn de_id<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Id {
        S(String),
        N(u64),
    }
    Ok(match Id::deserialize(d)? {
        Id::S(s) => s.trim().to_string(),
        Id::N(n) => n.to_string(),
    })
}

/// The array at `path`, or a `NotFoundError` naming the path.
pub fn array_at<'a>(env: &'a Value, path: &str) -> Result<&'a Vec<Value>, ToolError> {
    crate::envpath::get(env, path)
        .and_then(Value::as_array)
        .ok_or_else(|| ToolError::not_found(format!("environment has no list at `{path}`")))
}

/// Mutable variant of [`array_at`].
pub fn array_at_mut<'a>(env: &'a mut Value, path: &str) -> Result<&'a mut Vec<Value>, ToolError> {
    crate::envpath::get_mut(env, path)
        .and_then(Value::as_array_mut)
        .ok_or_else(|| ToolError::not_found(format!("environment has no list at `{path}`")))
}

/// The object at `path`.
pub fn object_at_mut<'a>(
    env: &'a mut Value,
    path: &str,
) -> Result<&'a mut serde_json::Map<String, Value>, ToolError> {
    crate::envpath::get_mut(env, path)
        .and_then(Value::as_object_mut)
        .ok_or_else(|| ToolError::not_found(format!("environment has no record at `{path}`")))
}

/// Accepts `YYYY-MM-DD` (the only date format tools take), so a malformed date is a
/// readable error rather than a silently stored string.
pub fn check_date(field: &str, date: &str) -> Result<(), ToolError> {
    let shaped = date.len() == 10
        && date.bytes().enumerate().all(|(i, c)| {
            if i == 4 || i == 7 {
                c == b'-'
            } else {
                c.is_ascii_digit()
            }
        });
    let num = |r: std::ops::Range<usize>| date[r].parse::<i8>().unwrap_or(0);
    // The calendar decides whether the day exists (2026-02-30 does not).
    if shaped
        && date[..4]
            .parse::<i16>()
            .is_ok_and(|y| jiff::civil::Date::new(y, num(5..7), num(8..10)).is_ok())
    {
        Ok(())
    } else {
        Err(ToolError::value(format!(
            "`{field}` must be a date as YYYY-MM-DD, got `{date}`"
        )))
    }
}

/// Accepts `YYYY-MM-DD HH:MM`.
pub fn check_datetime(field: &str, value: &str) -> Result<(), ToolError> {
    let bad = || {
        ToolError::value(format!(
            "`{field}` must be a date and time as YYYY-MM-DD HH:MM, got `{value}`"
        ))
    };
    let (date, time) = value.split_once(' ').ok_or_else(bad)?;
    check_date(field, date).map_err(|_| bad())?;
    let (h, m) = time.split_once(':').ok_or_else(bad)?;
    match (h.parse::<u32>(), m.parse::<u32>()) {
        (Ok(h), Ok(m)) if h < 24 && m < 60 && h_len_ok(time) => Ok(()),
        _ => Err(bad()),
    }
}

fn h_len_ok(time: &str) -> bool {
    time.len() == 5
}

/// Rejects anything that is not plausibly one email address, so a name or a list in one
/// string is an error the model can correct rather than a silently stored recipient.
pub fn check_address(field: &str, a: &str) -> Result<(), ToolError> {
    let ok = match a.split_once('@') {
        Some((user, host)) => {
            !user.is_empty()
                && host.contains('.')
                && !host.starts_with('.')
                && !host.ends_with('.')
                && !host.contains('@')
                && !a.chars().any(|c| c.is_whitespace() || c == ',' || c == ';')
        }
        None => false,
    };
    if ok {
        Ok(())
    } else {
        Err(ToolError::value(format!(
            "`{field}` must hold email addresses like name@example.com, got `{a}`"
        )))
    }
}

/// The tool of that name in a domain's list (for the domains' unit tests).
#[cfg(test)]
pub(crate) fn named(tools: Vec<Tool>, name: &str) -> Tool {
    tools
        .into_iter()
        .find(|t| t.name.as_str() == name)
        .unwrap_or_else(|| panic!("no tool `{name}`"))
}

/// The next free integer id among the `id` fields of the given lists.
pub fn next_id(lists: &[&Vec<Value>]) -> i64 {
    lists
        .iter()
        .flat_map(|l| l.iter())
        .filter_map(|t| t.get("id").and_then(Value::as_i64))
        .max()
        .map_or(1, |m| m + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_validated() {
        assert!(check_date("d", "2026-03-01").is_ok());
        assert!(check_date("d", "2026-13-01").is_err());
        assert!(check_date("d", "2024-02-29").is_ok());
        for no_such_day in [
            "2026-02-29",
            "2026-02-30",
            "2026-04-31",
            "2026-00-10",
            "2026-01-00",
        ] {
            assert!(check_date("d", no_such_day).is_err(), "{no_such_day}");
        }
        assert!(check_datetime("d", "2026-02-30 09:30").is_err());
        assert!(check_date("d", "1.3.2026").is_err());
        assert!(check_datetime("d", "2026-03-01 09:30").is_ok());
        assert!(check_datetime("d", "2026-03-01 9:30").is_err());
        assert!(check_datetime("d", "2026-03-01").is_err());
    }

    #[test]
    fn error_renders_as_kind_colon_message() {
        let e = ToolError::not_found("no file `x`");
        assert_eq!(e.to_string(), "NotFoundError: no file `x`");
    }
}
