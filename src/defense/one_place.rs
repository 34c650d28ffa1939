//! A defense is written in one place: its file (`src/defense/<name>.rs`, or
//! `src/defense/<name>/mod.rs` for a folder) declares its registry entry (`pub const
//! ENTRY`, the only place its name is written as a literal) and its build function;
//! `src/defense/mod.rs` adds only its `pub mod` line and one `<name>::ENTRY` line of
//! [`super::REGISTRY`], and names no defense in a string literal. Everything else (`list
//! defenses`, `--defense all`, the tests) reads the registry.

use super::REGISTRY;
use std::path::{Path, PathBuf};

/// Files of `src/defense` that implement `Defense` for something `--defense` does not
/// name from the registry, each with the reason.
const UNREGISTERED: &[(&str, &str)] = &[(
    "plugin.rs",
    "`exec:<command>` is built from its command, not looked up by name",
)];

/// The code of a Rust file before its trailing `#[cfg(test)]` module.
fn code(text: &str) -> &str {
    text.split("\n#[cfg(test)]").next().unwrap_or(text)
}

/// Every `.rs` file under `dir`, as paths relative to `root` with `/` separators.
fn rust_files(root: &Path, dir: &Path, out: &mut Vec<String>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.is_dir() {
            rust_files(root, &path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            let rel = path.strip_prefix(root).unwrap();
            out.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
}

/// The file that holds a defense's entry, as `defense_files` names it.
fn entry_file(name: &str, files: &[(String, String)]) -> Option<String> {
    [format!("{name}.rs"), format!("{name}/mod.rs")]
        .into_iter()
        .find(|f| files.iter().any(|(g, _)| g == f))
}

/// What breaks the rule, for the files of `src/defense` (relative path, text) and the
/// registered names in registry order; empty when it holds.
fn problems(files: &[(String, String)], registered: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let text_of = |f: &str| files.iter().find(|(g, _)| g == f).map(|(_, t)| code(t));
    let mut homes = Vec::new();
    for name in registered {
        let Some(file) = entry_file(name, files) else {
            out.push(format!("`{name}` has no file {name}.rs or {name}/mod.rs"));
            continue;
        };
        let text = text_of(&file).unwrap();
        if !text.contains("\npub const ENTRY: Entry = Entry {") {
            out.push(format!("{file} declares no `pub const ENTRY: Entry`"));
        }
        let literal = format!("\"{name}\"");
        if text.matches(&literal).count() != 1 {
            out.push(format!(
                "{file} writes {literal} {} times; the name belongs in its ENTRY once (elsewhere ENTRY.name)",
                text.matches(&literal).count()
            ));
        }
        homes.push((name, file));
    }
    let home_of = |f: &str| {
        homes
            .iter()
            .any(|(n, h)| f == h || f.starts_with(&format!("{n}/")))
    };
    for (file, text) in files {
        let text = code(text);
        let implements = text.lines().any(|l| l.starts_with("impl Defense for "));
        let exempt = UNREGISTERED.iter().any(|(f, _)| f == file);
        if implements && !exempt && !home_of(file) {
            out.push(format!(
                "{file} implements `Defense` but is no registered defense's file"
            ));
        }
        let declares = text.lines().any(|l| l.starts_with("pub const ENTRY: "));
        if declares && !homes.iter().any(|(_, h)| h == file) {
            out.push(format!(
                "{file} declares an ENTRY that REGISTRY does not list"
            ));
        }
    }
    let Some(module) = text_of("mod.rs") else {
        out.push("no src/defense/mod.rs".into());
        return out;
    };
    let listed: Vec<&str> = module
        .split("pub const REGISTRY: &[Entry] = &[\n")
        .nth(1)
        .and_then(|rest| rest.split("\n];").next())
        .map(|block| block.lines().map(str::trim).collect())
        .unwrap_or_default();
    let wanted: Vec<String> = registered.iter().map(|n| format!("{n}::ENTRY,")).collect();
    if listed != wanted {
        out.push(format!(
            "REGISTRY in mod.rs should be one `<name>::ENTRY,` line per defense, each once:\n  have {listed:?}\n  want {wanted:?}"
        ));
    }
    for name in registered {
        if module.contains(&format!("\"{name}\"")) {
            out.push(format!(
                "mod.rs writes the defense name \"{name}\" as a literal; use {name}::ENTRY.name"
            ));
        }
    }
    out
}

fn defense_files() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/defense");
    let mut names = Vec::new();
    rust_files(&root, &root, &mut names);
    names.sort();
    names
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(PathBuf::from(&root).join(&f)).unwrap();
            (f, text)
        })
        .collect()
}

fn registered() -> Vec<&'static str> {
    REGISTRY.iter().map(|e| e.name).collect()
}

#[test]
fn a_defense_is_its_file_plus_one_registry_line() {
    let names = registered();
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        names.len(),
        "a name registered twice: {names:?}"
    );
    let found = problems(&defense_files(), &names);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The check is not vacuous: a second literal of a name, a stray literal in mod.rs, a
/// registry line written out, a defense file without its ENTRY and an unregistered
/// `impl Defense` each make it fail.
#[test]
fn the_one_place_check_sees_each_way_to_break_it() {
    let names = registered();
    let files = defense_files();
    let broken = |file: &str, edit: &dyn Fn(&str) -> String| {
        let changed: Vec<(String, String)> = files
            .iter()
            .map(|(f, t)| (f.clone(), if f == file { edit(t) } else { t.clone() }))
            .collect();
        problems(&changed, &names)
    };
    let melon_twice = broken("melon.rs", &|t| {
        t.replacen("\nimpl ", "\nconst AGAIN: &str = \"melon\";\nimpl ", 1)
    });
    assert!(
        melon_twice.iter().any(|p| p.contains("melon.rs writes")),
        "{melon_twice:?}"
    );
    let in_mod = broken("mod.rs", &|t| {
        t.replacen("\npub fn ", "\nconst X: &str = \"drift\";\npub fn ", 1)
    });
    assert!(
        in_mod.iter().any(|p| p.contains("\"drift\" as a literal")),
        "{in_mod:?}"
    );
    let written_out = broken("mod.rs", &|t| t.replacen("    argus::ENTRY,\n", "", 1));
    assert!(
        written_out.iter().any(|p| p.contains("REGISTRY in mod.rs")),
        "{written_out:?}"
    );
    let no_entry = broken("drift.rs", &|t| {
        t.replacen("pub const ENTRY", "const ENTRY", 1)
    });
    assert!(
        no_entry.iter().any(|p| p.contains("drift.rs declares no")),
        "{no_entry:?}"
    );
    let stray = broken("support.rs", &|t| {
        t.replacen("\nuse ", "\nimpl Defense for Stray {}\nuse ", 1)
    });
    assert!(
        stray.iter().any(|p| p.contains("support.rs implements")),
        "{stray:?}"
    );
}
