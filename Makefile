# Two commands on a fresh machine: `make demo` and `make test` (see README).
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin

.PHONY: install demo test lint typecheck bench clean

$(PY) install: pyproject.toml scripts/setup.sh
	VENV=$(VENV) bash scripts/setup.sh
	@touch $(PY)

install: $(PY)

demo: $(PY)
	HF_HUB_OFFLINE=1 $(BIN)/agentic-lsp demo

# Everything: lint (ruff check, ruff format --check) and mypy first, the real small model the
# suite runs end to end (scripts/install-local-model.sh; cached after the first run), then Python (unit,
# integration, LSP/MCP end to end, headless Neovim), then the VS Code extension (npm; its
# end-to-end test in code-server + Chromium when Chromium is available). Any failure fails the
# target; pytest exits 5 when it collects nothing: that is a failure here too.
test: $(PY) lint typecheck
	bash scripts/install-neovim.sh >/dev/null
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
