#!/usr/bin/env bash
# CI's integration test of the AgentDojo bridge with the real package: installs
# agentdojo==0.1.35 into a venv (reused when present; pip caches the wheels), then runs
# AgentDojo's suites with the package's own important_instructions attack and checks what
# AgentDojo's ground truth guarantees (see docs/agentdojo.md): the oracle
# solves banking and slack under attack with no attack won, and the obedient agent wins
# every v1.2.2 pair that an agent doing both tasks can win; a denial-of-service attack runs
# once per user task and succeeds where the stopping agent leaves the task undone; data-only
# attacks are derived through the bridge and fool the obedient agent, never the oracle.
# Before the runs: ruff, mypy and pytest on the adapter and the scripts' Python.
# Usage: scripts/ci_agentdojo.sh <sieve-bench binary> <scratch dir>
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$1
out=$2
scripts/setup_agentdojo.sh --checks
python=${SIEVE_AGENTDOJO_PYTHON:-.venv-agentdojo/bin/python}
# The adapter's and scripts' Python: lint, format, types (pyproject.toml), and the
# protocol's tests against the real package.
"$python" -m ruff check .
"$python" -m ruff format --check .
"$python" -m mypy
"$python" -m pytest -q -p no:cacheprovider
suites=agentdojo@v1.2.2/banking,agentdojo@v1.2.2/slack
attack=agentdojo:important_instructions
"$bin" list suites | grep -q "agentdojo@v1.2.2/banking"
# This project's reference plans for the injection goals AgentDojo gives none must trip the
# package's own security checks (and doing nothing, or stopping one call short, must not).
"$python" adapters/agentdojo/provider.py --self-test
"$bin" run --suite "$suites" --attack "$attack" --model sim:oracle --concurrency 2 --out "$out/oracle" --quiet
# Which attacked pairs can be won at all: both tasks' plans in either order, scored by the
# package's own security check (docs/agentdojo.md lists the pairs neither order wins).
"$python" adapters/agentdojo/provider.py --pairs v1.2.2 2 > "$out/pairs.jsonl"
"$bin" run --suite agentdojo@v1.2.2 --attack "$attack" --model sim:obedient \
    --concurrency 2 --out "$out/obedient" --quiet
"$bin" run --suite agentdojo@v1.2.2/banking --attack "$attack" --model sim:obedient \
    --defense sieve --concurrency 2 --out "$out/sieve" --quiet
# A denial-of-service attack runs once per user task, scored as not utility.
for m in oracle obedient; do
    "$bin" run --suite agentdojo@v1.2.2/banking --attack agentdojo:dos --model "sim:$m" \
        --concurrency 2 --out "$out/dos-$m" --quiet
done
# Data-only attacks derived through the bridge (the plans replayed in the provider), their
# goals judged by sieve-bench on the calls the provider ran.
for m in oracle obedient; do
    "$bin" run --suite "$suites" --attack data_only --model "sim:$m" \
        --concurrency 2 --out "$out/data-only-$m" --quiet
done
python3 scripts/ci_agentdojo_check.py "$out" suites/external/agentdojo/known-defects-v1.2.2.toml
# The banking no-op floor as the tables print it, beside BU and UA.
COLUMNS=200 "$bin" report "$out/oracle" | grep -q "5/16"
