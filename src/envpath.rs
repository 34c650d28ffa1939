//! Dotted paths into the JSON environment (`bank_account.transactions.0.amount`).
//!
//! Checks and tools address the environment with the same syntax, so a suite author
//! learns one notation. A segment that parses as an integer indexes an array.

use serde_json::Value;

/// Resolves a dotted path; `""` is the root.
pub fn get<'a>(root: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = root;
    if path.is_empty() {
        return Some(cur);
    }
    for seg in path.split('.') {
        cur = step(cur, seg)?;
    }
    Some(cur)
}

/// Mutable variant of [`get`].
pub fn get_mut<'a>(root: &'a mut Value, path: &str) -> Option<&'a mut Value> {
    let mut cur = root;
    if path.is_empty() {
        return Some(cur);
    }
    for seg in path.split('.') {
        cur = match cur {
            Value::Object(map) => map.get_mut(seg)?,
            Value::Array(items) => items.get_mut(seg.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

fn step<'a>(v: &'a Value, seg: &str) -> Option<&'a Value> {
    match v {
        Value::Object(map) => map.get(seg),
        Value::Array(items) => items.get(seg.parse::<usize>().ok()?),
        _ => None,
    }
}

/// The members of a collection: array items, or object values (for maps keyed by id).
pub fn members(v: &Value) -> Vec<&Value> {
    match v {
        Value::Array(items) => items.iter().collect(),
        Value::Object(map) => map.values().collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resolves_objects_and_indices() {
        let v = json!({"a": {"b": [10, {"c": "x"}]}});
        assert_eq!(get(&v, "a.b.0"), Some(&json!(10)));
        assert_eq!(get(&v, "a.b.1.c"), Some(&json!("x")));
        assert_eq!(get(&v, "a.b.2"), None);
        assert_eq!(get(&v, "a.z"), None);
        assert_eq!(get(&v, ""), Some(&v));
    }

    #[test]
    fn mutates_in_place() {
        let mut v = json!({"a": [1, 2]});
        *get_mut(&mut v, "a.1").unwrap() = json!(5);
        assert_eq!(v, json!({"a": [1, 5]}));
    }
}
