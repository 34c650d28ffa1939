#!/usr/bin/env bash
# Throughput benchmark: scripted (`sim`) episodes per second, process start included
# (loading and validating suites, tokenizer tables), on
#   - the four-suite matrix: every dojo-style suite, each user task clean and under every
#     injection task with `important`;
#   - the three-suite AgentDojo-sized matrix: dojo-style banking, slack and travel, the same;
# next to AgentDojo's own scripted ground-truth run (scripts/bench_agentdojo.py: banking,
# slack and travel of the installed package, timed in-process) measured in the same
# script, in alternation, when a Python with agentdojo is available. RUNS runs of each,
# mean ± sd, after one untimed run that proves the suites and caches the proofs (as any
# first run does; scripts/bench.py). Not a test: the machine is shared and noisy; read
# the figures, never gate.
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
python3 scripts/bench.py --bin "$bin" --out "$out" --runs "$runs" --cores "$(nproc)" ${python:+--agentdojo-python "$python"}
