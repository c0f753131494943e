# Two commands on a fresh machine: `make demo` and `make test` (see README).
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
BIN := $(VENV)/bin

.PHONY: install dist demo test lint typecheck bench clean

$(PY): pyproject.toml scripts/setup.sh
	VENV=$(VENV) bash scripts/setup.sh
	@touch $(PY)

# runs the setup every time (quick when everything is installed), once
install:
	VENV=$(VENV) bash scripts/setup.sh
	@touch $(PY)

# The wheel (and sdist) that a tool install takes: `uv tool install dist/agentic_lsp-*.whl` or
# `pipx install dist/agentic_lsp-*.whl` (README, "Install as a tool"). Built by `python -m build`
# in a throwaway environment under build/, so it needs neither .venv nor torch.
DIST ?= dist
DIST_ENV ?= build/dist-env
dist:
	rm -rf $(DIST) $(DIST_ENV)
	$(PYTHON) -m venv $(DIST_ENV)
	$(DIST_ENV)/bin/python -m pip install --quiet --disable-pip-version-check build
	$(DIST_ENV)/bin/python -m build --outdir $(DIST) .
	@ls $(DIST)/agentic_lsp-*.whl

demo: $(PY)
	HF_HUB_OFFLINE=1 $(BIN)/agentic-lsp demo

# Everything: lint (ruff check, ruff format --check) and mypy first, the real small model the
# suite runs end to end (scripts/install-local-model.sh; cached after the first run), then Python (unit,
# integration, LSP/MCP end to end, headless Neovim; typescript-language-server from npm, cached,
# scripts/install-typescript-server.sh), then the VS Code extension (npm; its
# end-to-end test in code-server + Chromium when Chromium is available). Any failure fails the
# target; pytest exits 5 when it collects nothing: that is a failure here too.
test: $(PY) lint typecheck
	bash scripts/install-neovim.sh >/dev/null
	bash scripts/install-typescript-server.sh >/dev/null || echo "no TypeScript server: its tests are skipped" >&2
	VENV=$(VENV) bash scripts/install-local-model.sh
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q -ra $(PYTEST_ARGS); \
	  status=$$?; [ $$status -ne 5 ] || { echo "no tests were collected" >&2; exit 1; }; exit $$status
	AGENTIC_E2E=$$(bash scripts/install-chromium.sh && echo 1 || echo 0) bash scripts/test-vscode.sh

lint: $(PY)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

typecheck: $(PY)
	$(BIN)/mypy

bench: $(PY)
	HF_HUB_OFFLINE=1 $(BIN)/python benchmarks/index_bench.py

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
