"""``agentic-lsp setup CLIENT``: configure an editor or LLM client to start agentic-lsp.

Shows the diff of every file it would change, then writes only after a "y" on a terminal or
``--yes``; ``--dry-run`` stops after the diff, ``--print`` only prints the entries. Each changed
file is backed up first; a file that already holds the entry is left alone ("already
configured"), and a file that does not parse is refused with nothing written.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from agentic_lsp.cli.setup_clients import SetupEnv, SetupOptions, plan_client, server_command
from agentic_lsp.cli.setup_files import plan_changes, snippet, write_change


def _confirm(ask: Callable[[str], str]) -> bool:
    try:
        answer = ask("Write these changes? [y/N] ")
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


def setup(
    args: argparse.Namespace,
    env: SetupEnv | None = None,
    ask: Callable[[str], str] = input,
    interactive: bool | None = None,
) -> int:
    env = env or SetupEnv.current()
    options = SetupOptions(
        workspace=args.workspace,
        scope=args.scope,
        path=args.path.expanduser().absolute() if args.path else None,
        acp=args.acp,
        mcp=args.mcp,
    )
    plan = plan_client(args.client, env, options, server_command())
    for note in plan.notes:
        print(note)
    if args.print:
        for target in plan.targets:
            print(f"\n# {target.what}: {target.path}")
            print(snippet(target), end="")
        return 0
    changes = plan_changes(plan.targets)  # refuses (AgenticError) before anything is written
    pending = [c for c in changes if c.changed]
    for change in changes:
        if not change.changed:
            print(f"already configured: {change.target.path}")
    if not pending:
        return 0
    for change in pending:
        print(change.diff(), end="")
    if args.dry_run:
        print("dry run: nothing written")
        return 0
    if not args.yes:
        if interactive is None:
            interactive = sys.stdin.isatty()
        if not interactive:
            print("not a terminal: pass --yes to write these changes (nothing written)")
            return 1
        if not _confirm(ask):
            print("nothing written")
            return 1
    for change in pending:
        backup = write_change(change)
        saved = f" (backup: {backup})" if backup else " (new file)"
        print(f"wrote {change.target.path}{saved}")
    return 0
