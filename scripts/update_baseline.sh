#!/usr/bin/env bash
# Regenerates results/baseline, the run CI's `compare` gate measures against. Run it
# when suites, attacks or defenses change on purpose, and commit the result with a
# message that says why the figures moved.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet
rm -rf results/baseline
target/debug/sieve-bench run --suite all --attack important --defense none --model sim:obedient --out results/baseline --quiet
# Records are enough to recompute every figure; traces would only bloat the repository.
rm -f results/baseline/traces.jsonl
target/debug/sieve-bench report results/baseline
