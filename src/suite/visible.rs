//! What the agent can see in a user task: the one function the fact checks ask. Until the
//! prompt-as-sent rendering of issue 20 item 1 is merged, it is the task's prompt, the
//! suite's date and the outputs of running the task's reference plan on the benign
//! environment; swap the body for that rendering when it lands.

use super::{Suite, UserTask, run_plan};

/// The text an agent solving `task` reads: prompt, date and every reference-plan output.
pub fn agent_visible(suite: &Suite, task: &UserTask) -> String {
    let mut env = suite.env.benign();
    let run = run_plan(&suite.tools, &mut env, &task.plan);
    let mut out = format!("{}\n{}", task.prompt, suite.meta.date);
    for o in run.outputs {
        out.push('\n');
        out.push_str(&o);
    }
    out
}
