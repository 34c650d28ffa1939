//! The environment template: the initial state with injection placeholders resolved
//! once at load, so each episode only clones and fills a handful of strings.

use crate::ids::VectorId;
use serde_json::Value;

#[derive(Clone, Debug)]
enum Piece {
    Text(String),
    Vector(usize),
}

#[derive(Clone, Debug)]
struct Slot {
    /// JSON pointer to the string holding placeholders.
    pointer: String,
    pieces: Vec<Piece>,
}

/// An environment with `{vector_id}` placeholders in its strings.
#[derive(Clone, Debug)]
pub struct EnvTemplate {
    /// The environment with every vector set to its default text.
    base: Value,
    slots: Vec<Slot>,
    vectors: Vec<VectorId>,
}

fn escape_pointer(seg: &str) -> String {
    seg.replace('~', "~0").replace('/', "~1")
}

/// Splits a string on `{name}` placeholders naming known vectors; returns the names of
/// unknown placeholders that look like vector ids too.
fn split(s: &str, vectors: &[VectorId], unknown: &mut Vec<String>) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut rest = s;
    let mut text = String::new();
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let close = after.find('}');
        let name = close.map(|c| &after[..c]);
        match name {
            Some(n)
                if !n.is_empty()
                    && n.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') =>
            {
                text.push_str(&rest[..open]);
                if let Some(i) = vectors.iter().position(|v| v.as_str() == n) {
                    if !text.is_empty() {
                        pieces.push(Piece::Text(std::mem::take(&mut text)));
                    }
                    pieces.push(Piece::Vector(i));
                } else {
                    unknown.push(n.to_string());
                    text.push_str(&rest[open..open + n.len() + 2]);
                }
                rest = &after[n.len() + 1..];
            }
            _ => {
                text.push_str(&rest[..=open]);
                rest = after;
            }
        }
    }
    text.push_str(rest);
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    pieces
}

fn walk(
    v: &Value,
    pointer: &mut String,
    vectors: &[VectorId],
    slots: &mut Vec<Slot>,
    unknown: &mut Vec<String>,
) {
    match v {
        Value::String(s) if s.contains('{') => {
            let pieces = split(s, vectors, unknown);
            if pieces.iter().any(|p| matches!(p, Piece::Vector(_))) {
                slots.push(Slot {
                    pointer: pointer.clone(),
                    pieces,
                });
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&i.to_string());
                walk(item, pointer, vectors, slots, unknown);
                pointer.truncate(len);
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&escape_pointer(k));
                walk(item, pointer, vectors, slots, unknown);
                pointer.truncate(len);
            }
        }
        _ => {}
    }
}

/// Errors in placeholders, found while compiling the template.
#[derive(Debug, PartialEq)]
pub enum TemplateError {
    /// A `{name}` in the environment that names no declared vector.
    UnknownPlaceholder(String),
    /// A declared vector that appears nowhere in the environment.
    UnusedVector(VectorId),
}

impl EnvTemplate {
    /// Compiles the template. `defaults[i]` is the benign text of `vectors[i]`.
    pub fn new(
        raw: Value,
        vectors: Vec<VectorId>,
        defaults: &[String],
    ) -> Result<Self, Vec<TemplateError>> {
        let mut slots = Vec::new();
        let mut unknown = Vec::new();
        walk(&raw, &mut String::new(), &vectors, &mut slots, &mut unknown);
        let mut errors: Vec<TemplateError> = unknown
            .into_iter()
            .map(TemplateError::UnknownPlaceholder)
            .collect();
        for (i, v) in vectors.iter().enumerate() {
            let used = slots.iter().any(|s| {
                s.pieces
                    .iter()
                    .any(|p| matches!(p, Piece::Vector(j) if *j == i))
            });
            if !used {
                errors.push(TemplateError::UnusedVector(v.clone()));
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let mut t = EnvTemplate {
            base: raw,
            slots,
            vectors,
        };
        let defaults: Vec<&str> = defaults.iter().map(String::as_str).collect();
        let base = t.fill(&t.base, &defaults, None);
        t.base = base;
        Ok(t)
    }

    fn fill(&self, start: &Value, defaults: &[&str], only: Option<&[bool]>) -> Value {
        let mut env = start.clone();
        for slot in &self.slots {
            if let Some(mask) = only
                && !slot
                    .pieces
                    .iter()
                    .any(|p| matches!(p, Piece::Vector(i) if mask[*i]))
            {
                continue;
            }
            let mut s = String::new();
            for p in &slot.pieces {
                match p {
                    Piece::Text(t) => s.push_str(t),
                    Piece::Vector(i) => s.push_str(defaults[*i]),
                }
            }
            *env.pointer_mut(&slot.pointer)
                .expect("slot pointers come from this value") = Value::String(s);
        }
        env
    }

    /// The environment with every vector at its default (no attack).
    pub fn benign(&self) -> Value {
        self.base.clone()
    }

    /// The environment with some vectors overridden; the others keep their defaults.
    pub fn with(&self, defaults: &[String], overrides: &[(VectorId, String)]) -> Value {
        if overrides.is_empty() {
            return self.benign();
        }
        let mut texts: Vec<&str> = defaults.iter().map(String::as_str).collect();
        let mut mask = vec![false; self.vectors.len()];
        for (id, text) in overrides {
            if let Some(i) = self.vectors.iter().position(|v| v == id) {
                texts[i] = text;
                mask[i] = true;
            }
        }
        self.fill(&self.base, &texts, Some(&mask))
    }

    pub fn vectors(&self) -> &[VectorId] {
        &self.vectors
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ids(v: &[&str]) -> Vec<VectorId> {
        v.iter().map(|s| VectorId::from(*s)).collect()
    }

    #[test]
    fn fills_defaults_and_overrides() {
        let raw = json!({"files": {"a": "Bill. {inj_a} End {inj_b}"}, "n": [{"t": "{inj_b}"}], "x": "{not json}"});
        let t = EnvTemplate::new(raw, ids(&["inj_a", "inj_b"]), &["".into(), "B".into()]).unwrap();
        assert_eq!(
            t.benign(),
            json!({"files": {"a": "Bill.  End B"}, "n": [{"t": "B"}], "x": "{not json}"})
        );
        let e = t.with(
            &["".into(), "B".into()],
            &[(VectorId::from("inj_b"), "EVIL".into())],
        );
        assert_eq!(e["files"]["a"], json!("Bill.  End EVIL"));
        assert_eq!(e["n"][0]["t"], json!("EVIL"));
    }

    #[test]
    fn reports_unknown_and_unused() {
        let raw = json!({"a": "{inj_a} {inj_zz}"});
        let errs =
            EnvTemplate::new(raw, ids(&["inj_a", "inj_b"]), &["".into(), "".into()]).unwrap_err();
        assert!(errs.contains(&TemplateError::UnknownPlaceholder("inj_zz".into())));
        assert!(errs.contains(&TemplateError::UnusedVector(VectorId::from("inj_b"))));
    }
}
