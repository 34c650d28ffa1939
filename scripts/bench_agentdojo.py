"""AgentDojo's own scripted run, timed: for the given suites of the installed package,
every user task clean and under every injection task with the package's
`important_instructions` attack, solved by the package's ground-truth pipeline and scored
by the package's `run_task_with_pipeline`. Prints one JSON line: episodes and seconds.

Run by scripts/bench_agentdojo.sh with the provider's Python, beside the same matrix
through sieve-bench, so both figures come from the same machine at the same time.
"""

import json
import sys
import time

from agentdojo.agent_pipeline.ground_truth_pipeline import GroundTruthPipeline
from agentdojo.attacks.attack_registry import load_attack
from agentdojo.task_suite.load_suites import get_suite


class NamedModel:
    """What AgentDojo's attacks read from a pipeline: the model's name."""

    name = "gpt-4o-2024-05-13"


def main(version, suites):
    start = time.perf_counter()
    episodes = 0
    for name in suites:
        suite = get_suite(version, name)
        attack = load_attack("important_instructions", suite, NamedModel())
        for user_task in suite.user_tasks.values():
            suite.run_task_with_pipeline(GroundTruthPipeline(user_task), user_task, None, {})
            episodes += 1
            for injection_task in suite.injection_tasks.values():
                injections = attack.attack(user_task, injection_task)
                suite.run_task_with_pipeline(GroundTruthPipeline(user_task), user_task, injection_task, injections)
                episodes += 1
    print(json.dumps({"episodes": episodes, "seconds": time.perf_counter() - start}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2].split(","))
