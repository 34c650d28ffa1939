#!/usr/bin/env bash
# Regenerates results/baseline, the run CI's `compare` gate measures against. Run it
# when suites, attacks or defenses change on purpose, and commit the result with a
# message that says why the figures moved.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet
rm -rf results/baseline
target/debug/sieve-bench run --suite all --attack important,context --defense none,sieve --model sim:obedient --out results/baseline --quiet
target/debug/sieve-bench report results/baseline >/dev/null
# `compare` reads summary.json when a run has no records; the records and traces of
# thousands of episodes would only bloat the repository (rerun this script to get them).
rm -f results/baseline/traces.jsonl results/baseline/episodes.jsonl results/baseline/.lock
cat results/baseline/summary.md
