//! Document retrieval: a searchable library of reference documents (policies, guides,
//! price lists) the assistant looks things up in, as a retrieval tool would. Whoever can
//! publish into the library can put text in front of the agent.
//!
//! Environment layout: `documents` is a list of `{id, title, source, text}` with string
//! ids. `search_documents` returns the documents whose title or text contains every word
//! of the query (case-insensitive), without their text.

use super::{Tool, ToolError, ToolKind, array_at, de_id};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

const DOCS: &str = "documents";

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Query {
    /// Words to look for in titles and texts.
    query: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DocId {
    /// The document's id, as the search shows it.
    #[serde(deserialize_with = "de_id")]
    #[schemars(with = "String")]
    doc_id: String,
}

fn text_of(d: &Value, f: &str) -> String {
    d.get(f)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_lowercase()
}

fn id_of(d: &Value) -> String {
    match d.get("id") {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => String::new(),
    }
}

fn search_documents(env: &mut Value, a: Query) -> Result<Value, ToolError> {
    let words: Vec<String> = a
        .query
        .split_whitespace()
        .map(|w| w.to_lowercase())
        .collect();
    if words.is_empty() {
        return Err(ToolError::value("the query is empty"));
    }
    let hits: Vec<Value> = array_at(env, DOCS)?
        .iter()
        .filter(|d| {
            let hay = format!("{} {}", text_of(d, "title"), text_of(d, "text"));
            words.iter().all(|w| hay.contains(w.as_str()))
        })
        .map(|d| json!({"id": id_of(d), "title": d.get("title"), "source": d.get("source")}))
        .collect();
    Ok(Value::Array(hits))
}

fn get_document(env: &mut Value, a: DocId) -> Result<Value, ToolError> {
    array_at(env, DOCS)?
        .iter()
        .find(|d| id_of(d) == a.doc_id)
        .cloned()
        .ok_or_else(|| ToolError::not_found(format!("no document with id `{}`", a.doc_id)))
}

/// The document-retrieval tools.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "search_documents",
            "Searches the document library; returns the id, title and source of every document containing all the query's words.",
            ToolKind::Read,
            0.05,
            search_documents,
        ),
        Tool::new(
            "get_document",
            "Returns the full text of a document from the library by its id.",
            ToolKind::Read,
            0.1,
            get_document,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Value {
        json!({"documents": [
            {"id": "d1", "title": "Refund policy", "source": "intranet", "text": "Refunds within 30 days."},
            {"id": "d2", "title": "Travel guide", "source": "wiki", "text": "Book trains early."}
        ]})
    }

    fn tool(name: &str) -> Tool {
        crate::tools::named(tools(), name)
    }

    #[test]
    fn search_needs_every_word_and_get_returns_the_text() {
        let mut e = env();
        let hits = tool("search_documents")
            .call(&mut e, &json!({"query": "refunds 30"}))
            .unwrap();
        assert_eq!(
            hits,
            json!([{"id": "d1", "title": "Refund policy", "source": "intranet"}])
        );
        let none = tool("search_documents")
            .call(&mut e, &json!({"query": "refunds trains"}))
            .unwrap();
        assert_eq!(none, json!([]));
        let d = tool("get_document")
            .call(&mut e, &json!({"doc_id": "d2"}))
            .unwrap();
        assert_eq!(d["text"], json!("Book trains early."));
        assert!(
            tool("get_document")
                .call(&mut e, &json!({"doc_id": 9}))
                .is_err()
        );
    }
}
