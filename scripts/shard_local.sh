#!/usr/bin/env bash
# Runs the same array a Slurm or Kubernetes job would, on this machine: N processes
# each run `--shard k/N`, `merge` joins them, and the merged summary must equal the
# unsharded run's (same rows, same figures). CI runs it with 3 shards.
#
#   scripts/shard_local.sh [N] [BIN]
#
# N defaults to 3. BIN defaults to `sieve-bench` on PATH (`cargo install --path .`), else
# target/release/sieve-bench, else target/debug/sieve-bench; with none of them the script
# says how to build one. Every command's errors are shown.
#
# The matrix is small on purpose (a few tasks of two suites, two defenses): it proves
# the split and the merge, not speed.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-3}
if ! [[ "$n" =~ ^[1-9][0-9]*$ ]]; then
  echo "shard_local.sh: N must be a whole number >= 1, got \`$n\`" >&2
  exit 2
fi
if [[ $# -ge 2 ]]; then
  bin=$2
elif command -v sieve-bench >/dev/null 2>&1; then
  bin=$(command -v sieve-bench)
elif [[ -x target/release/sieve-bench ]]; then
  bin=target/release/sieve-bench
elif [[ -x target/debug/sieve-bench ]]; then
  bin=target/debug/sieve-bench
else
  echo "shard_local.sh: no sieve-bench binary: none on PATH, none in target/release or target/debug." >&2
  echo "  Build one with \`cargo build --release\` (or name it: scripts/shard_local.sh N BIN)." >&2
  exit 2
fi
if ! [[ -x "$bin" ]] && ! command -v "$bin" >/dev/null 2>&1; then
  echo "shard_local.sh: \`$bin\` is not an executable sieve-bench binary" >&2
  exit 2
fi
echo "binary: $bin; shards: $n"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
matrix=(--suite banking,slack --attack important,tools --defense none,sieve
  --user-tasks user_task_0,user_task_1,user_task_2
  --injection-tasks injection_task_0,injection_task_1 --quiet)
# Each step's errors go to stderr as they are; a failing step stops the script with its
# own exit code after saying which step it was.
step() {
  local what=$1
  shift
  local code=0
  "$@" || code=$?
  if [[ $code -ne 0 ]]; then
    echo "shard_local.sh: $what failed (exit $code)" >&2
    exit "$code"
  fi
}
step "the unsharded run" "$bin" run "${matrix[@]}" --out "$out/whole"
pids=()
for ((k = 0; k < n; k++)); do
  "$bin" run "${matrix[@]}" --shard "$k/$n" --out "$out/shard$k" &
  pids+=($!)
done
for k in "${!pids[@]}"; do
  code=0
  wait "${pids[$k]}" || code=$?
  if [[ $code -ne 0 ]]; then
    echo "shard_local.sh: shard $k/$n failed (exit $code)" >&2
    exit "$code"
  fi
done
shards=()
for ((k = 0; k < n; k++)); do shards+=("$out/shard$k"); done
step "the merge" "$bin" merge --out "$out/merged" "${shards[@]}" >/dev/null
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
