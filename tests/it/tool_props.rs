//! Property test over every tool of every domain used by a shipped suite: random
//! arguments never panic, and a call that returns an error leaves the environment
//! exactly as it was.

use crate::common;
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use sieve_bench::suite::{self, Suite};

fn suites() -> Vec<Suite> {
    suite::select(&common::home().join("suites"), "all")
        .unwrap()
        .iter()
        .map(|r| suite::load(&r.dir).unwrap())
        .collect()
}

/// Strings that hit real ids and edge cases as well as noise.
fn string_pool(env: &Value) -> Vec<String> {
    let mut pool: Vec<String> = vec![
        "".into(),
        " ".into(),
        "0".into(),
        "-1".into(),
        "2026-02-30".into(),
        "2026-05-14".into(),
        "2026-05-14 10:00".into(),
        "25:99".into(),
        "x@y".into(),
        "https://".into(),
        "../../etc/passwd".into(),
        "{".into(),
        "ü€😀".into(),
    ];
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) if s.len() < 60 => out.push(s.clone()),
            Value::Number(n) => out.push(n.to_string()),
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            Value::Object(m) => m.iter().for_each(|(k, x)| {
                out.push(k.clone());
                walk(x, out)
            }),
            _ => {}
        }
    }
    walk(env, &mut pool);
    pool.sort();
    pool.dedup();
    pool
}

fn value(pool: Vec<String>) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-1e6f64..1e6).prop_map(|x| json!(x)),
        prop::sample::select(pool).prop_map(Value::String),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(2, 8, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

#[test]
fn random_arguments_never_panic_and_errors_change_nothing() {
    for suite in suites() {
        let env = suite.env.benign();
        let pool = string_pool(&env);
        for tool in suite.tools.iter() {
            let names: Vec<String> = tool.parameters["properties"]
                .as_object()
                .map(|p| p.keys().cloned().collect())
                .unwrap_or_default();
            let mut keys = names.clone();
            keys.push("unexpected".into());
            let args =
                prop::collection::vec((prop::sample::select(keys), value(pool.clone())), 0..6)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<String, Value>>()));
            let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
                cases: 96,
                ..ProptestConfig::default()
            });
            runner
                .run(&args, |args| {
                    let mut e = env.clone();
                    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        tool.call(&mut e, &args)
                    }));
                    prop_assert!(result.is_ok(), "{} panicked on {args}", tool.name);
                    if result.unwrap().is_err() {
                        prop_assert!(
                            e == env,
                            "{} changed the environment on error with {args}",
                            tool.name
                        );
                    }
                    Ok(())
                })
                .unwrap_or_else(|e| panic!("{}/{}: {e}", suite.qualified_name(), tool.name));
        }
    }
}

#[test]
fn every_reference_plan_call_fits_its_tool() {
    // Well-formed arguments must also be accepted: the schema is not stricter than
    // the tasks need.
    for suite in suites() {
        for t in &suite.user_tasks {
            for c in &t.plan {
                suite
                    .tools
                    .get(c.tool.as_str())
                    .unwrap()
                    .check_args(&c.args)
                    .unwrap();
            }
        }
    }
}
