#!/usr/bin/env bash
# Creates the Python environment the AgentDojo provider runs in: a venv with the pinned
# agentdojo package from PyPI. Usage: scripts/setup_agentdojo.sh [--checks] [venv-dir]
# (default .venv-agentdojo in the project root, where suites/external/agentdojo.toml
# looks; another place needs SIEVE_AGENTDOJO_PYTHON=<venv>/bin/python). With --checks it
# also installs the pinned tools CI checks the Python with (ruff, mypy, pytest).
set -euo pipefail
cd "$(dirname "$0")/.."
AGENTDOJO_VERSION=0.1.35
checks=false
if [ "${1:-}" = "--checks" ]; then
    checks=true
    shift
fi
venv=${1:-.venv-agentdojo}
python=${PYTHON:-python3}
install_checks() {
    if $checks; then
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
            ruff==0.17.6 mypy==2.4.1 pytest==9.2.0
    fi
}
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "
import importlib.metadata as m, sys
sys.exit(m.version('agentdojo') != '$AGENTDOJO_VERSION')" 2>/dev/null; then
    echo "agentdojo==$AGENTDOJO_VERSION is already installed in $venv"
    install_checks
    exit 0
fi
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' || {
    echo "agentdojo needs Python 3.10 or newer; set PYTHON=<a newer python>" >&2
    exit 1
}
"$python" -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "agentdojo==$AGENTDOJO_VERSION"
install_checks
echo "installed agentdojo==$AGENTDOJO_VERSION into $venv"
echo "try: target/debug/sieve-bench run --suite agentdojo@v1.2.2/banking --attack agentdojo:important_instructions --model sim:oracle"
