#!/usr/bin/env bash
# Install the TypeScript/JavaScript language server precise navigation and rename use
# (typescript-language-server with the typescript it runs), offline-friendly and cached.
#
# From the npm registry with npm, pinned, into the user's language-servers folder, never the
# project or its venv:
#   ${AGENTIC_LSP_SERVERS_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/agentic-lsp/language-servers}
# agentic-lsp looks for `typescript-language-server` on PATH, next to its interpreter and in that
# folder's node_modules/.bin (navigation/server_pool.py), so nothing is downloaded at run time.
# Idempotent: when the pinned versions are there, it does nothing. Needs node 20+ and npm; without
# them it says so and exits 1 (the tests that need the server are skipped then).
# Prints the server's path on stdout.
set -euo pipefail

SERVER_VERSION="${AGENTIC_LSP_TS_SERVER_VERSION:-5.1.3}"  # 6.x needs node 22.22+
TYPESCRIPT_VERSION="${AGENTIC_LSP_TYPESCRIPT_VERSION:-5.9.3}"
HOME_DIR="${AGENTIC_LSP_SERVERS_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/agentic-lsp/language-servers}"
TARGET="$HOME_DIR/node_modules/.bin/typescript-language-server"

installed() {  # $1: package name; its version in HOME_DIR, or nothing
  node -p "require('$HOME_DIR/node_modules/$1/package.json').version" 2>/dev/null || true
}

if [ -x "$TARGET" ] && [ "$(installed typescript-language-server)" = "$SERVER_VERSION" ] \
  && [ "$(installed typescript)" = "$TYPESCRIPT_VERSION" ]; then
  echo "$TARGET"
  exit 0
fi
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "install-typescript-server: node and npm are needed (node 20+)" >&2
  exit 1
fi
major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$major" -lt 20 ]; then
  echo "install-typescript-server: node $major is too old (typescript-language-server needs 20+)" >&2
  exit 1
fi
mkdir -p "$HOME_DIR"
[ -f "$HOME_DIR/package.json" ] || echo '{"private": true}' > "$HOME_DIR/package.json"
npm install --prefix "$HOME_DIR" --no-audit --no-fund --loglevel=error --save-exact \
  "typescript-language-server@$SERVER_VERSION" "typescript@$TYPESCRIPT_VERSION" >&2
echo "$TARGET"
