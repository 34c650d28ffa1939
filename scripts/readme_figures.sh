#!/usr/bin/env bash
# Reruns every simulated figure docs/sieve.md, docs/baselines.md and docs/suites.md quote, into one folder
# (default: results/readme-figures, not committed). Run it after a change that moves the
# scripted roles, suites or defenses, and update those pages' tables from the files it
# names. Each step is an ordinary command a reader can run alone; an interrupted run
# resumes where it stopped.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/readme-figures}
bin=${SIEVE_BENCH:-target/debug/sieve-bench}
[ -n "${SIEVE_BENCH:-}" ] || cargo build --quiet
mkdir -p "$out"
step() { echo "== $*" >&2; }

step "ablation and sweeps (docs/sieve.md: The ablation table): $out/ablate"
"$bin" ablate --suite banking --attack important \
  --sweep threshold=0.3:0.7:0.05 --sweep w_causal=0.1:0.9:0.2 --out "$out/ablate" --quiet

step "varied agent (docs/sieve.md: What a varied agent does to SIEVE): $out/varied-*"
for m in sim:oracle sim:oracle,varied sim:obedient sim:obedient,varied; do
  "$bin" run --suite all --attack important --defense sieve --model "$m" \
    --out "$out/varied-${m//[:,]/-}" --quiet
done
"$bin" run --suite all --attack important --defense none --model sim:oracle,varied \
  --out "$out/varied-none" --quiet

step "main table (docs/baselines.md): $out/main"
"$bin" run --suite dojo-style --attack important --defense all --model sim:obedient \
  --out "$out/main" --quiet
step "clean utility with oracle roles and with default roles: $out/clean-*"
"$bin" run --suite dojo-style --attack none --defense all \
  --model sim:oracle,judge_auc=1,planner_recall=1,planner_extra=0 --out "$out/clean-oracle-roles" --quiet
"$bin" run --suite dojo-style --attack none --defense all --model sim:oracle \
  --out "$out/clean-default-roles" --quiet

step "lure-style family (docs/suites.md: The lure-style family): $out/lure"
"$bin" run --suite lure-style --attack context --defense none,sieve,audit,tool_filter \
  --model sim:obedient --out "$out/lure" --quiet

for d in "$out"/*/; do "$bin" report "$d" >/dev/null; done
echo "figures in $out: summary.md per folder; ablation.md and sweep.md in $out/ablate" >&2
