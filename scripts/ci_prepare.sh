#!/usr/bin/env bash
# CI's downloads, run in the background while the Rust build keeps both cores busy (they
# wait on the network and disk, not the CPU): the Debian packages of the browser and LaTeX
# tests, the AgentDojo venv with the Python checks' tools, and the local model's venv.
# Every script it calls is idempotent, so the CI steps that call them again later find
# everything installed. Usage: scripts/ci_prepare.sh   (.ci/run waits for it before the
# tests, and shows its log when it fails)
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null || ! command -v pdflatex >/dev/null; then
  if [ "$(id -u)" = 0 ]; then apt_get=(apt-get); else apt_get=(sudo apt-get); fi
  "${apt_get[@]}" update -qq
  command -v chromium >/dev/null ||
    DEBIAN_FRONTEND=noninteractive "${apt_get[@]}" install -y -qq chromium >/dev/null
  command -v pdflatex >/dev/null ||
    DEBIAN_FRONTEND=noninteractive "${apt_get[@]}" install -y -qq --no-install-recommends texlive-latex-recommended >/dev/null
fi
echo "browser and LaTeX: $(command -v chromium), $(command -v pdflatex)"
scripts/setup_agentdojo.sh --checks
scripts/setup_local_model.sh --install
echo "the local model's venv is ready"
