//! The Intent Graph: planned tool calls (nodes) with argument sources, and the
//! dependencies between them (edges), held in a petgraph DAG.
//!
//! The planner's JSON is parsed and validated here: every tool must exist, every argument
//! must be one the tool takes, every `node:<id>` reference and dependency must name a
//! node, and the graph must be acyclic. Approved deviations are added later as nodes of
//! their own (graph update).

use crate::tools::ToolSet;
use petgraph::graph::{DiGraph, NodeIndex};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Where an argument's value must come from.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// The user's request.
    User,
    /// The actual output of that node.
    Node(String),
    /// Exactly this value, fixed by the plan.
    Literal(Value),
}

impl Source {
    pub fn label(&self) -> String {
        match self {
            Source::User => "user".into(),
            Source::Node(id) => format!("node:{id}"),
            Source::Literal(v) => format!("literal:{v}"),
        }
    }

    fn to_json(&self) -> Value {
        match self {
            Source::User => json!({"source": "user"}),
            Source::Node(id) => json!({"source": format!("node:{id}")}),
            Source::Literal(v) => json!({"source": "literal", "value": v}),
        }
    }
}

/// Where a node came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    Planned,
    /// Added when the adjudicator approved a deviation.
    Approved,
}

/// One planned tool call.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanNode {
    pub id: String,
    pub tool: String,
    pub args: BTreeMap<String, Source>,
    pub origin: Origin,
    /// May be called more than once: a loop over items only known at run time (every
    /// unread message, each file of a list). Any other node authorises exactly one call.
    pub repeatable: bool,
}

/// The validated plan.
#[derive(Clone, Debug, Default)]
pub struct IntentGraph {
    pub graph: DiGraph<PlanNode, ()>,
    index: HashMap<String, NodeIndex>,
}

/// Why a model's reply holds no readable JSON object: the planner's (its plan error is
/// recorded and becomes part of the blocking reason) and the adjudicator's judge's.
#[derive(Debug, thiserror::Error)]
pub enum JsonReplyError {
    #[error("the reply contains no JSON object")]
    NoObject,
    #[error("the reply is not valid JSON: {0}")]
    Invalid(serde_json::Error),
}

/// Why an argument's binding (its declared source) is not one of the forms a plan may use.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BindingError {
    /// A source text that is none of the forms (as written, trimmed).
    #[error("unknown source `{0}`; use user, literal or node:<id>")]
    UnknownSource(String),
    #[error("a binding needs a `source` field")]
    NoSource,
    #[error("a literal binding needs a `value` field")]
    NoValue,
    #[error("a binding must be a string or an object, got {0}")]
    NotStringOrObject(Value),
}

/// What is wrong with one node of a plan.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NodeProblem {
    #[error("not an object")]
    NotAnObject,
    #[error("missing `id`")]
    MissingId,
    #[error("missing `tool`")]
    MissingTool,
    #[error("unknown tool `{0}`")]
    UnknownTool(String),
    #[error("`{tool}` has no argument `{argument}`")]
    UnknownArgument { tool: String, argument: String },
    #[error("argument `{argument}`: {why}")]
    Binding { argument: String, why: BindingError },
    #[error("`args` must be an object")]
    ArgsNotObject,
    #[error("bad entry in `depends_on`")]
    BadDependency,
    #[error("`depends_on` must be a list")]
    DependsOnNotList,
    #[error("`repeatable` must be true or false")]
    RepeatableNotBool,
    #[error("duplicate id `{0}`")]
    DuplicateId(String),
}

/// Why a planner reply is not a valid plan; the planner's episode stays fail-closed and
/// records the message.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error(transparent)]
    Json(#[from] JsonReplyError),
    #[error("the plan has no `nodes` list")]
    NoNodes,
    /// The node at this position of the `nodes` list (from 0).
    #[error("node #{index}: {problem}")]
    Node { index: usize, problem: NodeProblem },
    /// A `node:<id>` source or a `depends_on` entry naming no node.
    #[error("node `{node}` refers to `{missing}`, which is not in the plan")]
    Dangling { node: String, missing: String },
    #[error("the plan's dependencies form a cycle")]
    Cycle,
    /// A valid plan naming a tool the agent is not offered (a defense may narrow them).
    #[error("node `{node}`: tool `{tool}` is not offered to the agent")]
    NotOffered { node: String, tool: String },
}

fn parse_source(v: &Value) -> Result<Source, BindingError> {
    let from_str = |s: &str| -> Result<Source, BindingError> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("user") {
            return Ok(Source::User);
        }
        if let Some(id) = s.strip_prefix("node:") {
            let id = id.trim();
            if !id.is_empty() {
                return Ok(Source::Node(id.to_string()));
            }
        }
        // The paper writes upstream outputs as `nodes.<id>.output`.
        if let Some(rest) = s.strip_prefix("nodes.")
            && let Some(id) = rest.strip_suffix(".output")
            && !id.is_empty()
        {
            return Ok(Source::Node(id.to_string()));
        }
        Err(BindingError::UnknownSource(s.to_string()))
    };
    match v {
        Value::String(s) => from_str(s),
        Value::Object(m) => {
            if let Some(lit) = m.get("literal") {
                return Ok(Source::Literal(lit.clone()));
            }
            let src = m
                .get("source")
                .and_then(Value::as_str)
                .ok_or(BindingError::NoSource)?;
            if src.trim().eq_ignore_ascii_case("literal") {
                let value = m.get("value").ok_or(BindingError::NoValue)?;
                Ok(Source::Literal(value.clone()))
            } else {
                from_str(src)
            }
        }
        other => Err(BindingError::NotStringOrObject(other.clone())),
    }
}

/// Takes the JSON object out of a reply that may wrap it in prose or code fences.
pub fn extract_json(text: &str) -> Result<Value, JsonReplyError> {
    let start = text.find('{').ok_or(JsonReplyError::NoObject)?;
    let end = text.rfind('}').ok_or(JsonReplyError::NoObject)?;
    if end < start {
        return Err(JsonReplyError::NoObject);
    }
    serde_json::from_str(&text[start..=end]).map_err(JsonReplyError::Invalid)
}

fn id_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

impl IntentGraph {
    /// Parses and validates a planner reply against the tools the agent has.
    pub fn parse(text: &str, tools: &ToolSet) -> Result<IntentGraph, PlanError> {
        use NodeProblem as P;
        let v = extract_json(text)?;
        let nodes = v
            .get("nodes")
            .and_then(Value::as_array)
            .ok_or(PlanError::NoNodes)?;
        let mut g = IntentGraph::default();
        let mut deps: Vec<(String, BTreeSet<String>)> = Vec::new();
        for (i, n) in nodes.iter().enumerate() {
            let at = |problem: NodeProblem| PlanError::Node { index: i, problem };
            let n = n.as_object().ok_or_else(|| at(P::NotAnObject))?;
            let id = n
                .get("id")
                .and_then(id_of)
                .ok_or_else(|| at(P::MissingId))?;
            let tool = n
                .get("tool")
                .and_then(Value::as_str)
                .ok_or_else(|| at(P::MissingTool))?
                .to_string();
            let Some(t) = tools.get(&tool) else {
                return Err(at(P::UnknownTool(tool)));
            };
            let known: Option<&Map<String, Value>> =
                t.parameters.get("properties").and_then(Value::as_object);
            let mut args = BTreeMap::new();
            let mut node_deps = BTreeSet::new();
            match n.get("args").or_else(|| n.get("arguments")) {
                None | Some(Value::Null) => {}
                Some(Value::Object(a)) => {
                    for (k, b) in a {
                        if let Some(props) = known
                            && !props.contains_key(k)
                        {
                            return Err(at(P::UnknownArgument {
                                tool,
                                argument: k.clone(),
                            }));
                        }
                        let s = parse_source(b).map_err(|why| {
                            at(P::Binding {
                                argument: k.clone(),
                                why,
                            })
                        })?;
                        if let Source::Node(d) = &s {
                            node_deps.insert(d.clone());
                        }
                        args.insert(k.clone(), s);
                    }
                }
                Some(_) => return Err(at(P::ArgsNotObject)),
            }
            match n.get("depends_on") {
                None | Some(Value::Null) => {}
                Some(Value::Array(a)) => {
                    for d in a {
                        node_deps.insert(id_of(d).ok_or_else(|| at(P::BadDependency))?);
                    }
                }
                Some(_) => return Err(at(P::DependsOnNotList)),
            }
            let repeatable = match n.get("repeatable") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(_) => return Err(at(P::RepeatableNotBool)),
            };
            if g.index.contains_key(&id) {
                return Err(at(P::DuplicateId(id)));
            }
            let idx = g.graph.add_node(PlanNode {
                id: id.clone(),
                tool,
                args,
                origin: Origin::Planned,
                repeatable,
            });
            g.index.insert(id.clone(), idx);
            deps.push((id, node_deps));
        }
        for (id, ds) in &deps {
            let to = g.index[id];
            for d in ds {
                let from = *g.index.get(d).ok_or_else(|| PlanError::Dangling {
                    node: id.clone(),
                    missing: d.clone(),
                })?;
                g.graph.add_edge(from, to, ());
            }
        }
        if petgraph::algo::is_cyclic_directed(&g.graph) {
            return Err(PlanError::Cycle);
        }
        Ok(g)
    }

    pub fn len(&self) -> usize {
        self.graph.node_count()
    }

    pub fn is_empty(&self) -> bool {
        self.graph.node_count() == 0
    }

    pub fn node(&self, id: &str) -> Option<&PlanNode> {
        self.index.get(id).map(|i| &self.graph[*i])
    }

    /// Nodes for this tool, in plan order.
    pub fn candidates<'a>(&'a self, tool: &'a str) -> impl Iterator<Item = &'a PlanNode> + 'a {
        self.graph
            .node_indices()
            .map(move |i| &self.graph[i])
            .filter(move |n| n.tool == tool)
    }

    /// The ids a node depends on.
    pub fn dependencies(&self, id: &str) -> Vec<String> {
        let Some(&i) = self.index.get(id) else {
            return Vec::new();
        };
        let mut d: Vec<String> = self
            .graph
            .neighbors_directed(i, petgraph::Direction::Incoming)
            .map(|j| self.graph[j].id.clone())
            .collect();
        d.sort();
        d
    }

    /// Graph update: adds an approved call as a node whose arguments are literals, with
    /// an edge from `parent` (the node whose output the agent read before proposing it).
    /// The node is repeatable: the adjudicator approved this action with these literal
    /// arguments, so the same call later passes layer 1 without a new judge call (what
    /// graph update saves); any other arguments are a deviation.
    pub fn add_approved(&mut self, tool: &str, args: &Value, parent: Option<&str>) -> String {
        let mut k = self.graph.node_count();
        let id = loop {
            let id = format!("approved_{k}");
            if !self.index.contains_key(&id) {
                break id;
            }
            k += 1;
        };
        let args = args
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), Source::Literal(v.clone())))
                    .collect()
            })
            .unwrap_or_default();
        let idx = self.graph.add_node(PlanNode {
            id: id.clone(),
            tool: tool.to_string(),
            args,
            origin: Origin::Approved,
            repeatable: true,
        });
        self.index.insert(id.clone(), idx);
        if let Some(p) = parent.and_then(|p| self.index.get(p)) {
            self.graph.add_edge(*p, idx, ());
        }
        id
    }

    /// The graph as JSON (for notes and for the simulated planner's reply).
    pub fn to_json(&self) -> Value {
        let nodes: Vec<Value> = self
            .graph
            .node_indices()
            .map(|i| {
                let n = &self.graph[i];
                let args: Map<String, Value> = n
                    .args
                    .iter()
                    .map(|(k, s)| (k.clone(), s.to_json()))
                    .collect();
                let mut node = json!({
                    "id": n.id,
                    "tool": n.tool,
                    "args": args,
                    "depends_on": self.dependencies(&n.id),
                });
                if n.repeatable {
                    node["repeatable"] = json!(true);
                }
                node
            })
            .collect();
        json!({ "nodes": nodes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> ToolSet {
        crate::tools::toolset(&["banking".to_string()]).unwrap()
    }

    const GOOD: &str = r#"Here is the plan:
```json
{"objective": "pay the bill",
 "nodes": [
   {"id": "n0", "tool": "read_file", "args": {"file_path": "user"}},
   {"id": "n1", "tool": "send_money", "args": {
      "recipient": {"source": "node:n0"}, "amount": {"source": "nodes.n0.output"},
      "subject": "node:n0", "date": {"source": "literal", "value": "2026-05-14"}},
    "depends_on": ["n0"]}
 ]}
```"#;

    #[test]
    fn parses_a_valid_plan_with_every_binding_form() {
        let g = IntentGraph::parse(GOOD, &tools()).unwrap();
        assert_eq!(g.len(), 2);
        let n1 = g.node("n1").unwrap();
        assert_eq!(n1.args["recipient"], Source::Node("n0".into()));
        assert_eq!(n1.args["amount"], Source::Node("n0".into()));
        assert_eq!(n1.args["date"], Source::Literal(json!("2026-05-14")));
        assert_eq!(g.node("n0").unwrap().args["file_path"], Source::User);
        assert_eq!(g.dependencies("n1"), vec!["n0".to_string()]);
        // Round trip through the JSON form.
        let again = IntentGraph::parse(&g.to_json().to_string(), &tools()).unwrap();
        assert_eq!(again.node("n1"), g.node("n1"));
    }

    #[test]
    fn rejects_invalid_plans_with_reasons() {
        let t = tools();
        let cases = [
            ("not json at all", "no JSON"),
            ("{\"nodes\": [", "no JSON"),
            ("{\"steps\": []}", "no `nodes`"),
            (
                r#"{"nodes": [{"id": "a", "tool": "launch_rocket"}]}"#,
                "unknown tool",
            ),
            (r#"{"nodes": [{"tool": "get_balance"}]}"#, "missing `id`"),
            (
                r#"{"nodes": [{"id": "a", "tool": "get_balance", "depends_on": ["zz"]}]}"#,
                "not in the plan",
            ),
            (
                r#"{"nodes": [{"id": "a", "tool": "read_file", "args": {"file_path": "node:ghost"}}]}"#,
                "not in the plan",
            ),
            (
                r#"{"nodes": [{"id": "a", "tool": "get_balance", "depends_on": ["b"]}, {"id": "b", "tool": "get_iban", "depends_on": ["a"]}]}"#,
                "cycle",
            ),
            (
                r#"{"nodes": [{"id": "a", "tool": "get_balance", "depends_on": ["a"]}]}"#,
                "cycle",
            ),
            (
                r#"{"nodes": [{"id": "a", "tool": "get_balance"}, {"id": "a", "tool": "get_iban"}]}"#,
                "duplicate",
            ),
            (
                r#"{"nodes": [{"id": "a", "tool": "read_file", "args": {"path": "user"}}]}"#,
                "no argument",
            ),
            (
                r#"{"nodes": [{"id": "a", "tool": "read_file", "args": {"file_path": "the bill"}}]}"#,
                "unknown source",
            ),
            (
                r#"{"nodes": [{"id": "a", "tool": "read_file", "args": {"file_path": {"source": "literal"}}}]}"#,
                "`value`",
            ),
        ];
        for (text, want) in cases {
            let e = IntentGraph::parse(text, &t).unwrap_err().to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    /// Each refusal is its own kind, and its words (which the planner model reads and the
    /// episode records) name the node, the argument and the bad source as written.
    #[test]
    fn a_refused_plan_names_its_kind_and_place() {
        let t = tools();
        let e = IntentGraph::parse(
            r#"{"nodes": [{"id": "a", "tool": "get_balance"}, {"id": "b", "tool": "read_file", "args": {"file_path": " the bill "}}]}"#,
            &t,
        )
        .unwrap_err();
        match &e {
            PlanError::Node {
                index: 1,
                problem: NodeProblem::Binding { argument, why },
            } => {
                assert_eq!(argument, "file_path");
                assert_eq!(why, &BindingError::UnknownSource("the bill".into()));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            e.to_string(),
            "node #1: argument `file_path`: unknown source `the bill`; use user, literal or node:<id>"
        );
        let e = IntentGraph::parse(
            r#"{"nodes": [{"id": "a", "tool": "read_file", "args": {"file_path": 7}}]}"#,
            &t,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "node #0: argument `file_path`: a binding must be a string or an object, got 7"
        );
        let e = IntentGraph::parse(
            r#"{"nodes": [{"id": "a", "tool": "get_balance", "depends_on": ["zz"]}]}"#,
            &t,
        )
        .unwrap_err();
        assert!(
            matches!(&e, PlanError::Dangling { node, missing } if node == "a" && missing == "zz"),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "node `a` refers to `zz`, which is not in the plan"
        );
        let e = IntentGraph::parse("I would rather not plan.", &t).unwrap_err();
        assert!(
            matches!(e, PlanError::Json(JsonReplyError::NoObject)),
            "{e:?}"
        );
        assert_eq!(e.to_string(), "the reply contains no JSON object");
        let e = IntentGraph::parse(
            r#"{"nodes": [{"id": "a", "tool": "get_balance", "repeatable": "yes"}]}"#,
            &t,
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "node #0: `repeatable` must be true or false");
    }

    #[test]
    fn extract_json_finds_the_object_or_says_why_not() {
        assert_eq!(
            extract_json("sure: ```json\n{\"a\": 1}\n``` done").unwrap(),
            json!({"a": 1})
        );
        for text in ["no braces here", "} backwards {", ""] {
            let e = extract_json(text).unwrap_err();
            assert!(matches!(e, JsonReplyError::NoObject), "{text}: {e:?}");
            assert_eq!(e.to_string(), "the reply contains no JSON object");
        }
        let e = extract_json("{\"a\": oops}").unwrap_err();
        assert!(matches!(e, JsonReplyError::Invalid(_)), "{e:?}");
        assert_eq!(
            e.to_string(),
            "the reply is not valid JSON: expected value at line 1 column 7"
        );
    }

    #[test]
    fn approved_nodes_get_literal_args_and_an_edge() {
        let mut g = IntentGraph::parse(GOOD, &tools()).unwrap();
        let id = g.add_approved("get_balance", &json!({}), Some("n0"));
        assert_eq!(g.node(&id).unwrap().origin, Origin::Approved);
        assert_eq!(g.dependencies(&id), vec!["n0".to_string()]);
        let id2 = g.add_approved("update_password", &json!({"password": "x"}), None);
        assert_ne!(id, id2);
        assert_eq!(
            g.node(&id2).unwrap().args["password"],
            Source::Literal(json!("x"))
        );
    }
}
