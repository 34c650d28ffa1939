#!/usr/bin/env bash
# Runs the same array a Slurm or Kubernetes job would, on this machine: N processes
# each run `--shard k/N`, `merge` joins them, and the merged summary must equal the
# unsharded run's (same rows, same figures). CI runs it with 3 shards.
#
#   scripts/shard_local.sh [N] [BIN]      (defaults: 3, target/debug/sieve-bench)
#
# The matrix is small on purpose (a few tasks of two suites, two defenses): it proves
# the split and the merge, not speed.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-3}
bin=${2:-target/debug/sieve-bench}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
matrix=(--suite banking,slack --attack important,tools --defense none,sieve
  --user-tasks user_task_0,user_task_1,user_task_2
  --injection-tasks injection_task_0,injection_task_1 --quiet)
"$bin" run "${matrix[@]}" --out "$out/whole" 2>/dev/null
pids=()
for ((k = 0; k < n; k++)); do
  "$bin" run "${matrix[@]}" --shard "$k/$n" --out "$out/shard$k" 2>/dev/null &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
shards=()
for ((k = 0; k < n; k++)); do shards+=("$out/shard$k"); done
"$bin" merge --out "$out/merged" "${shards[@]}" >/dev/null 2>&1
whole=$(wc -l < "$out/whole/episodes.jsonl")
merged=$(wc -l < "$out/merged/episodes.jsonl")
echo "episodes: unsharded $whole, merged from $n shards $merged"
# Row order may differ (the merged folder has no command line); the rows may not.
if diff <(sort "$out/whole/summary.csv") <(sort "$out/merged/summary.csv"); then
  echo "merged summary equals the unsharded one ($(($(wc -l < "$out/whole/summary.csv") - 1)) rows)"
else
  echo "FAIL: the merged summary differs from the unsharded one" >&2
  exit 1
fi
