#!/usr/bin/env bash
# Throughput benchmark: episodes per second for a whole suite matrix with the scripted
# `sim` model, pinned to one core. Not a test: timing on shared machines is noisy, so
# read the figure, do not gate on it.
#
#   scripts/bench.sh [SUITE] [SEEDS]      (defaults: banking, 20)
#
# The matrix (clean + every injection task under `important`) is repeated over SEEDS
# seeds so that start-up (suite loading, tokenizer tables) is amortised.
set -euo pipefail
cd "$(dirname "$0")/.."
suite=${1:-banking}
seeds=${2:-20}
cargo build --release --quiet
bin=target/release/sieve-bench
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
pin=()
command -v taskset >/dev/null && pin=(taskset -c 0)
start=$(date +%s.%N)
"${pin[@]}" "$bin" run --suite "$suite" --attack important --seeds "$seeds" --concurrency 1 --out "$out/run" --quiet 2>/dev/null
end=$(date +%s.%N)
episodes=$(wc -l < "$out/run/episodes.jsonl")
# Start-up (loading and validating suites, tokenizer tables) measured in the same
# session as the cost of a one-episode run, so it can be subtracted.
s0=$(date +%s.%N)
"${pin[@]}" "$bin" run --suite "$suite" --attack none --no-clean --out "$out/startup" --quiet 2>/dev/null
s1=$(date +%s.%N)
python3 - "$episodes" "$start" "$end" "$s0" "$s1" <<'PY'
import sys
n, a, b, s0, s1 = int(sys.argv[1]), *map(float, sys.argv[2:])
total, startup = b - a, s1 - s0
eps = n / total
print(f"episodes: {n}  wall: {total:.3f} s  start-up (an empty run): {startup:.3f} s")
print(f"throughput on one core: {eps:,.0f} episodes/s  (excluding start-up: {n / max(total - startup, 1e-9):,.0f}/s)")
print(f"vs AgentDojo's scripted ground truth, about 13 episodes/s on 2 cores (documented in shared/reference/agentdojo.md, not measured here): {eps / 13:,.0f}x")
PY
