#!/usr/bin/env bash
# Scripted episodes per second on AgentDojo's own suites: through sieve-bench's bridge
# (sim:oracle following the ground truth, the package's important_instructions attack)
# next to AgentDojo's own ground-truth run of the same episodes, on this machine, in
# alternation, RUNS times each (mean ± sd). Not a test: read the figures, do not gate.
#
#   scripts/bench_agentdojo.sh [SUITES] [RUNS] [CONCURRENCY[,CONCURRENCY...]]
#       defaults: banking,slack,travel,workspace  3  2 (provider processes); with a list,
#       each run times the bridge at every concurrency in turn (1,2: the cost of the
#       bridge itself, then what its pool of processes gains)
#
# Needs the provider's venv (scripts/setup_agentdojo.sh). Both sides are timed from
# outside, start-up included (starting Python, importing the package, describing the
# suites). Each run's figures are printed as they come, so noise shows.
set -euo pipefail
cd "$(dirname "$0")/.."
suites=${1:-banking,slack,travel,workspace}
runs=${2:-3}
concurrency=${3:-2}
version=v1.2.2
python=${SIEVE_AGENTDOJO_PYTHON:-.venv-agentdojo/bin/python}
[ -x "$python" ] || { echo "no $python: run scripts/setup_agentdojo.sh" >&2; exit 1; }
cargo build --release --quiet
bin=target/release/sieve-bench
selector=$(echo "$suites" | tr ',' '\n' | sed "s|^|agentdojo@$version/|" | paste -sd, -)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for i in $(seq "$runs"); do
  for c in ${concurrency//,/ }; do
    s0=$(date +%s.%N)
    "$bin" run --suite "$selector" --attack agentdojo:important_instructions --model sim:oracle \
        --concurrency "$c" --out "$out/bridge$i-$c" --quiet >/dev/null 2>&1
    s1=$(date +%s.%N)
    echo "{\"side\": \"bridge\", \"concurrency\": $c, \"episodes\": $(wc -l < "$out/bridge$i-$c/episodes.jsonl"), \"seconds\": $(echo "$s1 - $s0" | bc)}" >> "$out/times"
    tail -1 "$out/times" >&2
  done
    # Timed from outside, as the bridge is: interpreter start-up and imports included.
    s0=$(date +%s.%N)
    n=$("$python" scripts/bench_agentdojo.py "$version" "$suites" | python3 -c 'import json,sys; print(json.load(sys.stdin)["episodes"])')
    s1=$(date +%s.%N)
    echo "{\"side\": \"agentdojo\", \"episodes\": $n, \"seconds\": $(echo "$s1 - $s0" | bc)}" >> "$out/times"
    tail -1 "$out/times" >&2
done
python3 scripts/bench_agentdojo_summary.py "$out/times"
