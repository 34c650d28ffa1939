//! Renders tool results as YAML-like text, the form AgentDojo shows models.
//! Hand-written so the output is stable, fast and free of serializer quirks.

use serde_json::Value;
use std::fmt::Write;

/// Renders a tool result for the model.
pub fn render(v: &Value) -> String {
    let mut out = String::new();
    match v {
        Value::Object(m) if m.is_empty() => out.push_str("{}"),
        Value::Array(a) if a.is_empty() => out.push_str("[]"),
        Value::Object(_) | Value::Array(_) => block(v, 0, &mut out),
        // A bare string (a file's text, a web page) is shown as it is.
        Value::String(s) => out.push_str(s),
        _ => scalar(v, 0, &mut out),
    }
    while out.ends_with('\n') {
        out.pop();
    }
    out
}

fn scalar(v: &Value, indent: usize, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => write!(out, "{b}").unwrap(),
        Value::Number(n) => write!(out, "{n}").unwrap(),
        Value::String(s) if s.contains('\n') => {
            out.push('|');
            for line in s.lines() {
                out.push('\n');
                out.push_str(&" ".repeat(indent + 2));
                out.push_str(line);
            }
        }
        Value::String(s) => out.push_str(s),
        _ => unreachable!("scalar() is only called on scalars"),
    }
}

fn is_nested(v: &Value) -> bool {
    matches!(v, Value::Object(m) if !m.is_empty()) || matches!(v, Value::Array(a) if !a.is_empty())
}

fn block(v: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match v {
        Value::Object(map) => {
            for (k, val) in map {
                out.push_str(&pad);
                out.push_str(k);
                out.push(':');
                if is_nested(val) {
                    out.push('\n');
                    block(val, indent + 2, out);
                } else {
                    out.push(' ');
                    inline(val, indent, out);
                    out.push('\n');
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                out.push_str(&pad);
                out.push_str("- ");
                if let Value::Object(map) = item
                    && !map.is_empty()
                {
                    let mut sub = String::new();
                    block(item, indent + 2, &mut sub);
                    out.push_str(sub.trim_start());
                } else if is_nested(item) {
                    out.push('\n');
                    block(item, indent + 2, out);
                } else {
                    inline(item, indent, out);
                    out.push('\n');
                }
            }
        }
        _ => {
            out.push_str(&pad);
            scalar(v, indent, out);
            out.push('\n');
        }
    }
}

fn inline(v: &Value, indent: usize, out: &mut String) {
    match v {
        Value::Object(_) => out.push_str("{}"),
        Value::Array(_) => out.push_str("[]"),
        _ => scalar(v, indent, out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_nested_structures() {
        let v = json!({"balance": 10.5, "items": [{"id": 1, "tags": ["a"]}, 3], "empty": []});
        assert_eq!(
            render(&v),
            "balance: 10.5\nitems:\n  - id: 1\n    tags:\n      - a\n  - 3\nempty: []"
        );
    }

    #[test]
    fn renders_scalars_and_multiline() {
        assert_eq!(render(&json!("hi")), "hi");
        assert_eq!(render(&json!("a\n  b")), "a\n  b");
        assert_eq!(render(&json!({"t": "a\nb"})), "t: |\n  a\n  b");
    }
}
