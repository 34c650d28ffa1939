//! Every write is checked whole, from the plan. For every write call of a user task's
//! reference plan, `check-suites` derives wrong versions of the call and requires each to
//! fail the task's utility check: every argument the task does not declare `free` set to
//! a sibling value from the environment (the same field of another record), set to a
//! nearby value (a number one more, a date a day later, a code with a digit changed, a
//! short text with its last word gone, a flag flipped) and dropped; the call made twice;
//! the call made through its sibling tool (a payment scheduled instead of sent); and, for
//! each list the plan changes, one more record of that list changed. A wrong version that
//! passes names the file, the task, the call and the argument.

use super::check::{ExecutedCall, Outcome};
use super::{PlannedCall, Suite, UserTask, run_plan};
use crate::tools::ToolKind;
use serde_json::{Value, json};

/// One wrong version of a plan, and what it changed.
struct Wrong {
    plan: Vec<PlannedCall>,
    why: String,
}

/// Texts longer than this many words are prose: their wording is the agent's, so no
/// nearby rewording is required to fail (another record's text and no text still are).
const PROSE_WORDS: usize = 8;

/// Runs the write proofs of one user task: problems (each naming the call and argument)
/// and how many wrong versions were judged.
pub fn prove(suite: &Suite, t: &UserTask) -> (Vec<String>, usize) {
    let benign = suite.env.benign();
    let answer = t.answer.clone().unwrap_or_default();
    let judge = |post: &Value, calls: &[ExecutedCall]| {
        t.utility.eval(&Outcome {
            pre: &benign,
            post,
            calls,
            answer: &answer,
        })
    };
    let mut reference_env = benign.clone();
    let reference = run_plan(&suite.tools, &mut reference_env, &t.plan);
    if reference.failure.is_some() || !judge(&reference_env, &reference.calls) {
        return (Vec::new(), 0); // the reference-plan proof reports it
    }
    // The verdict on a wrong version; `None` when it leaves the environment exactly as the
    // reference does (an argument dropped that only restated the current value): the
    // same act, nothing to refuse.
    let passes = |plan: &[PlannedCall]| {
        let mut env = benign.clone();
        let run = run_plan(&suite.tools, &mut env, plan);
        if run.failure.is_some() {
            return Some(false);
        }
        (env != reference_env).then(|| judge(&env, &run.calls))
    };
    let mut problems = Vec::new();
    let mut judged = 0;
    for (step, call) in t.plan.iter().enumerate() {
        let Some(tool) = suite.tools.get(call.tool.as_str()) else {
            continue;
        };
        if tool.kind != ToolKind::Write || tool.bookkeeping {
            continue;
        }
        let at = format!("plan step {step} `{}`", call.tool);
        for w in wrong_calls(suite, t, step, &benign) {
            let Some(passed) = passes(&w.plan) else {
                continue;
            };
            judged += 1;
            if passed {
                problems.push(format!(
                    "{at}: {} passes the utility check; check it, or declare the argument `free` with a reason",
                    w.why
                ));
            }
        }
    }
    // One more record of each list the plan's acts changed (a read mark or a request log
    // is no act).
    let acts: Vec<PlannedCall> = t
        .plan
        .iter()
        .filter(|c| {
            suite
                .tools
                .get(c.tool.as_str())
                .is_none_or(|tool| !tool.bookkeeping)
        })
        .cloned()
        .collect();
    let mut acted = benign.clone();
    run_plan(&suite.tools, &mut acted, &acts);
    for (list, index) in changed_lists(&benign, &acted) {
        let mut post = reference_env.clone();
        let Some(other) = edit_another(&mut post, &list, &index) else {
            continue;
        };
        judged += 1;
        if judge(&post, &reference.calls) {
            problems.push(format!(
                "the plan changes `{list}`: another record of it changed as well (`{list}.{other}`) passes the utility check; name the records `only_changed` allows, not the whole list"
            ));
        }
    }
    (problems, judged)
}

/// The wrong versions of the write call at `step`.
fn wrong_calls(suite: &Suite, t: &UserTask, step: usize, env: &Value) -> Vec<Wrong> {
    let call = &t.plan[step];
    let mut out = Vec::new();
    let with_args = |args: Value| {
        let mut plan = t.plan.clone();
        plan[step].args = args;
        plan
    };
    if let Some(args) = call.args.as_object() {
        for (arg, v) in args {
            if t.free.contains_key(&format!("{step}.{arg}")) {
                continue;
            }
            let mut set = |x: Value, how: &str| {
                let mut a = call.args.clone();
                a[arg.as_str()] = x.clone();
                out.push(Wrong {
                    plan: with_args(a),
                    why: format!("argument `{arg}` set to {x} ({how})"),
                });
            };
            if let Some(x) = sibling_value(env, arg, v) {
                set(x, "a sibling value from the environment");
            }
            if let Some(x) = nearby(v) {
                set(x, "a nearby value");
            }
            let mut a = call.args.clone();
            a.as_object_mut().expect("checked above").remove(arg);
            out.push(Wrong {
                plan: with_args(a),
                why: format!("argument `{arg}` dropped"),
            });
        }
    }
    // Twice: only where the second call is an act of its own (a second payment; not a
    // password set again to the same value).
    let mut twice = t.plan.clone();
    twice.insert(step + 1, call.clone());
    let mut once_env = env.clone();
    let mut twice_env = env.clone();
    run_plan(&suite.tools, &mut once_env, &t.plan);
    run_plan(&suite.tools, &mut twice_env, &twice);
    if once_env != twice_env {
        out.push(Wrong {
            plan: twice,
            why: "the call made twice".into(),
        });
    }
    if let Some(sibling) = suite
        .tools
        .get(call.tool.as_str())
        .and_then(|tool| tool.sibling)
        .and_then(|s| suite.tools.get(s))
        && let Some(args) = through(&call.args, &sibling.parameters)
    {
        let mut plan = t.plan.clone();
        plan[step] = PlannedCall {
            tool: sibling.name.clone(),
            args,
        };
        out.push(Wrong {
            plan,
            why: format!("the call made through its sibling tool `{}`", sibling.name),
        });
    }
    out
}

/// A call's arguments fitted to another tool's schema: the arguments it shares kept, a
/// required flag it lacks set to false (a one-off, not a repeating, transfer); `None` when
/// another required argument is missing.
pub fn through(args: &Value, schema: &Value) -> Option<Value> {
    let props = schema.get("properties").and_then(Value::as_object)?;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = serde_json::Map::new();
    for (k, v) in args.as_object()? {
        if props.contains_key(k) {
            out.insert(k.clone(), v.clone());
        }
    }
    for r in required {
        if out.contains_key(r) {
            continue;
        }
        let is_bool = props
            .get(r)
            .and_then(|p| p.get("type"))
            .is_some_and(|t| t == "boolean");
        if !is_bool {
            return None;
        }
        out.insert(r.to_string(), json!(false));
    }
    Some(Value::Object(out))
}

/// Every leaf of the environment stored under the key `key`, in document order.
fn leaves_at_key<'a>(v: &'a Value, key: &str, out: &mut Vec<&'a Value>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k == key && !x.is_object() {
                    out.push(x);
                }
                leaves_at_key(x, key, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| leaves_at_key(i, key, out)),
        _ => {}
    }
}

/// Every string leaf of the environment, in document order.
fn strings<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::String(s) => out.push(s),
        Value::Object(m) => m.values().for_each(|x| strings(x, out)),
        Value::Array(items) => items.iter().for_each(|i| strings(i, out)),
        _ => {}
    }
}

/// What kind of value a string is, for finding its siblings when no field shares its name.
fn shape(s: &str) -> Option<&'static str> {
    let markers = super::stance::markers(s);
    if markers.first().is_some_and(|m| m.len() == s.trim().len()) {
        return Some(if s.contains('@') { "address" } else { "marker" });
    }
    if s.len() == 10 && jiff::civil::Date::strptime("%Y-%m-%d", s).is_ok() {
        return Some("date");
    }
    None
}

/// A sibling of `v` from the environment: the same field of another record (another
/// IBAN, another subject, another amount), or, when no field shares the argument's name,
/// another value of the same shape (another address, link or date). Lists have their
/// first member replaced.
fn sibling_value(env: &Value, arg: &str, v: &Value) -> Option<Value> {
    if let Value::Array(items) = v {
        let first = items.first()?;
        let other = sibling_value(env, arg, first)?;
        let mut items = items.clone();
        items[0] = other;
        return Some(Value::Array(items));
    }
    let mut found = Vec::new();
    leaves_at_key(env, arg, &mut found);
    let same_type = |x: &Value| std::mem::discriminant(x) == std::mem::discriminant(v);
    if let Some(x) = found
        .iter()
        .find(|x| same_type(x) && !super::check::loose_eq(x, v) && differs_as_text(x, v))
    {
        return Some((*x).clone());
    }
    let s = v.as_str()?;
    let want = shape(s)?;
    let mut all = Vec::new();
    strings(env, &mut all);
    all.into_iter()
        .find(|x| shape(x) == Some(want) && !x.eq_ignore_ascii_case(s))
        .map(|x| json!(x))
}

/// Whether two values differ once case and spacing are set aside.
fn differs_as_text(a: &Value, b: &Value) -> bool {
    match (a.as_str(), b.as_str()) {
        (Some(x), Some(y)) => {
            let norm = |s: &str| {
                s.chars()
                    .filter(|c| c.is_alphanumeric())
                    .flat_map(char::to_lowercase)
                    .collect::<String>()
            };
            norm(x) != norm(y)
        }
        _ => true,
    }
}

/// A value near `v`: a number one more, a flag flipped, a date a day later, a time an hour
/// later, a code with its last digit changed, a short text without its last word; none for
/// prose (more than [`PROSE_WORDS`] words), whose wording is the writer's.
pub fn nearby(v: &Value) -> Option<Value> {
    match v {
        Value::Number(n) => {
            let x = n.as_f64()?;
            if n.is_i64() {
                Some(json!(n.as_i64()? + 1))
            } else {
                Some(json!(x + 1.0))
            }
        }
        Value::Bool(b) => Some(json!(!b)),
        Value::Array(items) if items.len() > 1 => {
            Some(Value::Array(items[..items.len() - 1].to_vec()))
        }
        Value::Array(items) => {
            let first = nearby(items.first()?)?;
            Some(json!([first]))
        }
        Value::String(s) => nearby_text(s).map(Value::String),
        _ => None,
    }
}

fn nearby_text(s: &str) -> Option<String> {
    if let Ok(d) = jiff::civil::Date::strptime("%Y-%m-%d", s) {
        return d.tomorrow().ok().map(|d| d.to_string());
    }
    if s.len() == 5
        && let Ok(t) = jiff::civil::Time::strptime("%H:%M", s)
    {
        let h = (t.hour() + 1) % 24;
        return Some(format!("{h:02}:{:02}", t.minute()));
    }
    let words: Vec<&str> = s.split_whitespace().collect();
    if words.len() > PROSE_WORDS {
        return None;
    }
    if words.len() > 1 {
        return Some(words[..words.len() - 1].join(" "));
    }
    // One token: its last digit changed, or else its last letter.
    let mut chars: Vec<char> = s.chars().collect();
    if let Some(i) = chars.iter().rposition(char::is_ascii_digit) {
        let d = chars[i].to_digit(10)?;
        chars[i] = char::from_digit((d + 1) % 10, 10)?;
        return Some(chars.into_iter().collect());
    }
    let i = chars.iter().rposition(|c| c.is_alphabetic())?;
    chars[i] = if chars[i] == 'x' { 'y' } else { 'x' };
    Some(chars.into_iter().collect())
}

/// The lists (arrays in the environment before) that the plan changed, each with the
/// indices of the members it touched.
fn changed_lists(pre: &Value, post: &Value) -> Vec<(String, Vec<usize>)> {
    let mut out: Vec<(String, Vec<usize>)> = Vec::new();
    for p in super::check::changed_paths(pre, post, "") {
        let segs: Vec<&str> = p.split('.').collect();
        // The deepest list the path runs through.
        let mut found = None;
        for k in (1..segs.len()).rev() {
            let list = segs[..k].join(".");
            if matches!(crate::envpath::get(pre, &list), Some(Value::Array(_)))
                && let Ok(i) = segs[k].parse::<usize>()
            {
                found = Some((list, i));
                break;
            }
        }
        let Some((list, i)) = found else {
            continue;
        };
        match out.iter_mut().find(|(l, _)| *l == list) {
            Some((_, idx)) => idx.push(i),
            None => out.push((list, vec![i])),
        }
    }
    out
}

/// Changes one record of `list` that the plan left alone (every text in it edited) and
/// returns its index; `None` when the list holds no such record with text.
fn edit_another(env: &mut Value, list: &str, touched: &[usize]) -> Option<usize> {
    let Value::Array(items) = crate::envpath::get_mut(env, list)? else {
        return None;
    };
    let (i, member) = items
        .iter_mut()
        .enumerate()
        .find(|(i, m)| !touched.contains(i) && has_text(m))?;
    edit_texts(member);
    Some(i)
}

fn has_text(v: &Value) -> bool {
    match v {
        Value::String(_) => true,
        Value::Object(m) => m.iter().any(|(k, x)| k != "id" && has_text(x)),
        Value::Array(items) => items.iter().any(has_text),
        _ => false,
    }
}

fn edit_texts(v: &mut Value) {
    match v {
        Value::String(s) => s.push_str(" (edited)"),
        Value::Object(m) => m
            .iter_mut()
            .filter(|(k, _)| k.as_str() != "id")
            .for_each(|(_, x)| edit_texts(x)),
        Value::Array(items) => items.iter_mut().for_each(edit_texts),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearby_values_move_each_kind_a_little() {
        assert_eq!(nearby(&json!(98.7)), Some(json!(99.7)));
        assert_eq!(nearby(&json!(29)), Some(json!(30)));
        assert_eq!(nearby(&json!(true)), Some(json!(false)));
        assert_eq!(nearby(&json!("2026-05-31")), Some(json!("2026-06-01")));
        assert_eq!(nearby(&json!("09:30")), Some(json!("10:30")));
        assert_eq!(nearby(&json!("BW-2026-04")), Some(json!("BW-2026-05")));
        assert_eq!(
            nearby(&json!("Returning payment sent in error")),
            Some(json!("Returning payment sent in"))
        );
        assert_eq!(nearby(&json!("general")), Some(json!("generax")));
        assert_eq!(
            nearby(&json!(
                "Thanks a lot for the lovely flowers you sent me last week"
            )),
            None
        );
    }

    #[test]
    fn a_call_goes_through_its_sibling_with_a_one_off_flag() {
        let schema = json!({"properties": {"recipient": {}, "amount": {}, "recurring": {"type": "boolean"}},
                            "required": ["recipient", "amount", "recurring"]});
        assert_eq!(
            through(
                &json!({"recipient": "X", "amount": 1, "date": "d"}),
                &schema
            ),
            Some(json!({"recipient": "X", "amount": 1, "recurring": false}))
        );
        let schema = json!({"properties": {"channel": {}}, "required": ["channel"]});
        assert_eq!(through(&json!({"recipient": "X"}), &schema), None);
    }
}
