//! `docs/records.md` is generated from the record types themselves: their fields, serde
//! attributes and doc comments, read from the source with `syn`. This test regenerates it
//! and fails when the committed page differs (the types and the doc drifted apart); run
//! `UPDATE_RECORDS_DOC=1 cargo test --test it records_doc` to rewrite it, the way insta
//! snapshots are accepted. A second test runs a small simulated episode set and checks
//! that every key the files actually hold is one the page documents.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use syn::{Attribute, Fields, GenericArgument, Item, PathArguments, Type};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The three files and the type each line (or the whole file) holds.
const ROOTS: [(&str, &str, &str); 3] = [
    (
        "episodes.jsonl",
        "EpisodeRecord",
        "One JSON object per line, one line per finished episode (`crates/record/src/episode.rs`).",
    ),
    (
        "summary.json",
        "Summary",
        "The aggregate of a run's records, written by `run`, `merge` and `report` (`src/report/mod.rs`). Rates are fractions in [0, 1].",
    ),
    (
        "run.json",
        "Manifest",
        "The folder's manifest: the run's identity and every invocation into it (`crates/record/src/manifest.rs`).",
    ),
];

/// A struct, enum or type alias found in `src/` or the record crate (`crates/record/src/`).
struct Def {
    file: PathBuf,
    item: Item,
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

fn collect(items: &[Item], file: &Path, index: &mut BTreeMap<String, Vec<Def>>) {
    for item in items {
        let name = match item {
            Item::Struct(s) => s.ident.to_string(),
            Item::Enum(e) => e.ident.to_string(),
            Item::Type(t) => t.ident.to_string(),
            Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    collect(inner, file, index);
                }
                continue;
            }
            _ => continue,
        };
        index.entry(name).or_default().push(Def {
            file: file.to_path_buf(),
            item: item.clone(),
        });
    }
}

fn index() -> BTreeMap<String, Vec<Def>> {
    let mut files = Vec::new();
    // The on-disk types live in the record crate (the manifest among them); the summary in `src/`.
    rust_files(&repo().join("crates/record/src"), &mut files);
    rust_files(&repo().join("src"), &mut files);
    let mut index = BTreeMap::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        collect(&parsed.items, &f, &mut index);
    }
    index
}

/// The definition a type path names: among same-named items, the one whose file matches
/// the path's module segments (`budget::Ledger` → `budget.rs`), else the only one that
/// derives `Serialize`.
fn resolve<'a>(index: &'a BTreeMap<String, Vec<Def>>, segments: &[String]) -> Option<&'a Def> {
    let name = segments.last()?;
    let defs = index.get(name)?;
    let serializable: Vec<&Def> = defs.iter().filter(|d| serializes(&d.item)).collect();
    if serializable.len() <= 1 {
        return serializable.first().copied();
    }
    let module = segments.iter().rev().nth(1)?;
    serializable.into_iter().find(|d| {
        let f = d.file.to_string_lossy();
        f.ends_with(&format!("/{module}.rs")) || f.ends_with(&format!("/{module}/mod.rs"))
    })
}

fn attrs_of(item: &Item) -> &[Attribute] {
    match item {
        Item::Struct(s) => &s.attrs,
        Item::Enum(e) => &e.attrs,
        Item::Type(t) => &t.attrs,
        _ => &[],
    }
}

fn serializes(item: &Item) -> bool {
    matches!(item, Item::Type(_))
        || attrs_of(item).iter().any(|a| {
            a.path().is_ident("derive") && {
                let mut found = false;
                let _ = a.parse_nested_meta(|m| {
                    found |= m
                        .path
                        .segments
                        .last()
                        .is_some_and(|s| s.ident == "Serialize");
                    Ok(())
                });
                found
            }
        })
}

/// The doc comment, as one paragraph: intra-doc links lose their brackets.
fn doc(attrs: &[Attribute]) -> String {
    let mut lines = Vec::new();
    for a in attrs {
        if let syn::Meta::NameValue(nv) = &a.meta
            && nv.path.is_ident("doc")
            && let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) = &nv.value
        {
            lines.push(s.value().trim().to_string());
        }
    }
    let text = lines
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let mut out = String::new();
    let mut rest = text.as_str();
    // `[`X`]` and `[text](link)` → `X` and text.
    while let Some(at) = rest.find('[') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        match after.find(']') {
            Some(close) if !after[..close].contains('[') => {
                out.push_str(&after[..close]);
                let tail = &after[close + 1..];
                rest = match tail
                    .strip_prefix('(')
                    .and_then(|t| t.find(')').map(|c| &t[c + 1..]))
                {
                    Some(t) => t,
                    None => tail,
                };
            }
            _ => {
                out.push('[');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out.replace('|', "\\|")
}

/// The `#[serde(...)]` settings of an item, field or variant, as `key` or `key=value`.
fn serde_attrs(attrs: &[Attribute]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for a in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let _ = a.parse_nested_meta(|m| {
            let key = m
                .path
                .get_ident()
                .map(|i| i.to_string())
                .unwrap_or_default();
            let value = match m.value() {
                Ok(v) => match v.parse::<syn::Lit>() {
                    Ok(syn::Lit::Str(s)) => s.value(),
                    _ => String::new(),
                },
                Err(_) => String::new(),
            };
            out.insert(key, value);
            Ok(())
        });
    }
    out
}

fn rename(name: &str, rule: Option<&String>) -> String {
    let snake = || {
        let mut s = String::new();
        for (i, c) in name.chars().enumerate() {
            if c.is_uppercase() {
                if i > 0 {
                    s.push('_');
                }
                s.extend(c.to_lowercase());
            } else {
                s.push(c);
            }
        }
        s
    };
    match rule.map(String::as_str) {
        Some("snake_case") => snake(),
        Some("kebab-case") => snake().replace('_', "-"),
        Some("lowercase") => name.to_lowercase(),
        Some("UPPERCASE") => name.to_uppercase(),
        Some("SCREAMING_SNAKE_CASE") => snake().to_uppercase(),
        _ => name.to_string(),
    }
}

fn segments(p: &syn::Path) -> Vec<String> {
    p.segments.iter().map(|s| s.ident.to_string()).collect()
}

fn generic_args(seg: &syn::PathSegment) -> Vec<&Type> {
    match &seg.arguments {
        PathArguments::AngleBracketed(a) => a
            .args
            .iter()
            .filter_map(|g| match g {
                GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Renders a Rust type as its JSON shape, queueing every documented type it names.
struct Renderer<'a> {
    index: &'a BTreeMap<String, Vec<Def>>,
    queue: VecDeque<String>,
    seen: BTreeSet<String>,
}

impl Renderer<'_> {
    fn ty(&mut self, t: &Type) -> String {
        match t {
            Type::Path(p) => self.path(&p.path),
            Type::Array(a) => {
                let inner = self.ty(&a.elem);
                let n = match &a.len {
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Int(i),
                        ..
                    }) => i.base10_digits().to_string(),
                    _ => "n".into(),
                };
                format!("[{inner}; {n}]")
            }
            Type::Tuple(tu) => {
                let parts: Vec<String> = tu.elems.iter().map(|e| self.ty(e)).collect();
                format!("[{}]", parts.join(", "))
            }
            Type::Reference(r) => self.ty(&r.elem),
            Type::Paren(p) => self.ty(&p.elem),
            _ => "?".into(),
        }
    }

    fn path(&mut self, p: &syn::Path) -> String {
        let segs = segments(p);
        let last = p.segments.last().unwrap();
        let args = generic_args(last);
        let name = last.ident.to_string();
        let mut arg = |i: usize| args.get(i).map(|t| self.ty(t)).unwrap_or_default();
        match name.as_str() {
            "String" | "str" | "PathBuf" | "Path" => "string".into(),
            "bool" => "boolean".into(),
            "u8" | "u16" | "u32" | "u64" | "usize" | "i32" | "i64" | "isize" => "integer".into(),
            "f32" | "f64" => "number".into(),
            "Value" => "any JSON".into(),
            "Option" => format!("{} or null", arg(0)),
            "Vec" | "VecDeque" | "BTreeSet" | "HashSet" => format!("list of {}", arg(0)),
            "BTreeMap" | "HashMap" => {
                let k = arg(0);
                let v = arg(1);
                format!("map {k} → {v}")
            }
            "Box" | "Arc" | "Rc" => arg(0),
            _ => match resolve(self.index, &segs) {
                Some(def) => {
                    if let Item::Type(alias) = &def.item {
                        return self.ty(&alias.ty.clone());
                    }
                    if self.seen.insert(name.clone()) {
                        self.queue.push_back(segs.join("::"));
                    }
                    format!("[{name}](#{})", name.to_lowercase())
                }
                None => format!("`{name}`"),
            },
        }
    }
}

fn field_rows(r: &mut Renderer, fields: &Fields, rename_all: Option<&String>, out: &mut String) {
    out.push_str("| field | type | meaning |\n|---|---|---|\n");
    for f in fields.iter() {
        let serde = serde_attrs(&f.attrs);
        if serde.contains_key("skip") || serde.contains_key("skip_serializing") {
            continue;
        }
        let ident = f.ident.as_ref().map(|i| i.to_string()).unwrap_or_default();
        let name = serde
            .get("rename")
            .cloned()
            .unwrap_or_else(|| rename(&ident, rename_all));
        let mut ty = r.ty(&f.ty);
        if serde.contains_key("flatten") {
            ty = format!("{ty}, its fields inline");
        }
        let mut meaning = doc(&f.attrs);
        if serde.contains_key("skip_serializing_if") {
            meaning = format!("{meaning} (omitted when empty or absent)")
                .trim()
                .to_string();
        } else if serde.contains_key("default") {
            meaning = format!("{meaning} (may be missing in older records)")
                .trim()
                .to_string();
        }
        let shown = if serde.contains_key("flatten") {
            "(flattened)".to_string()
        } else {
            format!("`{name}`")
        };
        out.push_str(&format!("| {shown} | {ty} | {meaning} |\n"));
    }
}

fn section(r: &mut Renderer, def: &Def, out: &mut String) {
    let serde = serde_attrs(attrs_of(&def.item));
    let rename_all = serde.get("rename_all");
    let file = def
        .file
        .strip_prefix(repo())
        .unwrap_or(&def.file)
        .display()
        .to_string();
    match &def.item {
        Item::Struct(s) => {
            out.push_str(&format!("### {}\n\n", s.ident));
            let d = doc(&s.attrs);
            out.push_str(&format!("An object (`{file}`). {d}\n\n").replace(". \n", ".\n"));
            if serde.contains_key("transparent") {
                let inner = s
                    .fields
                    .iter()
                    .next()
                    .map(|f| r.ty(&f.ty))
                    .unwrap_or_default();
                out.push_str(&format!("Written as its one field: {inner}.\n\n"));
                return;
            }
            field_rows(r, &s.fields, rename_all, out);
        }
        Item::Enum(e) => {
            out.push_str(&format!("### {}\n\n", e.ident));
            let d = doc(&e.attrs);
            let shape = if serde.contains_key("untagged") {
                "untagged: written as the variant's content".to_string()
            } else if let Some(tag) = serde.get("tag") {
                format!("an object whose `{tag}` names the variant")
            } else if e.variants.iter().all(|v| v.fields.is_empty()) {
                "a string, one of".to_string()
            } else {
                "a string for a variant without data, else `{variant: content}`".to_string()
            };
            out.push_str(&format!(
                "One of several values (`{file}`): {shape}. {d}\n\n"
            ));
            out.push_str("| value | content | meaning |\n|---|---|---|\n");
            for v in &e.variants {
                let vs = serde_attrs(&v.attrs);
                if vs.contains_key("skip") || vs.contains_key("skip_serializing") {
                    continue;
                }
                let name = vs
                    .get("rename")
                    .cloned()
                    .unwrap_or_else(|| rename(&v.ident.to_string(), rename_all));
                let content = match &v.fields {
                    Fields::Unit => "—".to_string(),
                    Fields::Unnamed(u) => {
                        let parts: Vec<String> = u.unnamed.iter().map(|f| r.ty(&f.ty)).collect();
                        parts.join(", ")
                    }
                    Fields::Named(n) => {
                        let parts: Vec<String> = n
                            .named
                            .iter()
                            .map(|f| format!("`{}`: {}", f.ident.as_ref().unwrap(), r.ty(&f.ty)))
                            .collect();
                        format!("{{{}}}", parts.join(", "))
                    }
                };
                out.push_str(&format!("| `{name}` | {content} | {} |\n", doc(&v.attrs)));
            }
        }
        _ => {}
    }
    out.push('\n');
}

fn generate() -> String {
    let index = index();
    let mut out = String::from(
        "# Records: every field of `episodes.jsonl`, `summary.json` and `run.json`\n\n\
         <!-- Generated by tests/it/records_doc.rs from the types' fields, serde attributes and\n\
         doc comments. Do not edit: change the doc comments, then run\n\
         UPDATE_RECORDS_DOC=1 cargo test --test it records_doc -->\n\n\
         Each file's root type comes first, then every type it contains, once (a type shared\n\
         with an earlier file links there). \"or null\" marks a value that may be `null`;\n\
         \"omitted when empty or absent\" a key left out then; \"may be missing in older\n\
         records\" a key readers default when absent. Column-by-column meaning of the\n\
         tables: [columns.md](columns.md); `traces.jsonl` holds each episode's full\n\
         conversation beside these records.\n\n",
    );
    let mut r = Renderer {
        index: &index,
        queue: VecDeque::new(),
        seen: BTreeSet::new(),
    };
    for (file, root, what) in ROOTS {
        out.push_str(&format!("## `{file}`\n\n{what}\n\n"));
        r.seen.insert(root.to_string());
        r.queue.push_back(root.to_string());
        while let Some(path) = r.queue.pop_front() {
            let segs: Vec<String> = path.split("::").map(String::from).collect();
            let def = resolve(&index, &segs).unwrap_or_else(|| {
                panic!("no serialisable type `{path}` in src/ or crates/record/src/")
            });
            section(&mut r, def, &mut out);
        }
    }
    out.trim_end().to_string() + "\n"
}

#[test]
fn records_doc_matches_the_types() {
    let path = repo().join("docs/records.md");
    let want = generate();
    // A field or value without a doc comment would be documented by its name alone.
    let undocumented: Vec<&str> = want
        .lines()
        .filter(|l| (l.starts_with("| `") || l.starts_with("| (flattened)")) && l.ends_with("|  |"))
        .collect();
    assert!(
        undocumented.is_empty(),
        "record fields without a doc comment (add one where the type is defined):\n{}",
        undocumented.join("\n")
    );
    if std::env::var_os("UPDATE_RECORDS_DOC").is_some() {
        std::fs::write(&path, &want).unwrap();
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    if have != want {
        let at = have
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(have.lines().count().min(want.lines().count()));
        panic!(
            "docs/records.md is out of date with the record types (first difference at line {}:\n  doc:   {:?}\n  types: {:?}).\nRun UPDATE_RECORDS_DOC=1 cargo test --test it records_doc and commit the page.",
            at + 1,
            have.lines().nth(at).unwrap_or(""),
            want.lines().nth(at).unwrap_or("")
        );
    }
}
