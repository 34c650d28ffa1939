#!/usr/bin/env bash
# Report benchmark: time and peak memory of `report` over N synthetic episode records
# (copies of a real sim run's records under fresh keys), with every thread and with one
# (RAYON_NUM_THREADS=1), so the effect of the parallel parsing shows. Not a test: the
# machine is shared and timings are noisy; read the figures.
#
#   scripts/bench_report.sh [N] [FORMAT]      (defaults: 1000000, table)
#
# SIEVE_BENCH_BIN=path   use this binary instead of building the release one (e.g. to
#                        measure an older build on the same data);
# BENCH_DATA=dir         keep the synthetic run in dir and reuse it when it has N records.
# Needs about 3.5 KB of disk per record (3.3 GB for a million); delete BENCH_DATA after.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000000}
format=${2:-table}
bin=${SIEVE_BENCH_BIN:-}
if [ -z "$bin" ]; then
  cargo build --release --quiet
  bin=target/release/sieve-bench
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
data=${BENCH_DATA:-$tmp/data}
mkdir -p "$data"
have=0
[ -f "$data/big/episodes.jsonl" ] && have=$(wc -l < "$data/big/episodes.jsonl")
if [ "$have" != "$n" ]; then
  rm -rf "$data/seed" "$data/big"
  "$bin" run --suite all --attack important --defense none,sieve --out "$data/seed" --quiet 2>/dev/null
  python3 scripts/synth_records.py "$data/seed" "$data/big" "$n"
fi
size=$(du -m "$data/big/episodes.jsonl" | cut -f1)
echo "records: $n ($size MB of JSONL), $(nproc) cores"
for threads in "" 1; do
  label="every thread"
  [ -n "$threads" ] && label="RAYON_NUM_THREADS=$threads"
  env ${threads:+RAYON_NUM_THREADS=$threads} /usr/bin/time -f "report --format $format ($label): %e s wall, %U s user, peak RSS %M KB" \
    "$bin" report "$data/big" --format "$format" --out "$tmp/report.out" 2>&1 | tail -1
done
