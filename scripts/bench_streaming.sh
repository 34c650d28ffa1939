#!/usr/bin/env bash
# Streaming benchmark: peak memory of `merge` and of `run` resuming, over N synthetic
# episode records, beside `report`'s over the same records in the same script. All three
# stream `episodes.jsonl` through one reader, so their peaks should stay near report's
# whatever N is; the figures to read are the ratios, and resume's peak over N records
# against its peak over N/10 (flat memory: about 1x). Not a test: the machine is shared.
#
#   scripts/bench_streaming.sh [N]            (default: 1000000)
#
# SIEVE_BENCH_BIN=path   use this binary instead of building the release one;
# BENCH_DATA=dir         work in dir (default: a temporary folder, removed after).
# Needs about 7 KB of disk per record (two shards and their merge: 7 GB for a million).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000000}
bin=${SIEVE_BENCH_BIN:-}
if [ -z "$bin" ]; then
  cargo build --release --quiet
  bin=target/release/sieve-bench
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
data=${BENCH_DATA:-$tmp/data}
rm -rf "$data"
mkdir -p "$data"
seed_args=(run --suite all --attack important --defense none,sieve --quiet)
"$bin" "${seed_args[@]}" --out "$data/seed" 2>/dev/null
python3 scripts/synth_records.py "$data/seed" "$data/s0" "$n" 0/2
python3 scripts/synth_records.py "$data/seed" "$data/s1" "$n" 1/2
echo "records: $n ($(du -cm "$data"/s?/episodes.jsonl | tail -1 | cut -f1) MB of JSONL), $(nproc) cores"
peak() { # label, command...: prints the peak RSS in KB
  local label=$1
  shift
  /usr/bin/time -f "%M %e" -o "$tmp/time" "$@" >/dev/null 2>"$tmp/err" || {
    cat "$tmp/err" >&2
    return 1
  }
  read -r kb secs <"$tmp/time"
  echo "$label: peak RSS $((kb / 1024)) MB, $secs s wall" >&2
  echo "$kb"
}
merge_kb=$(peak "merge of two shards" "$bin" merge --out "$data/m" "$data/s0" "$data/s1")
rm -rf "$data/s0" "$data/s1"
report_kb=$(peak "report" "$bin" report "$data/m" --format table --out "$tmp/report.txt")
resume_kb=$(peak "run resuming (nothing left to run)" "$bin" "${seed_args[@]}" --out "$data/m")
# Resume again over a tenth of the records: flat memory means the same peak at both sizes.
# (At least the seed run's own records, so that folder too has nothing left to run.)
small=$((n / 10))
seed_n=$(wc -l <"$data/seed/episodes.jsonl")
[ "$small" -ge "$seed_n" ] || small=$seed_n
python3 scripts/synth_records.py "$data/seed" "$data/small" "$small"
small_kb=$(peak "run resuming over $small records" "$bin" "${seed_args[@]}" --out "$data/small")
awk -v r="$report_kb" -v m="$merge_kb" -v s="$resume_kb" -v t="$small_kb" -v n="$n" -v k="$small" \
  'BEGIN { printf "peak RSS against report'"'"'s: merge %.2fx, run resume %.2fx; run resume over %d records against over %d: %.2fx\n", m / r, s / r, n, k, s / t }'
