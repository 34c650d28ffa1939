//! The crate's shape, checked (docs/architecture.md): the top-level modules of `src` import
//! each other downward only, in the order of [`LAYERS`], so their graph has no cycle; the
//! record crate (`crates/record`, the on-disk formats below every layer) depends on no
//! other crate of the workspace and on nothing but serialisation and errors; no
//! function is longer than [`MAX_FN_LINES`] lines outside a short list of data tables;
//! and the types that carry a fact across a module boundary ([`BOUNDARY_TYPES`]) hold
//! no raw JSON and no text but what [`BOUNDARY_ALLOWED`] names with a reason.
//!
//! An edge is any `crate::<module>` path (in `use` lines, bodies and doc links, as in
//! `../shared/tools/module_cycles.py`), any `crate::{<module>, …}` group and any
//! `super::` chain that climbs to the crate root, read from every file of a module
//! except its trailing `#[cfg(test)] mod tests` block.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, bottom first; a module may import only modules of its own layer's
/// predecessors (never its own layer or one above). One line per layer, as
/// docs/architecture.md draws them.
const LAYERS: &[&[&str]] = &[
    &[
        "bounded", "digest", "envpath", "escape", "readable", "suggest", "text", "yaml",
    ],
    &["child", "http", "ids"],
    &["tools"],
    &["suite"],
    &["external"],
    &["attack", "embed"],
    &["model"],
    &["defense"],
    &["record"],
    &["episode"],
    &["runner"],
    &["search"],
    &["aggregate"],
    &["report"],
    &["commands"],
];

/// The longest function allowed, in lines from its signature to its closing brace.
const MAX_FN_LINES: usize = 120;

/// Functions allowed to be longer: data tables, whose length is their rows.
const LONG_FN_ALLOWED: &[(&str, &str, &str)] = &[
    (
        "src/tools/travel.rs",
        "tools",
        "data table: the travel domain's tools",
    ),
    (
        "src/report/tables.rs",
        "summary_columns",
        "data table: the summary's columns",
    ),
    (
        "src/report/ablation.rs",
        "columns",
        "data table: the ablation's columns",
    ),
];

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// A file's module path below the crate root: `src/a/b.rs` and `src/a/b/mod.rs` are
/// `[a, b]`; `lib.rs` and `main.rs` are the root.
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    if !matches!(stem, "mod" | "lib" | "main") || !parts.is_empty() && stem != "mod" {
        parts.push(stem.to_string());
    }
    parts
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_lowercase() || c == '_'
}

fn ident_at(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}

/// The text before a file's trailing test module.
fn without_tests(text: &str) -> &str {
    let mut at = 0;
    while let Some(i) = text[at..].find("#[cfg(test)]") {
        let start = at + i;
        let rest = text[start + "#[cfg(test)]".len()..].trim_start();
        if rest.starts_with("mod tests") {
            return &text[..start];
        }
        at = start + 1;
    }
    text
}

/// The top-level modules a file names, with the alias table of the crate root
/// (`pub use aggregate::metrics;` makes `crate::aggregate::metrics` mean `aggregate`).
fn referenced(text: &str, path: &[String], aliases: &BTreeMap<String, String>) -> BTreeSet<String> {
    let text = without_tests(text);
    let mut out = BTreeSet::new();
    let mut add = |name: &str| {
        let name = aliases.get(name).map_or(name, String::as_str);
        if !name.is_empty() {
            out.insert(name.to_string());
        }
    };
    for (i, _) in text.match_indices("crate::") {
        if i > 0 && text[..i].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &text[i + "crate::".len()..];
        if rest.starts_with('{') {
            let group = &rest[1..rest.find('}').unwrap_or(rest.len())];
            for part in group.split(',') {
                let part = part.trim();
                if part.starts_with(is_ident_start) {
                    add(ident_at(part));
                }
            }
        } else if rest.starts_with(is_ident_start) {
            add(ident_at(rest));
        }
    }
    for (i, _) in text.match_indices("super::") {
        if i > 0 && text[..i].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':')
        {
            continue;
        }
        let mut rest = &text[i..];
        let mut climbs = 0;
        while let Some(r) = rest.strip_prefix("super::") {
            climbs += 1;
            rest = r;
        }
        if climbs >= path.len() && rest.starts_with(is_ident_start) {
            add(ident_at(rest));
        }
    }
    out
}

/// The module graph: module → module → the files that make the edge.
type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

fn graph() -> (BTreeSet<String>, Graph) {
    let src = src_dir();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("src/lib.rs");
    let mut modules = BTreeSet::new();
    let mut aliases = BTreeMap::new();
    for line in lib.lines() {
        let line = line.trim();
        if let Some(m) = line.strip_prefix("pub mod ").or(line.strip_prefix("mod ")) {
            modules.insert(m.trim_end_matches(';').to_string());
        } else if let Some(u) = line.strip_prefix("pub use ") {
            let parts: Vec<&str> = u.trim_end_matches(';').split("::").collect();
            if let (Some(first), Some(last)) = (parts.first(), parts.last()) {
                aliases.insert(last.to_string(), first.to_string());
            }
        }
    }
    let mut graph = Graph::new();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap().to_path_buf();
        let path = module_path(&rel);
        let Some(top) = path.first() else { continue };
        let text = std::fs::read_to_string(&file).unwrap();
        for m in referenced(&text, &path, &aliases) {
            if &m != top && modules.contains(&m) {
                graph
                    .entry(top.clone())
                    .or_default()
                    .entry(m)
                    .or_default()
                    .insert(format!("src/{}", rel.display()));
            }
        }
    }
    (modules, graph)
}

/// A cycle of the graph, as the modules along it, if any.
fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(
        v: &str,
        graph: &Graph,
        done: &mut BTreeSet<String>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = stack.iter().position(|s| s == v) {
            let mut cycle = stack[at..].to_vec();
            cycle.push(v.to_string());
            return Some(cycle);
        }
        if done.contains(v) {
            return None;
        }
        stack.push(v.to_string());
        for w in graph.get(v).into_iter().flat_map(|e| e.keys()) {
            if let Some(c) = visit(w, graph, done, stack) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(v.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|v| visit(v, graph, &mut done, &mut Vec::new()))
}

fn describe(graph: &Graph, from: &str, to: &str) -> String {
    let files: Vec<&str> = graph[from][to].iter().map(String::as_str).collect();
    format!("{from} -> {to} ({})", files.join(", "))
}

#[test]
fn the_module_graph_has_no_cycle() {
    let (_, graph) = graph();
    if let Some(cycle) = find_cycle(&graph) {
        let edges: Vec<String> = cycle
            .windows(2)
            .map(|w| describe(&graph, &w[0], &w[1]))
            .collect();
        panic!(
            "import cycle among top-level modules: {}\n  {}",
            cycle.join(" -> "),
            edges.join("\n  ")
        );
    }
}

#[test]
fn modules_import_only_lower_layers() {
    let (modules, graph) = graph();
    let layer_of: BTreeMap<&str, usize> = LAYERS
        .iter()
        .enumerate()
        .flat_map(|(i, l)| l.iter().map(move |m| (*m, i)))
        .collect();
    let unplaced: Vec<&String> = modules
        .iter()
        .filter(|m| !layer_of.contains_key(m.as_str()))
        .collect();
    assert!(
        unplaced.is_empty(),
        "top-level modules with no layer in tests/it/layers.rs (and docs/architecture.md): {unplaced:?}"
    );
    let mut upward = Vec::new();
    for (from, tos) in &graph {
        for to in tos.keys() {
            if layer_of[to.as_str()] >= layer_of[from.as_str()] {
                upward.push(describe(&graph, from, to));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports that do not go down the layers (tests/it/layers.rs, docs/architecture.md):\n  {}",
        upward.join("\n  ")
    );
}

#[test]
fn the_checker_sees_an_upward_edge_and_a_cycle() {
    let mut graph = Graph::new();
    let edge = |g: &mut Graph, a: &str, b: &str| {
        g.entry(a.into())
            .or_default()
            .entry(b.into())
            .or_default()
            .insert("src/x.rs".into());
    };
    edge(&mut graph, "suite", "tools");
    assert_eq!(find_cycle(&graph), None);
    edge(&mut graph, "tools", "suite");
    assert_eq!(
        find_cycle(&graph),
        Some(vec!["suite".into(), "tools".into(), "suite".into()])
    );
    let aliases = BTreeMap::from([("metrics".to_string(), "aggregate".to_string())]);
    let path = vec!["tools".to_string(), "travel".to_string()];
    let text = "use crate::{ids::X, text};\nfn f() { crate::aggregate::metrics::eds(); super::super::suite::x(); super::render(); }\n\
                #[cfg(test)]\nmod tests { use crate::report; }\n";
    assert_eq!(
        referenced(text, &path, &aliases),
        BTreeSet::from(["aggregate", "ids", "suite", "text"].map(String::from))
    );
    assert_eq!(module_path(Path::new("a/b/mod.rs")), ["a", "b"]);
    assert_eq!(module_path(Path::new("a.rs")), ["a"]);
    assert!(module_path(Path::new("lib.rs")).is_empty());
}

/// Blanks comments, string and character literals (keeping line breaks), so braces in
/// them do not count.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, s: &[char]| {
        out.extend(s.iter().map(|&c| if c == '\n' { '\n' } else { ' ' }));
    };
    let mut i = 0;
    while i < chars.len() {
        let at = |k: usize| chars.get(i + k).copied().unwrap_or('\0');
        let prev_ident = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        let end = if at(0) == '/' && at(1) == '/' {
            (i..chars.len())
                .find(|&j| chars[j] == '\n')
                .unwrap_or(chars.len())
        } else if at(0) == '/' && at(1) == '*' {
            (i + 2..chars.len())
                .find(|&j| chars[j - 1] == '*' && chars[j] == '/' && j > i + 2)
                .map_or(chars.len(), |j| j + 1)
        } else if !prev_ident && (at(0) == 'r' || at(0) == 'b' && at(1) == 'r') && {
            let s = if at(0) == 'b' { 2 } else { 1 };
            let hashes = (s..).take_while(|&k| at(k) == '#').count();
            at(s + hashes) == '"'
        } {
            let s = if at(0) == 'b' { 2 } else { 1 };
            let hashes = (s..).take_while(|&k| at(k) == '#').count();
            let open = i + s + hashes + 1;
            (open..chars.len())
                .find(|&j| chars[j] == '"' && (1..=hashes).all(|h| chars.get(j + h) == Some(&'#')))
                .map_or(chars.len(), |j| j + hashes + 1)
        } else if at(0) == '"' {
            let mut j = i + 1;
            while j < chars.len() && chars[j] != '"' {
                j += if chars[j] == '\\' { 2 } else { 1 };
            }
            j + 1
        } else if at(0) == '\'' && (at(1) == '\\' && at(2) != '\'' || at(2) == '\'') {
            // A character literal (a lifetime has no closing quote after one character).
            let mut j = i + 1;
            while j < chars.len() && chars[j] != '\'' {
                j += if chars[j] == '\\' { 2 } else { 1 };
            }
            j + 1
        } else {
            out.push(chars[i]);
            i += 1;
            continue;
        };
        let end = end.min(chars.len());
        blank(&mut out, &chars[i..end]);
        i = end;
    }
    out
}

/// Every function with a body in `text`: its name and its length in lines.
fn function_lengths(text: &str) -> Vec<(String, usize)> {
    let code = code_only(text);
    let lines: Vec<&str> = code.lines().collect();
    let mut out = Vec::new();
    for (k, line) in lines.iter().enumerate() {
        let mut words = line.split_whitespace().peekable();
        let mut name = None;
        while let Some(w) = words.next() {
            let qualifier = w.starts_with("pub")
                || matches!(
                    w,
                    "const" | "async" | "unsafe" | "extern" | "\"C\"" | "default"
                );
            if w == "fn" {
                name = words.peek().map(|n| ident_at(n).to_string());
                break;
            }
            if !qualifier {
                break;
            }
        }
        let Some(name) = name else { continue };
        let (mut depth, mut open) = (0usize, false);
        let mut end = None;
        'scan: for (k2, l) in lines.iter().enumerate().skip(k) {
            for c in l.chars() {
                match c {
                    ';' if !open => break 'scan,
                    '{' => {
                        depth += 1;
                        open = true;
                    }
                    '}' if open => {
                        depth -= 1;
                        if depth == 0 {
                            end = Some(k2);
                            break 'scan;
                        }
                    }
                    _ => {}
                }
            }
        }
        if let Some(end) = end {
            out.push((name, end - k + 1));
        }
    }
    out
}

#[test]
fn no_function_is_over_the_limit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&src_dir(), &mut files);
    rust_files(&root.join(RECORD_CRATE).join("src"), &mut files);
    let mut long = Vec::new();
    let mut allowed_seen = BTreeSet::new();
    for file in files {
        let rel = file.strip_prefix(root).unwrap().display().to_string();
        let text = std::fs::read_to_string(&file).unwrap();
        for (name, lines) in function_lengths(&text) {
            if lines <= MAX_FN_LINES {
                continue;
            }
            if LONG_FN_ALLOWED
                .iter()
                .any(|(f, n, _)| *f == rel && *n == name)
            {
                allowed_seen.insert((rel.clone(), name));
            } else {
                long.push(format!("{rel}: fn {name} is {lines} lines"));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over {MAX_FN_LINES} lines (split them by concern):\n  {}",
        long.join("\n  ")
    );
    // An entry whose function got short (or went away) leaves the list.
    let stale: Vec<_> = LONG_FN_ALLOWED
        .iter()
        .filter(|(f, n, _)| !allowed_seen.contains(&(f.to_string(), n.to_string())))
        .collect();
    assert!(
        stale.is_empty(),
        "allowed long functions that are no longer long: {stale:?}"
    );
}

#[test]
fn function_lengths_skip_braces_in_text_and_declarations() {
    let text = "trait T {\n    fn decl(&self);\n}\npub(crate) async fn f(x: u8) -> u8 {\n    let s = \"}}\";\n    // }\n    let c = '}';\n    let r = r#\"}\"#;\n    x\n}\nfn g<'a>(s: &'a str) -> &'a str { s }\n";
    assert_eq!(
        function_lengths(text),
        vec![("f".to_string(), 7), ("g".to_string(), 1)]
    );
}

/// The record crate: the on-disk formats as plain data, below every module of `src`.
const RECORD_CRATE: &str = "crates/record";

/// What the record crate may depend on: serialisation, errors, and clap for the one
/// record value that is also a flag (`--utility-from`), behind a feature.
const RECORD_DEPENDENCIES: &[&str] = &["clap", "serde", "serde_json", "thiserror"];

/// The crate names and tables of a manifest's dependency sections (`[dependencies]`,
/// `[dev-dependencies]`, `[build-dependencies]` and their `[target.*]` forms).
fn dependency_tables(manifest: &toml::Table) -> Vec<(String, String, toml::Value)> {
    let sections = ["dependencies", "dev-dependencies", "build-dependencies"];
    let mut tables = vec![manifest.clone()];
    if let Some(toml::Value::Table(targets)) = manifest.get("target") {
        tables.extend(targets.values().filter_map(|t| t.as_table().cloned()));
    }
    let mut out = Vec::new();
    for t in &tables {
        for section in sections {
            if let Some(toml::Value::Table(deps)) = t.get(section) {
                for (name, spec) in deps {
                    out.push((section.to_string(), name.clone(), spec.clone()));
                }
            }
        }
    }
    out
}

/// Why `spec` (a dependency of the record crate) is a path into the workspace, if it is:
/// a `path` key, or `workspace = true` naming a workspace dependency that has one.
fn path_dependency(name: &str, spec: &toml::Value, workspace: &toml::Table) -> Option<String> {
    let spec = spec.as_table()?;
    if let Some(p) = spec.get("path") {
        return Some(format!("path = {p}"));
    }
    if spec.get("workspace").and_then(toml::Value::as_bool) == Some(true) {
        let shared = workspace.get("dependencies")?.get(name)?.as_table()?;
        if let Some(p) = shared.get("path") {
            return Some(format!("workspace dependency with path = {p}"));
        }
    }
    None
}

fn manifest(path: &Path) -> toml::Table {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.parse()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The problems of the record crate's manifest against the workspace's.
fn record_crate_problems(record: &toml::Table, root: &toml::Table) -> Vec<String> {
    let workspace = root
        .get("workspace")
        .and_then(toml::Value::as_table)
        .cloned()
        .unwrap_or_default();
    let mut problems = Vec::new();
    for (section, name, spec) in dependency_tables(record) {
        if let Some(why) = path_dependency(&name, &spec, &workspace) {
            problems.push(format!(
                "[{section}] {name}: a crate of the workspace ({why})"
            ));
        } else if section == "dependencies" && !RECORD_DEPENDENCIES.contains(&name.as_str()) {
            problems.push(format!(
                "[{section}] {name}: not one of {RECORD_DEPENDENCIES:?}"
            ));
        }
    }
    problems
}

#[test]
fn the_record_crate_depends_on_no_crate_of_the_workspace() {
    let root_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = manifest(&root_dir.join("Cargo.toml"));
    let record = manifest(&root_dir.join(RECORD_CRATE).join("Cargo.toml"));
    let members: Vec<&str> = root["workspace"]["members"]
        .as_array()
        .expect("[workspace] members")
        .iter()
        .filter_map(toml::Value::as_str)
        .collect();
    assert!(members.contains(&RECORD_CRATE), "{members:?}");
    let defaults: Vec<&str> = root["workspace"]["default-members"]
        .as_array()
        .expect("[workspace] default-members: `cargo test` at the root tests the record crate")
        .iter()
        .filter_map(toml::Value::as_str)
        .collect();
    assert!(
        defaults.contains(&".") && defaults.contains(&RECORD_CRATE),
        "{defaults:?}"
    );
    let problems = record_crate_problems(&record, &root);
    assert!(
        problems.is_empty(),
        "{RECORD_CRATE}/Cargo.toml: the record crate is the bottom layer:\n  {}",
        problems.join("\n  ")
    );
    // The main crate is named nowhere in its source either.
    let mut files = Vec::new();
    rust_files(&root_dir.join(RECORD_CRATE).join("src"), &mut files);
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(
            !text.contains("sieve_bench"),
            "{} names the main crate",
            f.display()
        );
    }
}

#[test]
fn the_record_crate_check_sees_a_workspace_crate_and_a_stray_dependency() {
    let root: toml::Table =
        "[workspace.dependencies]\nsieve-bench = { path = \".\" }\nserde = \"1\"\n"
            .parse()
            .unwrap();
    let record: toml::Table = "[dependencies]\nserde = { workspace = true }\nsieve-bench = { workspace = true }\nrayon = \"1\"\n[dev-dependencies]\nhelper = { path = \"../helper\" }\n[target.'cfg(unix)'.dependencies]\nother = { path = \"../other\" }\n"
        .parse()
        .unwrap();
    let problems = record_crate_problems(&record, &root);
    assert_eq!(problems.len(), 4, "{problems:?}");
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("[dependencies] sieve-bench: a crate of the workspace"))
    );
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("[dependencies] rayon: not one of"))
    );
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("[dev-dependencies] helper: a crate"))
    );
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("[dependencies] other: a crate"))
    );
}

/// The types that carry a fact from one module to another (and to disk) at the
/// boundaries issue 37 named: there a fact is a type, never text a reader decodes again.
/// A field of one of them (`pub` or not) may be neither a `serde_json::Value` nor a
/// `String` (alone or inside an `Option`, `Vec` or map) unless [`BOUNDARY_ALLOWED`]
/// names it with why: free text (a run id, a command word, a note), a name as recorded,
/// a hash.
const BOUNDARY_TYPES: &[(&str, &str)] = &[
    ("crates/record/src/manifest.rs", "Manifest"),
    ("crates/record/src/manifest.rs", "Invocation"),
    ("crates/record/src/manifest.rs", "Lineage"),
    ("crates/record/src/manifest.rs", "RunRoles"),
    ("crates/record/src/settings.rs", "RunSettings"),
    ("crates/record/src/settings.rs", "ModelIdentity"),
    ("src/aggregate/metrics.rs", "AttackLabel"),
    ("src/aggregate/metrics.rs", "Row"),
    ("src/report/ablation.rs", "AblationRow"),
    ("src/defense/mod.rs", "DefenseSpec"),
    ("src/defense/mod.rs", "SweepPoint"),
    ("src/report/columns.rs", "HoistedKey"),
    ("src/report/compare.rs", "Line"),
    ("src/model/answer_judge.rs", "JudgeIdentity"),
    ("src/model/answer_judge.rs", "RubricIdentity"),
    ("src/commands/run/extra.rs", "PackageRecord"),
    ("src/external/protocol.rs", "PackageOrigin"),
];

/// Text fields of the boundary types, each with why it is text: (file, type, field, why).
const BOUNDARY_ALLOWED: &[(&str, &str, &str, &str)] = &[
    (
        "crates/record/src/manifest.rs",
        "Manifest",
        "run_id",
        "free text: the run's id",
    ),
    (
        "crates/record/src/manifest.rs",
        "Manifest",
        "crate_version",
        "a version as built",
    ),
    (
        "crates/record/src/manifest.rs",
        "Manifest",
        "git_commit",
        "a commit hash",
    ),
    (
        "crates/record/src/manifest.rs",
        "Manifest",
        "identity",
        "a hash of the settings",
    ),
    (
        "crates/record/src/manifest.rs",
        "Manifest",
        "started",
        "a timestamp as written (RFC 3339)",
    ),
    (
        "crates/record/src/manifest.rs",
        "Manifest",
        "finished",
        "a timestamp as written (RFC 3339)",
    ),
    (
        "crates/record/src/manifest.rs",
        "Manifest",
        "budget_parts",
        "keys: shard names `k/n` as `merge` wrote them",
    ),
    (
        "crates/record/src/manifest.rs",
        "Manifest",
        "floors",
        "keys: suites' qualified names",
    ),
    (
        "crates/record/src/manifest.rs",
        "Invocation",
        "command",
        "free text: the command line's words",
    ),
    (
        "crates/record/src/manifest.rs",
        "Invocation",
        "started",
        "a timestamp as written (RFC 3339)",
    ),
    (
        "crates/record/src/manifest.rs",
        "Invocation",
        "finished",
        "a timestamp as written (RFC 3339)",
    ),
    (
        "crates/record/src/manifest.rs",
        "Lineage",
        "requested",
        "a model id as the endpoint names it",
    ),
    (
        "crates/record/src/manifest.rs",
        "Lineage",
        "served",
        "model ids as the endpoint names them",
    ),
    (
        "crates/record/src/settings.rs",
        "RunSettings",
        "harness_version",
        "a version as built",
    ),
    (
        "crates/record/src/settings.rs",
        "RunSettings",
        "defense_config",
        "a hash of the defenses' configuration",
    ),
    (
        "crates/record/src/manifest.rs",
        "RunRoles",
        "helper_labels",
        "free text: the labels rows carry",
    ),
    (
        "crates/record/src/settings.rs",
        "RunSettings",
        "system_prompts",
        "suite names to hashes",
    ),
    (
        "crates/record/src/settings.rs",
        "RunSettings",
        "extra",
        "open-ended: settings other features add, a flag's name to its resolved value, compared key by key",
    ),
    (
        "crates/record/src/settings.rs",
        "ModelIdentity",
        "json",
        "open-ended: each backend's own settings (extra_body is any JSON), and older folders' bare names or null, which must hash as written",
    ),
    (
        "src/aggregate/metrics.rs",
        "AttackLabel",
        "attack",
        "the attack's name as recorded",
    ),
    (
        "src/aggregate/metrics.rs",
        "Row",
        "suite",
        "the suite's name as recorded (or `all`)",
    ),
    (
        "src/aggregate/metrics.rs",
        "Row",
        "attack",
        "the row's name, written from its AttackLabel (`bypass` is the flag)",
    ),
    (
        "src/aggregate/metrics.rs",
        "Row",
        "defense",
        "the defense's name as recorded (a DefenseSpec reads its sweep point)",
    ),
    (
        "src/aggregate/metrics.rs",
        "Row",
        "model",
        "the model's name as recorded",
    ),
    (
        "src/aggregate/metrics.rs",
        "Row",
        "tokens_by_component",
        "keys: component names as summary.json writes them",
    ),
    (
        "src/aggregate/metrics.rs",
        "Row",
        "calls_by_component",
        "keys: component names as summary.json writes them",
    ),
    (
        "src/report/ablation.rs",
        "AblationRow",
        "suite",
        "the suite's name as recorded",
    ),
    (
        "src/report/ablation.rs",
        "AblationRow",
        "attack",
        "the row's name, written from its AttackLabel (`bypass` is the flag)",
    ),
    (
        "src/report/ablation.rs",
        "AblationRow",
        "defense",
        "the defense's name as recorded",
    ),
    (
        "src/report/ablation.rs",
        "AblationRow",
        "model",
        "the model's name as recorded",
    ),
    (
        "src/report/ablation.rs",
        "AblationRow",
        "scripted",
        "free text: the scripted roles' labels in one line",
    ),
    (
        "src/report/ablation.rs",
        "AblationRow",
        "decided",
        "free text: why a difference is fixed rather than measured",
    ),
    (
        "src/defense/mod.rs",
        "DefenseSpec",
        "name",
        "the defense and its variant as registered",
    ),
    (
        "src/defense/mod.rs",
        "SweepPoint",
        "setting",
        "the setting's name as the defense's own parser reads it",
    ),
    ("src/report/columns.rs", "HoistedKey", "id", "a column id"),
    (
        "src/report/compare.rs",
        "Line",
        "vs",
        "the new run's defense name, as recorded",
    ),
    (
        "src/model/answer_judge.rs",
        "RubricIdentity",
        "version",
        "a rubric's version as written (`answer-rubric/1`)",
    ),
    (
        "src/model/answer_judge.rs",
        "RubricIdentity",
        "sha256",
        "a hash of the rubric's text",
    ),
    (
        "src/commands/run/extra.rs",
        "PackageRecord",
        "version",
        "a package's version as its provider reports it",
    ),
    (
        "src/external/protocol.rs",
        "PackageOrigin",
        "record_sha256",
        "a hash of the distribution's RECORD",
    ),
    (
        "src/external/protocol.rs",
        "PackageOrigin",
        "source_url",
        "a URL as the installer recorded it",
    ),
];

/// The fields of `name`'s struct in `text`: (field, type), the body's top level only.
fn struct_fields(text: &str, name: &str) -> Option<Vec<(String, String)>> {
    let code = code_only(text);
    let at = code.match_indices("struct ").find_map(|(i, _)| {
        let rest = &code[i + "struct ".len()..];
        (ident_at(rest) == name && rest[name.len()..].trim_start().starts_with(['{', '<']))
            .then_some(i)
    })?;
    let open = at + code[at..].find('{')?;
    let mut depth = 0usize;
    let mut body_end = None;
    for (k, c) in code[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    body_end = Some(open + k);
                    break;
                }
            }
            _ => {}
        }
    }
    let body = &code[open + 1..body_end?];
    // Split at top-level commas (not inside `<…>`, `(…)`, `[…]`), dropping attributes.
    let mut fields = Vec::new();
    let (mut depth, mut cur) = (0i32, String::new());
    let mut push = |cur: &mut String| {
        let mut f = cur.trim();
        while f.starts_with("#[") {
            let mut d = 0;
            let end = f
                .char_indices()
                .find(|&(_, c)| {
                    d += match c {
                        '[' => 1,
                        ']' => -1,
                        _ => 0,
                    };
                    c == ']' && d == 0
                })
                .map_or(f.len(), |(i, _)| i + 1);
            f = f[end..].trim_start();
        }
        if let Some((n, ty)) = f.split_once(':') {
            // `pub`, `pub(crate)`: the name is the last word.
            let n = n.split_whitespace().last().unwrap_or_default();
            fields.push((n.to_string(), ty.split_whitespace().collect::<String>()));
        }
        cur.clear();
    };
    for c in body.chars() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                push(&mut cur);
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    push(&mut cur);
    Some(fields)
}

/// Whether a field's type is text or raw JSON: `String` or `serde_json::Value` anywhere in
/// it (`Value` alone counts where the file imports serde_json's).
fn text_type(ty: &str, json_value_imported: bool) -> Option<&'static str> {
    let words: Vec<&str> = ty
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .filter(|w| !w.is_empty())
        .collect();
    if words
        .iter()
        .any(|w| *w == "serde_json::Value" || (json_value_imported && *w == "Value"))
    {
        Some("serde_json::Value")
    } else if words
        .iter()
        .any(|w| *w == "String" || *w == "std::string::String")
    {
        Some("String")
    } else {
        None
    }
}

/// Whether a file brings serde_json's `Value` into scope under that name.
fn imports_json_value(text: &str) -> bool {
    text.lines().any(|l| {
        let l = l.trim();
        l.starts_with("use serde_json::")
            && (l.contains("::Value;")
                || l.contains("{Value")
                || l.contains(" Value,")
                || l.contains(" Value}"))
    })
}

/// The boundary fields typed as text or raw JSON that the allow-list does not name.
fn boundary_problems(file: &str, text: &str, name: &str) -> Vec<String> {
    let Some(fields) = struct_fields(text, name) else {
        return vec![format!("{file}: no struct {name} (rename it here too)")];
    };
    let json = imports_json_value(text);
    fields
        .into_iter()
        .filter_map(|(field, ty)| {
            let what = text_type(&ty, json)?;
            let allowed = BOUNDARY_ALLOWED
                .iter()
                .any(|(f, t, n, _)| *f == file && *t == name && *n == field);
            (!allowed).then(|| format!("{file}: {name}.{field}: {ty} is a {what}"))
        })
        .collect()
}

#[test]
fn boundary_types_carry_no_raw_json_or_undeclared_text() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut problems = Vec::new();
    for (file, name) in BOUNDARY_TYPES {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        problems.extend(boundary_problems(file, &text, name));
    }
    assert!(
        problems.is_empty(),
        "fields at a module boundary typed as text or raw JSON (give the fact a type, or name the field in BOUNDARY_ALLOWED with why it is text):\n  {}",
        problems.join("\n  ")
    );
    // An entry whose field is no longer text (or went away) leaves the list.
    let mut stale = Vec::new();
    for (file, name, field, _) in BOUNDARY_ALLOWED {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let json = imports_json_value(&text);
        let still = struct_fields(&text, name).is_some_and(|fields| {
            fields
                .iter()
                .any(|(f, ty)| f == field && text_type(ty, json).is_some())
        });
        if !still {
            stale.push(format!("{file}: {name}.{field}"));
        }
    }
    assert!(
        stale.is_empty(),
        "allowed text fields that are no longer text: {stale:?}"
    );
}

#[test]
fn the_boundary_check_sees_raw_json_and_text() {
    let text = "use serde_json::Value;\n/// doc { }\n#[derive(Clone)]\npub struct Manifest {\n    /// a run id, \"quoted\"\n    pub run_id: String,\n    #[serde(default)]\n    pub roles: Value,\n    pub parts: BTreeMap<String, Ledger>,\n    pub outcome: Outcome,\n    pub(crate) note: Option<std::string::String>,\n    pub pair: (usize, usize),\n}\nstruct Other { x: String }\n";
    assert_eq!(
        struct_fields(text, "Manifest").unwrap(),
        [
            ("run_id", "String"),
            ("roles", "Value"),
            ("parts", "BTreeMap<String,Ledger>"),
            ("outcome", "Outcome"),
            ("note", "Option<std::string::String>"),
            ("pair", "(usize,usize)"),
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    let problems = boundary_problems("crates/record/src/manifest.rs", text, "Manifest");
    // `run_id` is allowed (free text); the rest are not.
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert!(problems[0].contains("Manifest.roles: Value is a serde_json::Value"));
    assert!(problems[1].contains("Manifest.parts"));
    assert!(problems[2].contains("Manifest.note"));
    // `Value` of another kind (the report's cells) is not JSON.
    assert_eq!(text_type("Value", false), None);
    assert_eq!(
        text_type("Option<serde_json::Value>", false),
        Some("serde_json::Value")
    );
    assert!(boundary_problems("x.rs", text, "Missing")[0].contains("no struct Missing"));
}

/// The lines of `text` (a Rust file of the main crate) that re-export the record crate's
/// items (`pub use sieve_record::…`, `pub(crate) use …` alike).
fn record_reexports(text: &str) -> Vec<String> {
    code_only(text)
        .lines()
        .map(str::trim)
        .filter(|l| {
            l.strip_prefix("pub")
                .map(|r| r.trim_start_matches(|c| c != ' ').trim_start())
                .is_some_and(|r| {
                    r.starts_with("use sieve_record") || r.starts_with("use ::sieve_record")
                })
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn no_module_re_exports_the_record_crate() {
    // Every path names the owner (docs/architecture.md): the record crate's types are
    // imported from `sieve_record`, never through a module of the main crate.
    let mut files = Vec::new();
    rust_files(&src_dir(), &mut files);
    let found: Vec<String> = files
        .iter()
        .flat_map(|p| {
            let text = std::fs::read_to_string(p).unwrap();
            record_reexports(&text)
                .into_iter()
                .map(move |l| format!("{}: {l}", p.display()))
        })
        .collect();
    assert!(
        found.is_empty(),
        "re-exports of the record crate:\n{}",
        found.join("\n")
    );
    // The check sees one when there is one.
    assert_eq!(
        record_reexports("use a::b;\npub use sieve_record::{Message, Role};\npub(crate) use sieve_record::Usage;\n").len(),
        2
    );
}
