#!/usr/bin/env bash
# Throughput of the openai: backend against a loopback server that answers after 50 ms:
# 2,000 calls at concurrency 64, raw and as whole episodes through the runner. Reports
# elapsed vs the floor (calls x 50 ms / 64) and peak RSS. Pass --debug to skip the
# release build; other arguments go to the benchmark (--calls, --concurrency, --delay-ms,
# --only calls|run).
set -euo pipefail
cd "$(dirname "$0")/.."
profile=(--release)
if [[ "${1:-}" == "--debug" ]]; then profile=(); shift; fi
exec cargo run -q "${profile[@]}" --example bench_http -- "$@"
