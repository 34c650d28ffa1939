#!/usr/bin/env bash
# Scripted episodes per second on AgentDojo's own suites: through sieve-bench's bridge
# (sim:oracle following the ground truth, the package's important_instructions attack)
# next to AgentDojo's own ground-truth run of the same episodes, on this machine, in
# alternation, RUNS times each (mean ± sd). Not a test: read the figures, do not gate.
#
#   scripts/bench_agentdojo.sh [SUITES] [RUNS] [CONCURRENCY]
#       defaults: banking,slack,travel,workspace  3  2 (provider processes)
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
    s0=$(date +%s.%N)
    "$bin" run --suite "$selector" --attack agentdojo:important_instructions --model sim:oracle \
        --concurrency "$concurrency" --out "$out/bridge$i" --quiet >/dev/null
    s1=$(date +%s.%N)
    echo "{\"side\": \"bridge\", \"episodes\": $(wc -l < "$out/bridge$i/episodes.jsonl"), \"seconds\": $(echo "$s1 - $s0" | bc)}" >> "$out/times"
    tail -1 "$out/times" >&2
    # Timed from outside, as the bridge is: interpreter start-up and imports included.
    s0=$(date +%s.%N)
    n=$("$python" scripts/bench_agentdojo.py "$version" "$suites" | python3 -c 'import json,sys; print(json.load(sys.stdin)["episodes"])')
    s1=$(date +%s.%N)
    echo "{\"side\": \"agentdojo\", \"episodes\": $n, \"seconds\": $(echo "$s1 - $s0" | bc)}" >> "$out/times"
    tail -1 "$out/times" >&2
done
python3 - "$out/times" "$concurrency" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for side, label in [("bridge", f"sieve-bench bridge ({sys.argv[2]} provider processes)"),
                    ("agentdojo", "AgentDojo's own ground-truth run (one process)")]:
    rates = [r["episodes"] / r["seconds"] for r in rows if r["side"] == side]
    n = [r["episodes"] for r in rows if r["side"] == side][0]
    sd = statistics.stdev(rates) if len(rates) > 1 else 0.0
    print(f"{label}: {n} episodes, {statistics.mean(rates):.1f} ± {sd:.1f} episodes/s over {len(rates)} runs")
PY
