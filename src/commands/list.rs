//! `list`: what can be selected on the command line.

use super::{CliError, Paths, load_suites};
use std::fmt::Write;

/// Lists suites with their counts.
pub fn list_suites(paths: &Paths) -> Result<String, CliError> {
    // A folder of external providers only has no data suite to load.
    let none = crate::suite::discover(paths.suites_dir()?).is_ok_and(|f| f.is_empty());
    let suites = if none {
        Vec::new()
    } else {
        load_suites(paths, "all")?
    };
    let mut out = String::new();
    writeln!(
        out,
        "{:<24} {:>10} {:>15} {:>6} {:>8} {:>15} {:>8} {:>7} {:>9}",
        "suite",
        "user tasks",
        "injection tasks",
        "tools",
        "vectors",
        "attacked pairs",
        "samples",
        "no-op",
        "read-only"
    )
    .unwrap();
    let runtime = runtime()?;
    let build = paths.proof_build();
    for s in &suites {
        let floors = runtime.block_on(crate::episode::floors::floors(
            s,
            None,
            paths.proofs.as_deref(),
            build.as_deref(),
            2,
        ));
        writeln!(
            out,
            "{:<24} {:>10} {:>15} {:>6} {:>8} {:>15} {:>8} {:>7} {:>9}",
            s.qualified_name(),
            s.user_tasks.len(),
            s.injection_tasks.len(),
            s.tools.len(),
            s.vectors.len(),
            s.user_tasks.len() * s.injection_tasks.len(),
            s.samples.len(),
            floors.no_op.fraction(),
            floors.read_only.fraction()
        )
        .unwrap();
    }
    out.push_str(
        "\nno-op and read-only: the user tasks a do-nothing agent (no call, no answer) and a read-only\n\
         agent (the reference plan's reads, then its answer) solve by the suite's own checks: the\n\
         utility floors printed beside BU and UA. A bridged suite's floors are measured by `run`\n\
         (its table and run.json), since measuring them runs the suite's episodes.\n",
    );
    let samples: usize = suites.iter().map(|s| s.samples.len()).sum();
    if samples > 0 {
        writeln!(
            out,
            "\n{samples} context-aware samples (`--attack context`), one per user task and vector class."
        )
        .unwrap();
    }
    out.push_str(
        "\n`dojo-style` and `lure-style` suites are this project's own tasks, written in the style of\n\
         AgentDojo and AgentLure: their numbers are not comparable with those benchmarks' published ones.\n",
    );
    out.push_str(&list_external(paths)?);
    Ok(out)
}

fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::failed(format!("cannot start the async runtime: {e}")))
}

/// The suites each external provider serves (`suites/external/*.toml`), or why it cannot
/// start and what to run. Listing runs each provider's command (the output says so);
/// counts need a `describe` per suite, so only names are listed.
fn list_external(paths: &Paths) -> Result<String, CliError> {
    let suites_dir = paths.suites_dir()?;
    let packages = crate::external::known_packages(suites_dir);
    let mut out = String::new();
    if packages.is_empty() {
        return Ok(out);
    }
    let runtime = runtime()?;
    for package in packages {
        let provider = crate::external::Provider::open(suites_dir, &package)?;
        // Listing starts the provider: say so, and what runs.
        writeln!(
            out,
            "\nexternal suites from {} (the benchmark's own tasks, tools and checks, run in its provider), listed by running its command: {}",
            provider.file.display(),
            provider.spec.command.join(" ")
        )
        .unwrap();
        match runtime.block_on(provider.list()) {
            Ok(names) => {
                for n in names {
                    writeln!(out, "  {n}").unwrap();
                }
            }
            Err(e) => writeln!(out, "  not available: {e}").unwrap(),
        }
    }
    Ok(out)
}

/// Lists attack templates with their aliases.
pub fn list_attacks(paths: &Paths) -> Result<String, CliError> {
    let attacks = crate::attack::load_all(&paths.attacks)?;
    let mut out = String::new();
    for a in attacks {
        let aliases = if a.aliases.is_empty() {
            String::new()
        } else {
            format!(" (alias: {})", a.aliases.join(", "))
        };
        writeln!(
            out,
            "{}{aliases}
    {}",
            a.name,
            a.description.trim()
        )
        .unwrap();
    }
    writeln!(
        out,
        "{}\n    derived per suite, not a template: for each user task whose plan writes a value (an IBAN, an amount, an e-mail address, a link, a reference) read from a tool output that also carries an injection vector, that vector restates the value's line with the value changed and no instruction; succeeds when the write carries the attacker's value. Not part of `all` (docs/adaptive-attacks.md)",
        crate::attack::DATA_ONLY
    )
    .unwrap();
    Ok(out)
}

/// Lists defenses from the registry (mechanism and source), with SIEVE's variants from
/// the built-in config.
pub fn list_defenses() -> String {
    let mut out = String::new();
    for e in crate::defense::REGISTRY {
        let name = if e.variants.is_empty() {
            e.name.to_string()
        } else {
            format!("{}[:{}]", e.name, e.variants)
        };
        writeln!(out, "{name}\n    {} ({})", e.mechanism, e.source).unwrap();
        if let Some(caveat) = e.sim_caveat {
            writeln!(out, "    under sim (rows marked †): {caveat}").unwrap();
        }
    }
    out.push_str(
        "exec:<command>\n    an external defense process speaking JSON lines (docs/defense-plugin.md)\n\
         all\n    every defense above\n\nSIEVE variants:\n",
    );
    for v in crate::defense::sieve::config::SieveConfig::builtin().variants {
        let w = v.weights;
        let what = if v.layer1_only {
            "layer 1 only: every deviation blocked".to_string()
        } else {
            format!(
                "weights {:.3}/{:.3}/{:.3}/{:.3} (sem/causal/prov/risk), threshold {}{}",
                w.w_sem,
                w.w_causal,
                w.w_prov,
                w.w_risk,
                v.threshold,
                if v.graph_update {
                    ""
                } else {
                    ", no graph update"
                }
            )
        };
        writeln!(out, "sieve:{:<16} {what}", v.name).unwrap();
    }
    out
}

/// Lists model backends and the named endpoints of `configs/models.toml`.
pub fn list_models(paths: &Paths) -> Result<String, CliError> {
    let mut out = String::from(
        "sim:obedient   scripted agent that carries out every injected goal it reads (default; the worst case)\n\
         sim:oracle     scripted agent that solves the user task and never follows injections\n\
         sim:p=<x>      follows injections with probability x, drawn per episode from the seed\n\
         sim:...,substitute        a following agent puts the attacker's call in place of the planned one\n\
         sim:...,varied            the agent takes one of the task's valid alternatives per episode (drawn from the seed) instead of the reference plan\n\
         sim:...,judge_auc=<x>     as judge: continuous seeded scores separating harmful from needed calls with AUC x (default 0.9; 1 = answer key)\n\
         sim:...,planner_recall=<x>,planner_extra=<y>   as planner: keeps each reference node with probability x (default 0.9), plans one node twice with probability y (default 0.1)\n\
         openai:<model> any OpenAI-compatible endpoint (--base-url or $OPENAI_BASE_URL, key from $OPENAI_API_KEY or --api-key-env)\n",
    );
    let named = crate::model::config::load_named(&paths.configs)?;
    if !named.is_empty() {
        writeln!(
            out,
            "\nnamed endpoints ({}):",
            paths
                .configs
                .join(crate::model::config::MODELS_TOML)
                .display()
        )
        .unwrap();
        for (name, ep) in &named {
            let mut limits = Vec::new();
            if let Some(r) = ep.rpm {
                limits.push(format!("rpm {r}"));
            }
            if let Some(t) = ep.tpm {
                limits.push(format!("tpm {t}"));
            }
            if let Some(f) = ep.tool_format {
                limits.push(format!("tools {f:?}").to_lowercase());
            }
            writeln!(
                out,
                "{name:<14} {} at {} (key ${}){}{}",
                ep.model,
                ep.base_url,
                ep.api_key_env.as_deref().unwrap_or("OPENAI_API_KEY"),
                if limits.is_empty() {
                    String::new()
                } else {
                    format!(", {}", limits.join(", "))
                },
                ep.description
                    .as_deref()
                    .map_or(String::new(), |d| format!("\n               {}", d.trim())),
            )
            .unwrap();
        }
    }
    out.push_str(
        "\nembedders (--embedder): lexical (default, offline), openai:<model>, a named endpoint, or minilm[:DIR] (build feature `minilm`)\n",
    );
    Ok(out)
}

/// Lists the tasks of the selected suites with each prompt or goal whole, wrapped, as
/// the agent receives it.
pub fn list_tasks(paths: &Paths, selector: &str) -> Result<String, CliError> {
    let suites = load_suites(paths, selector)?;
    // Words wrapped into lines of at most `width` characters (a longer word stands alone).
    let wrap = |s: &str, width: usize| -> Vec<String> {
        let mut lines: Vec<String> = Vec::new();
        let mut line = String::new();
        for word in s.split_whitespace() {
            if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
                lines.push(std::mem::take(&mut line));
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
        lines.push(line);
        lines
    };
    let mut out = String::new();
    for s in &suites {
        writeln!(
            out,
            "{} ({} user tasks, {} injection tasks)",
            s.qualified_name(),
            s.user_tasks.len(),
            s.injection_tasks.len()
        )
        .unwrap();
        let id_w = s
            .user_tasks
            .iter()
            .map(|t| t.id.0.len())
            .chain(s.injection_tasks.iter().map(|t| t.id.0.len()))
            .max()
            .unwrap_or(0);
        let text_w = 100usize.saturating_sub(id_w + 4).max(20);
        let entries = s
            .user_tasks
            .iter()
            .map(|t| (&t.id.0, t.prompt.clone()))
            .chain(
                s.injection_tasks
                    .iter()
                    .map(|t| (&t.id.0, format!("[attacker] {}", t.goal))),
            );
        for (id, text) in entries {
            for (n, line) in wrap(&text, text_w).iter().enumerate() {
                let id = if n == 0 { id.as_str() } else { "" };
                writeln!(out, "  {id:<id_w$}  {line}").unwrap();
            }
        }
        out.push('\n');
    }
    Ok(out)
}

/// Lists the context-aware samples of the selected suites: each sample's surface,
/// injection task, whether its harm needs a tool outside its task's plan, and its tell;
/// then, per suite and over all of them, the class × surface table (Markdown).
pub fn list_samples(paths: &Paths, selector: &str) -> Result<String, CliError> {
    use crate::suite::sample_proofs::{Reach, SampleFacts, facts};
    let suites = load_suites(paths, selector)?;
    let mut out = String::new();
    let mut all: Vec<SampleFacts> = Vec::new();
    let mut with_samples = 0;
    for s in &suites {
        let f = facts(s);
        if f.is_empty() {
            continue;
        }
        with_samples += 1;
        writeln!(out, "{} ({} samples)", s.qualified_name(), f.len()).unwrap();
        let id_w = f.iter().map(|x| x.id.len()).max().unwrap_or(0);
        writeln!(
            out,
            "  {:<id_w$}  {:<14} {:<17} {:<13} tell",
            "sample", "surface", "injection task", "harm needs"
        )
        .unwrap();
        for x in &f {
            writeln!(
                out,
                "  {:<id_w$}  {:<14} {:<17} {:<13} {}",
                x.id,
                x.surface.to_string(),
                x.injection_task,
                x.reach.map_or("(unproved)".to_string(), |r| r.to_string()),
                x.tell.map_or("-", |t| t.as_str())
            )
            .unwrap();
        }
        out.push('\n');
        out.push_str(&class_surface_table(&f));
        out.push('\n');
        all.extend(f);
    }
    if with_samples == 0 {
        out.push_str("no samples in the selected suites (only lure-style suites have them)\n");
    } else if with_samples > 1 {
        writeln!(out, "all selected suites ({} samples)\n", all.len()).unwrap();
        out.push_str(&class_surface_table(&all));
    }
    let other = all
        .iter()
        .filter(|x| x.reach == Some(Reach::OtherTools))
        .count();
    writeln!(
        out,
        "\n{other} of {} samples need a tool outside their task's reference plan (a tool allow-list stops those).",
        all.len()
    )
    .unwrap();
    Ok(out)
}

/// Samples per class (rows) and surface (columns), with each class's count of samples
/// whose harm needs a tool outside the task's plan, as a Markdown table.
fn class_surface_table(f: &[crate::suite::sample_proofs::SampleFacts]) -> String {
    use crate::suite::sample_proofs::Reach;
    use crate::suite::samples::VectorClass;
    use std::collections::BTreeSet;
    let surfaces: BTreeSet<crate::suite::Surface> = f.iter().map(|x| x.surface).collect();
    let mut out = String::new();
    let head: Vec<String> = surfaces.iter().map(|s| s.to_string()).collect();
    writeln!(
        out,
        "| class | {} | total | needs another tool |",
        head.join(" | ")
    )
    .unwrap();
    writeln!(out, "|---|{}---:|---:|", "---:|".repeat(surfaces.len())).unwrap();
    let row = |name: &str, of: &dyn Fn(&crate::suite::sample_proofs::SampleFacts) -> bool| {
        let cells: Vec<String> = surfaces
            .iter()
            .map(|s| {
                let n = f.iter().filter(|x| of(x) && x.surface == *s).count();
                if n == 0 { "·".into() } else { n.to_string() }
            })
            .collect();
        let total = f.iter().filter(|x| of(x)).count();
        let other = f
            .iter()
            .filter(|x| of(x) && x.reach == Some(Reach::OtherTools))
            .count();
        format!("| {name} | {} | {total} | {other} |\n", cells.join(" | "))
    };
    for class in VectorClass::ALL {
        if f.iter().any(|x| x.class == class) {
            out.push_str(&row(class.as_str(), &|x| x.class == class));
        }
    }
    out.push_str(&row("all", &|_| true));
    out
}
