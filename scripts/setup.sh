#!/usr/bin/env bash
# Create .venv and install agentic-lsp with its dev tools, offline-friendly.
# torch is pinned first: torch==2.13.0 resolves to the CPU build; an unpinned torch pulled in
# by sentence-transformers would fetch a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
VENV="${VENV:-.venv}"
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -c "import torch" 2>/dev/null || "$VENV/bin/python" -m pip install --quiet "torch==2.13.0"
"$VENV/bin/python" -m pip install --quiet -e ".[dev]"
bash scripts/install-bubblewrap.sh || true  # sandbox isolation; never fails the setup
bash scripts/install-typescript-server.sh >/dev/null || true  # TS navigation; needs node 20+ and npm
echo "agentic-lsp installed in $VENV" >&2
