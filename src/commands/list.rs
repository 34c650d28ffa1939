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
        "{:<24} {:>10} {:>15} {:>6} {:>8} {:>15} {:>8}",
        "suite", "user tasks", "injection tasks", "tools", "vectors", "attacked pairs", "samples"
    )
    .unwrap();
    for s in &suites {
        writeln!(
            out,
            "{:<24} {:>10} {:>15} {:>6} {:>8} {:>15} {:>8}",
            s.qualified_name(),
            s.user_tasks.len(),
            s.injection_tasks.len(),
            s.tools.len(),
            s.vectors.len(),
            s.user_tasks.len() * s.injection_tasks.len(),
            s.samples.len()
        )
        .unwrap();
    }
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
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::bad_input(format!("cannot start the async runtime: {e}")))?;
    for package in packages {
        let provider = crate::external::Provider::open(suites_dir, &package)
            .map_err(|e| CliError::bad_input(e.to_string()))?;
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
    let attacks =
        crate::attack::load_all(&paths.attacks).map_err(|e| CliError::bad_input(e.to_string()))?;
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
        if e.persuasion_only {
            out.push_str(
                "    works only by persuading a real model: the scripted sim agent cannot show its effect\n",
            );
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
         sim:...,judge_auc=<x>     as judge: continuous seeded scores separating harmful from needed calls with AUC x (default 0.9; 1 = answer key)\n\
         sim:...,planner_recall=<x>,planner_extra=<y>   as planner: keeps each reference node with probability x (default 0.9), plans one node twice with probability y (default 0.1)\n\
         openai:<model> any OpenAI-compatible endpoint (--base-url or $OPENAI_BASE_URL, key from $OPENAI_API_KEY or --api-key-env)\n",
    );
    let named = crate::model::config::load_named(&paths.configs).map_err(CliError::bad_input)?;
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

/// Lists the tasks of the selected suites with the first line of each prompt or goal.
pub fn list_tasks(paths: &Paths, selector: &str) -> Result<String, CliError> {
    let suites = load_suites(paths, selector)?;
    let first_line = |s: &str, width: usize| {
        let line = s
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim();
        if line.chars().count() > width {
            let cut: String = line.chars().take(width - 1).collect();
            format!("{cut}…")
        } else {
            line.to_string()
        }
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
        for t in &s.user_tasks {
            writeln!(
                out,
                "  {:<id_w$}  {}",
                t.id.0,
                first_line(&t.prompt, text_w)
            )
            .unwrap();
        }
        for t in &s.injection_tasks {
            writeln!(
                out,
                "  {:<id_w$}  {}",
                t.id.0,
                first_line(&format!("[attacker] {}", t.goal), text_w)
            )
            .unwrap();
        }
        out.push('\n');
    }
    Ok(out)
}
