"""``agentic-lsp trust [PATH] [--revoke]``: let a workspace's own settings file set every key.

Trust is recorded in the user's trust store (next to the user config file), never in the
workspace. Servers already running read it when they next load the folder's settings.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from agentic_lsp.config import load_settings, user_config_path
from agentic_lsp.errors import WorkspaceError
from agentic_lsp.trust import set_trusted, trust_store_path


def trust(args: argparse.Namespace) -> int:
    root = Path(args.path).expanduser().resolve()
    if not root.is_dir():
        raise WorkspaceError(f"{root} is not a directory", "pass the workspace folder")
    store = trust_store_path(user_config_path())
    changed = set_trusted(store, root, trusted=not args.revoke)
    if args.revoke:
        state = "no longer trusted" if changed else "was not in the trust store"
    else:
        state = "trusted" if changed else "already trusted"
    print(f"{root}: {state} ({store})")
    loaded = load_settings(root)
    if loaded.trusted:
        print(f"its settings file may set every key ({loaded.trust_source})")
    else:
        for warning in loaded.warnings:
            print(f"ignored: {warning}")
        if not loaded.warnings:
            print("its settings file sets no user-only key")
    print("running servers apply it when they reload the folder (agentic.trustWorkspace, restart)")
    return 0
