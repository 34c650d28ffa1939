#!/usr/bin/env bash
# Report benchmark: time and peak memory of `report` over N synthetic episode records
# (copies of a real sim run's records under fresh keys). Not a test: read the figures.
#
#   scripts/bench_report.sh [N] [FORMAT]      (defaults: 1000000, table)
#
# Needs about 1.5 KB of disk per record for the synthetic run.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000000}
format=${2:-table}
cargo build --release --quiet
bin=target/release/sieve-bench
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$bin" run --suite all --attack important --defense none,sieve --out "$out/seed" --quiet 2>/dev/null
python3 - "$out/seed/episodes.jsonl" "$out/big" "$n" <<'PY'
import json, os, sys
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = [json.loads(l) for l in open(src) if l.strip()]
os.makedirs(dst, exist_ok=True)
with open(os.path.join(dst, "episodes.jsonl"), "w") as f:
    for i in range(n):
        r = dict(lines[i % len(lines)])
        r["key"] = f"{r['key']}|copy{i // len(lines)}"
        f.write(json.dumps(r) + "\n")
PY
size=$(du -m "$out/big/episodes.jsonl" | cut -f1)
echo "records: $n ($size MB of JSONL)"
/usr/bin/time -f "report --format $format: %e s wall, peak RSS %M KB" \
  "$bin" report "$out/big" --format "$format" --out "$out/report.out" 2>&1 | tail -1
