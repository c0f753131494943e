#!/usr/bin/env bash
# Install code-server (VS Code in the browser) from the npm registry for the end-to-end test,
# without running its install scripts (they download binaries from outside the registry):
# its VS Code dependencies are installed from npm and the native modules built with node-gyp
# against the local node headers. Needs node 20 (code-server 4.100 requires it), g++, make and
# python3. Prints the path to pass as AGENTIC_E2E_CODE_SERVER.
#   usage: test/e2e/install-code-server.sh [DIR]   (default: ./.code-server)
set -euo pipefail
VERSION=4.100.3
dir=$(mkdir -p "${1:-.code-server}" && cd "${1:-.code-server}" && pwd)
cd "$dir"
[ -f package.json ] || echo '{"name": "agentic-e2e-code-server", "private": true}' >package.json
npm install --ignore-scripts --no-audit --no-fund --prefer-offline "code-server@$VERSION" >&2
vscode="$dir/node_modules/code-server/lib/vscode"
(cd "$vscode" && npm install --omit=dev --ignore-scripts --no-audit --no-fund --prefer-offline >&2)
(cd "$vscode/extensions" && npm install --omit=dev --ignore-scripts --no-audit --no-fund --prefer-offline >&2)
gyp="$(dirname "$(command -v npm)")/../lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js"
[ -f "$gyp" ] || gyp=$(find / -path '*/npm/node_modules/node-gyp/bin/node-gyp.js' 2>/dev/null | head -1)
nodedir=$(dirname "$(dirname "$(command -v node)")")
for module in @vscode/spdlog node-pty native-watchdog @vscode/deviceid; do
  (cd "$vscode/node_modules/$module" && node "$gyp" rebuild --nodedir="$nodedir" >&2)
done
(cd "$dir/node_modules/argon2" && node "$gyp" rebuild --nodedir="$nodedir" -- \
  -Dmodule_name=argon2 -Dmodule_path=./lib/binding/napi-v3 -Dnapi_build_version=3 >&2)
# what code-server's postinstall.sh does besides installing
ln -sfn node_modules "$vscode/node_modules.asar"
(cd "$vscode/bin/remote-cli" && ln -sfn code-linux.sh code-server)
(cd "$vscode/bin/helpers" && ln -sfn browser-linux.sh browser.sh)
echo "$dir/node_modules/code-server/out/node/entry.js"
