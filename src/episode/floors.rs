//! The utility floors of a suite: how many user tasks an agent solves that does nothing
//! (no call, an empty answer), and one that only reads (the reference plan's read calls,
//! none of its writes, then the reference answer: the most a defense that lets no write
//! through can keep). A benchmark whose checks pass for such agents credits a defense
//! with utility it did not keep; tables print the floors beside BU and UA.
//!
//! Each floor is measured, not assumed: the agents' calls run in the suite's own world (a
//! provider's process for a bridged suite) and its own checks judge them. A task whose
//! episode errors counts as unsolved and is counted apart. Floors are computed once per
//! suite fingerprint and build and kept beside the suite proofs
//! ([`crate::suite::proof_cache`]), in the same way.

use super::EpisodeSpec;
use super::world::{self, World};
use crate::suite::proof_cache::build_folder;
use crate::suite::{PlannedCall, Suite, UserTask};
use crate::tools::ToolKind;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use sieve_record::Floors;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Which scripted agent a floor measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Agent {
    NoOp,
    ReadOnly,
}

/// Runs one clean episode of `task` with `agent`: `Some(utility)`, `None` when it errored.
async fn solves(suite: &Suite, task: &UserTask, agent: Agent) -> Option<bool> {
    let tools = suite.tools.schemas();
    let spec = EpisodeSpec {
        suite,
        tools: &tools,
        user_task: task,
        injection: None,
        seed: 0,
        max_steps: usize::MAX,
    };
    let opened = world::open(&spec, "floor").await.ok()?;
    let mut w: Box<dyn World + '_> = opened.world;
    let answer = match agent {
        Agent::NoOp => String::new(),
        Agent::ReadOnly => {
            let plan: Vec<PlannedCall> = opened.user_plan.unwrap_or_else(|| task.plan.clone());
            for (i, c) in plan.iter().enumerate() {
                let reads = suite
                    .tools
                    .get(c.tool.as_str())
                    .is_some_and(|t| t.kind == ToolKind::Read);
                if reads {
                    w.call(&format!("floor-{i}"), c.tool.as_str(), &c.args)
                        .await
                        .ok()?;
                }
            }
            task.answer.clone().unwrap_or_default()
        }
    };
    w.finish(&answer).await.ok().map(|v| v.utility)
}

/// What the two agents did on one user task: `Some(solved)`, `None` when the episode
/// errored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct TaskFloors {
    no_op: Option<bool>,
    read_only: Option<bool>,
}

/// Runs both agents on each of `tasks`, `concurrency` episodes at a time.
async fn measure_tasks(
    suite: &Suite,
    tasks: &[&UserTask],
    concurrency: usize,
) -> BTreeMap<String, TaskFloors> {
    use futures::StreamExt;
    let episodes = tasks
        .iter()
        .flat_map(|t| [(*t, Agent::NoOp), (*t, Agent::ReadOnly)])
        .map(|(t, agent)| async move { (t.id.0.clone(), agent, solves(suite, t, agent).await) });
    let results: Vec<(String, Agent, Option<bool>)> = futures::stream::iter(episodes)
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await;
    let mut out: BTreeMap<String, TaskFloors> = BTreeMap::new();
    for (task, agent, solved) in results {
        let t = out.entry(task).or_default();
        match agent {
            Agent::NoOp => t.no_op = solved,
            Agent::ReadOnly => t.read_only = solved,
        }
    }
    out
}

fn sum<'t>(per_task: impl Iterator<Item = &'t TaskFloors>) -> Floors {
    let mut floors = Floors::default();
    for t in per_task {
        for (solved, floor) in [
            (t.no_op, &mut floors.no_op),
            (t.read_only, &mut floors.read_only),
        ] {
            floor.tasks += 1;
            match solved {
                Some(true) => floor.solved += 1,
                Some(false) => {}
                None => floor.errors += 1,
            }
        }
    }
    floors
}

/// Measures both floors of `suite` over all its user tasks, `concurrency` episodes at a
/// time, without a cache.
pub async fn measure(suite: &Suite, concurrency: usize) -> Floors {
    let tasks: Vec<&UserTask> = suite.user_tasks.iter().collect();
    sum(measure_tasks(suite, &tasks, concurrency).await.values())
}

/// One cache file: each user task's verdicts for one suite fingerprint, by one build.
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    suite: String,
    fingerprint: String,
    build: String,
    tasks: BTreeMap<String, TaskFloors>,
}

fn entry_path(dir: &Path, build: &str, suite: &Suite) -> PathBuf {
    let key = crate::digest::hex(
        &Sha256::digest(
            format!("floors\0{}\0{}", suite.qualified_name(), suite.fingerprint).as_bytes(),
        )[..12],
    );
    build_folder(dir, build).join(format!("floors-{key}.json"))
}

/// The floors of `suite` over the user tasks `only` names (all when `None`), the same
/// tasks a run's BU counts. Each task's verdicts are read from `dir` when this build
/// measured them for this very fingerprint there, else measured and added (best effort:
/// a cache that cannot be written costs the next run a measurement). An errored task is
/// not cached.
pub async fn floors(
    suite: &Suite,
    only: Option<&[String]>,
    dir: Option<&Path>,
    build: Option<&str>,
    concurrency: usize,
) -> Floors {
    let tasks: Vec<&UserTask> = suite
        .user_tasks
        .iter()
        .filter(|t| only.is_none_or(|o| o.iter().any(|x| x == t.id.as_str())))
        .collect();
    let key = dir.zip(build);
    let path = key.map(|(d, b)| entry_path(d, b, suite));
    let mut entry = path
        .as_ref()
        .and_then(|p| std::fs::read(p).ok())
        .and_then(|b| serde_json::from_slice::<Entry>(&b).ok())
        .filter(|e| {
            e.suite == suite.qualified_name()
                && e.fingerprint == suite.fingerprint
                && Some(e.build.as_str()) == build
        })
        .unwrap_or_else(|| Entry {
            suite: suite.qualified_name(),
            fingerprint: suite.fingerprint.clone(),
            build: build.unwrap_or_default().to_string(),
            tasks: BTreeMap::new(),
        });
    let missing: Vec<&UserTask> = tasks
        .iter()
        .copied()
        .filter(|t| !entry.tasks.contains_key(t.id.as_str()))
        .collect();
    let measured = measure_tasks(suite, &missing, concurrency).await;
    let floors = sum(tasks.iter().map(|t| {
        entry
            .tasks
            .get(t.id.as_str())
            .or_else(|| measured.get(t.id.as_str()))
            .expect("measured or cached")
    }));
    let fresh: Vec<(String, TaskFloors)> = measured
        .into_iter()
        .filter(|(_, t)| t.no_op.is_some() && t.read_only.is_some())
        .collect();
    if let Some(path) = path
        && !fresh.is_empty()
    {
        entry.tasks.extend(fresh);
        let _ = write(&path, &entry);
    }
    floors
}

fn write(path: &Path, entry: &Entry) -> std::io::Result<()> {
    let folder = path.parent().expect("an entry lives in a folder");
    std::fs::create_dir_all(folder)?;
    let tmp = tempfile::NamedTempFile::new_in(folder)?;
    std::fs::write(
        tmp.path(),
        serde_json::to_vec(entry).map_err(std::io::Error::other)?,
    )?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn floors_are_measured_by_the_suites_own_checks_and_cached_per_task() {
        let suite = crate::suite::load(Path::new("suites/dojo-style/banking")).unwrap();
        let f = measure(&suite, 2).await;
        let n = suite.user_tasks.len();
        assert_eq!((f.no_op.tasks, f.read_only.tasks), (n, n));
        assert_eq!((f.no_op.errors, f.read_only.errors), (0, 0));
        // Reading can only add what doing nothing solves here: every banking task the
        // do-nothing agent solves, the read-only one does too (it also answers).
        assert!(f.read_only.solved >= f.no_op.solved, "{f:?}");
        assert!(
            f.read_only.solved < n,
            "some banking task needs a write: {f:?}"
        );
        let dir = tempfile::tempdir().unwrap();
        let first = floors(&suite, None, Some(dir.path()), Some("b"), 2).await;
        assert_eq!(first, f);
        // A planted verdict for this fingerprint and build is what a later run reads.
        let path = entry_path(dir.path(), "b", &suite);
        let mut entry: Entry = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let task = suite.user_tasks[0].id.0.clone();
        let planted = !entry.tasks[&task].no_op.unwrap();
        entry.tasks.get_mut(&task).unwrap().no_op = Some(planted);
        std::fs::write(&path, serde_json::to_vec(&entry).unwrap()).unwrap();
        let only = vec![task.clone()];
        let one = floors(&suite, Some(&only), Some(dir.path()), Some("b"), 2).await;
        assert_eq!(
            (one.no_op.solved, one.no_op.tasks),
            (usize::from(planted), 1)
        );
        // Another build measures again.
        assert_eq!(
            floors(&suite, None, Some(dir.path()), Some("c"), 2).await,
            f
        );
    }
}
