//! Other valid paths through a user task that a `varied` scripted agent draws among
//! (`sim:varied`): the suite's variant corpus (`variants.yaml`: answers in other words,
//! other plans), and the reorderings of the reference plan a model could as well make.
//!
//! A reordering moves a read call one place earlier, past another read, when everything
//! it needs was already in view there (the prompts and the outputs before it, as
//! [`super::sight`] renders them): a model that knows which file to open need not check
//! the balance first. Reads change nothing, so the task's checks judge the reordered plan
//! as they judge the reference; `check-suites` proves every one anyway, clean and under
//! attack. These exist for every suite whose plans have two reads in a row, so a varied
//! agent varies on lure-style suites, which have no corpus, too.

use super::sight::{self, Seen};
use super::trace::{View, shows_in};
use super::variants::PlanVariant;
use super::{PlannedCall, Suite, UserTask};
use crate::ids::TaskId;
use crate::tools::ToolKind;
use std::collections::BTreeMap;

/// The reorderings of `plan`: for each pair of neighbouring reads (`at`, `at + 1`) where
/// the later one's arguments all show in what was seen before the earlier one ran, the
/// plan with the two swapped.
pub fn reorderings(suite: &Suite, seen: &Seen, plan: &[PlannedCall]) -> Vec<Vec<PlannedCall>> {
    let reads = |c: &PlannedCall| {
        suite
            .tools
            .get(c.tool.as_str())
            .is_some_and(|t| t.kind == ToolKind::Read)
    };
    let mut out = Vec::new();
    for at in 0..plan.len().saturating_sub(1) {
        let (a, b) = (&plan[at], &plan[at + 1]);
        if !reads(a) || !reads(b) || a == b {
            continue;
        }
        let view = View::new(seen.up_to(at));
        let ready = b
            .args
            .as_object()
            .is_none_or(|args| args.values().all(|v| shows_in(&view, v)));
        if ready {
            let mut reordered = plan.to_vec();
            reordered.swap(at, at + 1);
            out.push(reordered);
        }
    }
    out
}

/// The reorderings of each user task's reference plan, as a suite keeps them.
pub fn of_suite(suite: &Suite) -> BTreeMap<TaskId, Vec<Vec<PlannedCall>>> {
    if suite.external.is_some() {
        // A provider's environment lives in its process: its plans cannot be replayed here.
        return Default::default();
    }
    suite
        .user_tasks
        .iter()
        .map(|t| {
            (
                t.id.clone(),
                reorderings(suite, &sight::seen(suite, t), &t.plan),
            )
        })
        .collect()
}

impl Suite {
    /// For each user task, the reorderings of its reference plan a model could as well
    /// make ([`of_suite`]), found on first use.
    pub fn reorderings(&self) -> &BTreeMap<TaskId, Vec<Vec<PlannedCall>>> {
        self.reorderings.get_or_init(|| of_suite(self))
    }

    /// What `task`'s agent reads in the prompts and in all ([`sight::task_sight`]), found
    /// on first use; `None` for a suite whose environment runs in a provider.
    pub fn task_sight(
        &self,
        task: &crate::ids::TaskId,
    ) -> Option<std::sync::Arc<sight::TaskSight>> {
        let slot = self
            .sights
            .get_or_init(|| sight::Sights::of(self))
            .0
            .get(task)?;
        let t = self.user_tasks.iter().find(|t| &t.id == task)?;
        Some(
            slot.get_or_init(|| std::sync::Arc::new(sight::task_sight(self, t)))
                .clone(),
        )
    }

    /// Every valid alternative to `task`'s reference behaviour, as `check-suites` proves
    /// them: the variant corpus's, then the reordered reference plans with the reference
    /// answer. A `varied` agent draws among these.
    pub fn alternatives(&self, task: &UserTask) -> Vec<PlanVariant> {
        let answer = task.answer.clone().unwrap_or_default();
        let mut out = self.variants.alternatives(task);
        out.extend(
            self.reorderings()
                .get(&task.id)
                .into_iter()
                .flatten()
                .map(|plan| PlanVariant {
                    plan: plan.clone(),
                    answer: answer.clone(),
                }),
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[test]
    fn a_read_moves_earlier_only_when_what_it_needs_is_already_in_view() {
        let suite = super::super::load(Path::new("suites/lure-style/banking")).unwrap();
        let task = suite.user_task("user_task_4").unwrap();
        let tools = |p: &[super::PlannedCall]| -> Vec<String> {
            p.iter().map(|c| c.tool.0.clone()).collect()
        };
        let found = &suite.reorderings()[&task.id];
        assert!(!found.is_empty(), "the routine's reads can swap");
        for plan in found {
            assert_eq!(plan.len(), task.plan.len());
            // A file is never opened before something the agent read named it.
            let read_at = plan.iter().position(|c| c.tool.0 == "read_file").unwrap();
            let listed_at = plan.iter().position(|c| c.tool.0 == "list_files").unwrap();
            assert!(listed_at < read_at, "{:?}", tools(plan));
        }
        // A task's alternatives hold the reorderings, with the reference answer.
        let alternatives = suite.alternatives(task);
        let generated = &alternatives[alternatives.len() - found.len()..];
        for (a, plan) in generated.iter().zip(found) {
            assert_eq!(&a.plan, plan);
            assert_eq!(Some(&a.answer), task.answer.as_ref());
        }
    }
}
