"""``agentic-lsp changesets``: review the changesets workflow runs proposed, from a terminal.

``list`` (newest first), ``show ID`` (the files, hunks and staleness on stderr, the unified diff
on stdout, so ``show ID > fix.patch`` keeps a patch), ``accept ID`` and ``reject ID`` (whole, some
files with ``--path``, or some hunks of one file with ``--path P --hunk N``), ``refresh ID``
(rebase files changed since the proposal), ``rollback [ID]`` (undo the newest accept). Each
works on the change service the MCP tools and the editor's commands use; nothing touches a file
except ``accept`` and ``rollback``, and no model or index is loaded. ``--json``: the same as data.

Without an editor in the loop the files are written on disk (compare-and-swap, refused when a
file changed since the proposal) and ``changes.commit_on_accept`` commits exactly them; with the
file open and unsaved in an editor, accept from the editor instead.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from agentic_lsp.config import LoadedSettings
from agentic_lsp.errors import ChangesetError, StaleChangeset

if TYPE_CHECKING:
    from agentic_lsp.changes.change_service import ChangeService
    from agentic_lsp.changes.changeset import Changeset

ACTIONS = ("list", "show", "accept", "reject", "refresh", "rollback")


def list_hint(root: Path) -> str:
    """The command that lists valid changeset ids (named by every hint that needs one)."""
    return f"list them: agentic-lsp changesets list -w {root}"


def add_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    handler: Callable[[argparse.Namespace], int],
) -> None:
    """The ``changesets`` subcommand and its actions; ``handler`` runs them."""
    parser = sub.add_parser("changesets", help="list, show, accept, reject or roll back changes")
    parser.set_defaults(handler=handler)
    actions = parser.add_subparsers(dest="changesets_command", metavar="ACTION", required=True)

    def action(name: str, help_text: str) -> argparse.ArgumentParser:
        p = actions.add_parser(name, help=help_text)
        p.add_argument("-w", "--workspace", type=Path, default=Path.cwd(), help="workspace root")
        p.add_argument("--json", action="store_true", help="print the result as JSON")
        return p

    listing = action("list", "the workspace's changesets, newest first")
    listing.add_argument("--status", help="only these: pending, partially_accepted, accepted, …")
    show = action("show", "a changeset's files and hunks (stderr) and its diff (stdout)")
    show.add_argument("id", help="changeset id (see `agentic-lsp changesets list`)")
    show.add_argument("--path", help="only this file's diff")
    show.add_argument("--include-rejected", action="store_true", help="rejected hunks too")
    for name, help_text in (
        ("accept", "write a changeset (or files, or hunks of one file) to the workspace"),
        ("reject", "reject a changeset (or files, or hunks of one file); writes nothing"),
    ):
        p = action(name, help_text)
        p.add_argument("id", help="changeset id (see `agentic-lsp changesets list`)")
        p.add_argument("--path", action="append", help="only this file (repeatable)")
        p.add_argument("--hunk", type=int, action="append", help="only this hunk of --path")
    refresh = action("refresh", "rebase files changed since the proposal where the hunks fit")
    refresh.add_argument("id", help="changeset id (see `agentic-lsp changesets list`)")
    rollback = action("rollback", "undo the newest accept (of ID, or of any changeset)")
    rollback.add_argument("id", nargs="?", help="changeset id (default: the newest accept)")


@contextmanager
def _cli_hints(root: Path, changeset_id: str | None) -> Iterator[None]:
    """The change service's hints name this command line's commands: an unknown id the list
    command, a stale file the refresh command (its own hint names the editor's)."""
    try:
        yield
    except StaleChangeset as exc:
        refresh = f"agentic-lsp changesets refresh {changeset_id} -w {root}"
        hint = f"rebase it on the current content: {refresh}, review it again (show), then accept"
        raise StaleChangeset(exc.message, hint) from None
    except ChangesetError as exc:
        if exc.message.startswith("no changeset"):
            raise ChangesetError(exc.message, list_hint(root)) from None
        raise


def changesets(args: argparse.Namespace, root: Path, loaded: LoadedSettings, err: Console) -> int:
    from agentic_lsp.engine import Engine

    service = Engine(root, loaded).changes
    handlers: dict[str, Callable[..., int]] = {
        "list": _list,
        "show": _show,
        "accept": _accept,
        "reject": _reject,
        "refresh": _refresh,
        "rollback": _rollback,
    }
    with _cli_hints(root, getattr(args, "id", None)):
        return handlers[args.changesets_command](args, root, loaded, service, err)


def _say(err: Console, text: str) -> None:
    err.print(text, markup=False, highlight=False, soft_wrap=True)


def _list(
    args: argparse.Namespace, root: Path, _: LoadedSettings, service: ChangeService, err: Console
) -> int:
    found = list(reversed(service.list(args.status)))
    if args.json:
        print(json.dumps([_brief(cs) for cs in found], indent=2))
        return 0
    if not found:
        which = f" with status {args.status}" if args.status else ""
        _say(err, f"no changesets{which} in {root}")
    for cs in found:
        when = cs.created.strftime("%Y-%m-%d %H:%M")
        print(f"{cs.id}  {cs.status:<18} {len(cs.files):>2} files  {when}  {cs.title}")
    return 0


def _show(
    args: argparse.Namespace, root: Path, _: LoadedSettings, service: ChangeService, err: Console
) -> int:
    from agentic_lsp.changes.patch import changeset_diff, file_diff

    changeset = service.get(args.id)
    stale = service.stale_files(changeset)
    if args.path:
        diff = file_diff(changeset.file(args.path), include_rejected=args.include_rejected)
    else:
        diff = changeset_diff(changeset, include_rejected=args.include_rejected)
    if args.json:
        print(json.dumps({**_details(changeset, stale), "diff": diff}, indent=2))
        return 0
    _say(err, f"changeset {changeset.id}  {changeset.status}  run {changeset.run_id}")
    _say(err, f"  {changeset.title}")
    for change in changeset.files:
        target = f" -> {change.new_path}" if change.new_path else ""
        flags = f"  review carefully: {', '.join(change.flags)}" if change.flags else ""
        note = "  STALE: changed since the proposal" if change.path in stale else ""
        _say(err, f"  {change.op} {change.path}{target}  {change.status}{flags}{note}")
        for hunk in change.hunks:
            _say(err, f"    hunk {hunk.index} {hunk.status:<9} {hunk.header}")
    print(diff, end="", flush=True)
    if changeset.status in ("pending", "partially_accepted"):
        _say(err, f"accept: agentic-lsp changesets accept {changeset.id} -w {root} "
                  "[--path P [--hunk N]]; reject: agentic-lsp changesets reject …")  # fmt: skip
    return 0


def _accept(
    args: argparse.Namespace,
    root: Path,
    loaded: LoadedSettings,
    service: ChangeService,
    err: Console,
) -> int:
    outcome = service.accept_on_disk(
        args.id, args.path, args.hunk, commit=loaded.settings.changes.commit_on_accept
    )
    status = outcome.changeset.status
    if args.json:
        data = {"changeset_id": args.id, "status": status, "written": outcome.written,
                "commit_id": outcome.commit_id, "notes": outcome.notes}  # fmt: skip
        print(json.dumps(data, indent=2))
        return 0
    written = ", ".join(outcome.written) or "nothing"
    commit = f"; committed {outcome.commit_id[:10]}" if outcome.commit_id else ""
    _say(err, f"accepted changeset {args.id}: wrote {written}{commit}; it is now {status}")
    for note in outcome.notes:
        _say(err, f"note: {note}")
    return 0


def _reject(
    args: argparse.Namespace, root: Path, _: LoadedSettings, service: ChangeService, err: Console
) -> int:
    changeset = service.reject(args.id, args.path, args.hunk)
    if args.json:
        print(json.dumps(_brief(changeset), indent=2))
        return 0
    _say(err, f"rejected; changeset {args.id} is now {changeset.status}; nothing was written")
    return 0


def _refresh(
    args: argparse.Namespace, root: Path, _: LoadedSettings, service: ChangeService, err: Console
) -> int:
    result = service.refresh(args.id)
    conflicts = [{"path": c.path, "reason": c.reason} for c in result.conflicts]
    if args.json:
        print(json.dumps({"changeset_id": args.id, "refreshed": result.refreshed,
                          "conflicts": conflicts}, indent=2))  # fmt: skip
        return 0 if result.ok else 1
    _say(err, f"refreshed {', '.join(result.refreshed) or 'nothing'} in changeset {args.id}")
    for conflict in conflicts:
        _say(err, f"conflict: {conflict['path']}: {conflict['reason']}")
    return 0 if result.ok else 1


def _rollback(
    args: argparse.Namespace, root: Path, _: LoadedSettings, service: ChangeService, err: Console
) -> int:
    plan = service.plan_rollback(args.id)
    record = service.finish_rollback(plan)
    files = [w.path for w in record.writes]
    if args.json:
        print(json.dumps({"changeset_id": record.changeset_id, "files": files,
                          "revert_commit_id": record.rollback_commit_id}, indent=2))  # fmt: skip
        return 0
    revert = (
        f"; reverted in commit {record.rollback_commit_id[:10]}"
        if record.rollback_commit_id
        else ""
    )
    _say(err, f"rolled back changeset {record.changeset_id}: {', '.join(files)}{revert}")
    return 0


def _brief(cs: Changeset) -> dict[str, Any]:
    return {
        "changeset_id": cs.id,
        "status": cs.status,
        "run_id": cs.run_id,
        "title": cs.title,
        "created": cs.created.isoformat(),
        "files": [c.path for c in cs.files],
    }


def _details(cs: Changeset, stale: list[str]) -> dict[str, Any]:
    files = [
        {
            "path": c.path,
            "op": c.op,
            "new_path": c.new_path,
            "status": c.status,
            "flags": c.flags,
            "stale": c.path in stale,
            "hunks": [{"index": h.index, "status": h.status, "header": h.header} for h in c.hunks],
        }
        for c in cs.files
    ]
    return {**_brief(cs), "summary": cs.summary, "files": files}
