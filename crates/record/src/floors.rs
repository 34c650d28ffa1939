//! A suite's utility floors: what a do-nothing and a read-only agent solve
//! (measured by the harness's `episode::floors`), as `run.json` and the summaries keep
//! them.

use serde::{Deserialize, Serialize};

/// One floor: user tasks solved of those the suite has; tasks whose episode errored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Floor {
    /// User tasks the agent solved.
    pub solved: usize,
    /// User tasks it was run on (the run's selection of the suite's).
    pub tasks: usize,
    /// Tasks whose episode errored (counted as unsolved).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub errors: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Floor {
    /// `solved/tasks`, as tables print it.
    pub fn fraction(&self) -> String {
        format!("{}/{}", self.solved, self.tasks)
    }

    /// The floor as a rate in [0, 1]; `None` for a suite without tasks.
    pub fn rate(&self) -> Option<f64> {
        (self.tasks > 0).then(|| self.solved as f64 / self.tasks as f64)
    }

    /// The sum of floors over several suites (an `all` row).
    pub fn add(&mut self, other: &Floor) {
        self.solved += other.solved;
        self.tasks += other.tasks;
        self.errors += other.errors;
    }
}

/// A suite's two floors.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Floors {
    /// A do-nothing agent: no call, an empty answer.
    pub no_op: Floor,
    /// A read-only agent: the reference plan's reads, then the reference answer.
    pub read_only: Floor,
}

impl Floors {
    pub fn add(&mut self, other: &Floors) {
        self.no_op.add(&other.no_op);
        self.read_only.add(&other.read_only);
    }
}
