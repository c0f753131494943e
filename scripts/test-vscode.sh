#!/usr/bin/env bash
# The VS Code extension (editors/vscode): install, compile, unit + integration tests, package.
# Offline once the npm cache is warm (npm ci --prefer-offline). The integration tests drive the
# project's Python server (.venv/bin/python -m agentic_lsp serve; override with
# AGENTIC_TEST_PYTHON) and skip, saying so, when it is not installed.
# End to end in a real extension host (code-server + Chromium, offline) when AGENTIC_E2E=1
# (installs code-server from npm into editors/vscode/.code-server; needs Debian's chromium at
# /usr/bin/chromium, g++ and make) or when AGENTIC_E2E_CODE_SERVER names an installed one:
# every test/e2e/*.e2e.test.ts, among them an MCP client's find_references answered by VS Code's
# built-in TypeScript support through the extension (editor:vscode, editorNavigation.e2e.test.ts).
# Skips (exit 0, with a message) only when node or npm is missing.
set -euo pipefail
cd "$(dirname "$0")/../editors/vscode"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "test-vscode: SKIPPED: node and npm are not installed, so the VS Code extension was not built or tested"
  exit 0
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "test-vscode: node $(node --version) is too old; the extension needs node 20 or newer" >&2
  exit 1
fi

export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false
start=$(date +%s)
npm ci --prefer-offline
npm run compile
npm test
rm -f agentic-lsp.vsix
npm run package
npx --no-install vsce ls | grep -qx 'out/src/extension.js' || {
  echo "test-vscode: the packaged extension lacks out/src/extension.js" >&2
  exit 1
}
if [ -z "${AGENTIC_E2E_CODE_SERVER:-}" ] && [ "${AGENTIC_E2E:-0}" = 1 ]; then
  AGENTIC_E2E_CODE_SERVER=$(bash test/e2e/install-code-server.sh .code-server | tail -1)
  export AGENTIC_E2E_CODE_SERVER
fi
if [ -n "${AGENTIC_E2E_CODE_SERVER:-}" ]; then
  npm run test:e2e
  echo "test-vscode: end-to-end screenshots in $(pwd)/test-results"
else
  echo "test-vscode: end-to-end test not run (set AGENTIC_E2E=1 to install code-server and run it)"
fi
echo "test-vscode: built, tested and packaged $(pwd)/agentic-lsp.vsix ($(wc -c <agentic-lsp.vsix) bytes) in $(( $(date +%s) - start ))s"
