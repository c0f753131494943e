#!/usr/bin/env bash
# Make Debian's Chromium available for the VS Code end-to-end test (code-server driven by
# playwright-core). Installs it with apt when missing and we are root; otherwise exits 1 so the
# caller skips that test and says so. Idempotent.
set -uo pipefail
[ -x /usr/bin/chromium ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "install-chromium: /usr/bin/chromium is missing (install Debian's chromium package)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null && apt-get install -y -qq chromium >/dev/null || exit 1
[ -x /usr/bin/chromium ]
