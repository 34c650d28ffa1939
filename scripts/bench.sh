#!/usr/bin/env bash
# Throughput benchmark: scripted (`sim`) episodes per second, process start included
# (loading and validating suites, tokenizer tables), on
#   - the four-suite matrix: every dojo-style suite, each user task clean and under every
#     injection task with `important`;
#   - the three-suite AgentDojo-sized matrix: dojo-style banking, slack and travel, the same;
# next to AgentDojo's own scripted ground-truth run (scripts/bench_agentdojo.py: banking,
# slack and travel of the installed package, timed in-process) measured in the same
# script, in alternation, when a Python with agentdojo is available. RUNS runs of each,
# mean ± sd. Not a test: the machine is shared and noisy; read the figures, never gate.
#
#   scripts/bench.sh [RUNS]      (default 3)
#
# SIEVE_AGENTDOJO_PYTHON   Python with agentdojo installed (default .venv-agentdojo/bin/python,
#                          see scripts/setup_agentdojo.sh); without it no ratio is printed.
# SIEVE_BENCH_BIN          use this binary instead of building the release one.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
bin=${SIEVE_BENCH_BIN:-}
if [ -z "$bin" ]; then
  cargo build --release --quiet
  bin=target/release/sieve-bench
fi
python=${SIEVE_AGENTDOJO_PYTHON:-.venv-agentdojo/bin/python}
if [ -x "$python" ] && "$python" -c "import agentdojo" 2>/dev/null; then
  :
else
  python=""
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
python3 - "$bin" "$out" "$runs" "$python" "$(nproc)" <<'PY'
import json, statistics, subprocess, sys, time
bin, out, runs, python, cores = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
matrices = [
    ("four-suite matrix (dojo-style, important)", "dojo-style"),
    ("three-suite AgentDojo-sized matrix (dojo-style banking, slack, travel; important)",
     "dojo-style/banking,dojo-style/slack,dojo-style/travel"),
]
rates = {label: [] for label, _ in matrices}
episodes = {}
dojo_in, dojo_wall, dojo_n = [], [], None
for i in range(runs):
    for j, (label, suites) in enumerate(matrices):
        d = f"{out}/run{i}-{j}"
        t0 = time.perf_counter()
        subprocess.run([bin, "run", "--suite", suites, "--attack", "important", "--out", d, "--quiet"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t = time.perf_counter() - t0
        n = sum(1 for l in open(f"{d}/episodes.jsonl") if l.strip())
        episodes[label] = n
        rates[label].append(n / t)
        subprocess.run(["rm", "-rf", d], check=True)
    if python:
        t0 = time.perf_counter()
        r = subprocess.run([python, "scripts/bench_agentdojo.py", "v1.2.2", "banking,slack,travel"],
                           check=True, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        got = json.loads(r.stdout.strip().splitlines()[-1])
        dojo_n = got["episodes"]
        dojo_in.append(got["episodes"] / got["seconds"])
        dojo_wall.append(got["episodes"] / wall)

def fmt(xs):
    sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
    return f"{statistics.mean(xs):,.0f} ± {sd:,.0f}"

print(f"{runs} run(s) each, {cores} cores (shared: figures are noisy), sieve-bench's process start included")
for label, _ in matrices:
    print(f"sieve-bench, {label}: {episodes[label]} episodes, {fmt(rates[label])} episodes/s")
if python:
    ref = statistics.mean(dojo_in)
    print(f"AgentDojo's own ground-truth run (banking, slack, travel; in-process, import excluded): "
          f"{dojo_n} episodes, {statistics.mean(dojo_in):.1f} ± {statistics.stdev(dojo_in) if runs > 1 else 0:.1f} episodes/s "
          f"({statistics.mean(dojo_wall):.1f} episodes/s with its interpreter's start)")
    for label, _ in matrices:
        print(f"ratio, {label.split(' (')[0]} vs AgentDojo in-process: {statistics.mean(rates[label]) / ref:,.0f}x")
else:
    print("AgentDojo not measured (no Python with agentdojo: set SIEVE_AGENTDOJO_PYTHON or run "
          "scripts/setup_agentdojo.sh), so no ratio is printed. The issue's reference figure, "
          "about 38 episodes/s in-process on this machine, was measured elsewhere, not by this run.")
PY
