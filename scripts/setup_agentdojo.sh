#!/usr/bin/env bash
# Creates the Python environment the AgentDojo provider runs in: a venv with the pinned
# agentdojo package from PyPI. Usage: scripts/setup_agentdojo.sh [venv-dir]
# (default .venv-agentdojo in the project root, where suites/external/agentdojo.toml
# looks; another place needs SIEVE_AGENTDOJO_PYTHON=<venv>/bin/python).
set -euo pipefail
cd "$(dirname "$0")/.."
AGENTDOJO_VERSION=0.1.35
venv=${1:-.venv-agentdojo}
python=${PYTHON:-python3}
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "
import importlib.metadata as m, sys
sys.exit(m.version('agentdojo') != '$AGENTDOJO_VERSION')" 2>/dev/null; then
    echo "agentdojo==$AGENTDOJO_VERSION is already installed in $venv"
    exit 0
fi
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' || {
    echo "agentdojo needs Python 3.10 or newer; set PYTHON=<a newer python>" >&2
    exit 1
}
"$python" -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "agentdojo==$AGENTDOJO_VERSION"
echo "installed agentdojo==$AGENTDOJO_VERSION into $venv"
echo "try: target/debug/sieve-bench run --suite agentdojo@v1.2.2/banking --attack agentdojo:important_instructions --model sim:oracle"
