#!/usr/bin/env bash
# Make Debian's bubblewrap available: the sandbox runs tests and linters on model-proposed edits
# under bwrap (read-only filesystem, no home, no network). Installs it with apt when missing and
# we are root; otherwise says how and exits 0: setup never fails on it (without bubblewrap,
# model-written code is not run before review unless workflows.allow_unisolated is set).
set -uo pipefail
command -v bwrap >/dev/null 2>&1 && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "install-bubblewrap: bwrap is missing (install the bubblewrap package)" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -qq bubblewrap >/dev/null 2>&1 \
  || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq bubblewrap >/dev/null 2>&1; } \
  || echo "install-bubblewrap: could not install bubblewrap" >&2
exit 0
