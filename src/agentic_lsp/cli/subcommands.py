"""CLI command bodies (kept apart from argument parsing so ``--help`` stays fast)."""

from __future__ import annotations

import argparse
import json
import logging
from dataclasses import asdict
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeRemainingColumn
from rich.table import Table

from agentic_lsp.config import LoadedSettings, load_settings
from agentic_lsp.errors import AgenticError, WorkspaceError
from agentic_lsp.index.progress import IndexProgress, IndexSummary
from agentic_lsp.logs import configure_logging

log = logging.getLogger(__name__)
err = Console(stderr=True)
out = Console(highlight=False, soft_wrap=True, markup=False)


def _workspace(path: Path) -> Path:
    root = path.expanduser().resolve()
    if not root.is_dir():
        raise WorkspaceError(f"workspace {root} is not a directory", "pass an existing folder")
    return root


def _project(path: Path, command: str) -> Path:
    """:func:`_workspace`, refusing the disk's root and the home folder as the MCP launch does
    (its rule, :func:`agentic_lsp.mcp.launch.check_workspace`): indexing them crawls the disk."""
    from agentic_lsp.mcp.launch import check_workspace

    root = _workspace(path)
    try:
        check_workspace(root)
    except AgenticError as exc:
        hint = f"pass the project folder: agentic-lsp {command} /path/to/project"
        raise WorkspaceError(exc.message, hint) from None
    return root


def _settings(root: Path, args: argparse.Namespace) -> LoadedSettings:
    loaded = load_settings(root)
    if args.log_level is None and loaded.source_of("log_level") != "default":
        configure_logging(loaded.settings.log_level, args.log_file)
    for warning in loaded.warnings:
        log.warning("%s", warning)
    return loaded


class _ProgressBar:
    """Renders IndexProgress on stderr (stdout stays clean for --json)."""

    def __init__(self, enabled: bool) -> None:
        self._bar = Progress(
            TextColumn("{task.description:<8}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total}"),
            TextColumn("{task.fields[rate]:>8.1f}/s"),
            TimeRemainingColumn(),
            console=err,
            disable=not enabled,
            transient=True,
        )
        self._tasks: dict[str, TaskID] = {}

    def __enter__(self) -> _ProgressBar:
        self._bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.__exit__(None, None, None)

    def __call__(self, p: IndexProgress) -> None:
        task = self._tasks.get(p.phase)
        if task is None:
            task = self._tasks[p.phase] = self._bar.add_task(p.phase, total=p.total, rate=0.0)
        self._bar.update(task, completed=p.done, total=p.total, rate=p.rate)


_TIME_ROWS = {
    "open": "time: open (index state)",
    "total": "time: sync",
    "embed_rest": "time: remaining vectors",
    "close": "time: close (save state)",
    "command": "time: whole command",
}


def _summary_table(root: Path, summary: IndexSummary) -> Table:
    table = Table(title=f"index of {root}", show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    rows = [
        ("files indexed", summary.files),
        ("symbols", summary.symbols),
        ("parsed now (changed)", summary.parsed),
        ("unchanged", summary.unchanged),
        ("re-read, content same", summary.rechecked),
        ("removed", summary.removed),
        ("vectors embedded", summary.embedded),
        ("vectors reused (cache)", summary.embed_reused),
        ("files waiting for vectors", summary.deferred),
        ("functions without vectors", summary.functions_pending),
        ("files with syntax errors", summary.parse_errors),
        ("secrets redacted", summary.redactions),
    ]
    for name, value in rows:
        table.add_row(name, str(value))
    for reason, count in sorted(summary.skipped.items()):
        table.add_row(f"skipped: {reason}", str(count))
    for phase, seconds in summary.timings.items():
        table.add_row(_TIME_ROWS.get(phase, f"time: {phase}"), f"{seconds:.2f}s")
    return table


def index(args: argparse.Namespace) -> int:
    """Sync the index and print what it did and where every second went: opening the state,
    the sync's phases, the remaining vectors (``--all-vectors``) and closing are all rows, and
    "whole command" is the wall time of all of them. Without ``--all-vectors`` nothing runs
    after the sync: the test/doc lanes' and the functions' vectors are counted as waiting (a
    server embeds them in the background)."""
    import time

    from agentic_lsp.engine import Engine

    started = time.perf_counter()
    root = _project(args.path, "index")
    export, import_ = getattr(args, "export", None), getattr(args, "import_", None)
    if args.no_embed and (export or import_):
        raise AgenticError("--no-embed leaves no vectors to export or import", "drop --no-embed")
    engine = Engine(root, _settings(root, args))
    if import_ is not None:
        from agentic_lsp.cli.team_index_cmd import import_team_index

        import_team_index(engine, import_, err)
    engine.open()
    opened = time.perf_counter() - started
    embed = not args.no_embed
    try:
        with _ProgressBar(enabled=err.is_terminal and not args.json) as bar:
            summary = engine.sync_blocking(bar, embed=embed, background=False)
            if import_ is not None and not summary.cancelled:
                engine.team_index.reconciled()  # an imported index now describes these files
            if embed and (args.all_vectors or export) and not summary.cancelled:
                engine.embed_remaining(summary, bar)
        summary.deferred, summary.functions_pending = engine.vectors_pending()
        if export is not None and not summary.cancelled:
            from agentic_lsp.cli.team_index_cmd import export_team_index

            export_team_index(engine, export, err)
    finally:
        closing = time.perf_counter()
        engine.close_blocking()
    summary.timings["open"] = opened
    summary.timings["close"] = time.perf_counter() - closing
    summary.timings["command"] = time.perf_counter() - started
    if summary.deferred or summary.functions_pending:
        summary.notes.append(
            f"{summary.deferred} files and {summary.functions_pending} functions wait for "
            "vectors: a running server embeds them in the background; "
            "`agentic-lsp index --all-vectors` embeds them now"
        )
    if args.json:
        print(json.dumps(asdict(summary), indent=2))
    else:
        out.print(_summary_table(root, summary))
        for note in summary.notes:
            err.print(f"note: {note}", markup=False)
        if summary.cancelled:
            out.print("indexing was cancelled; run the command again to finish")
    return 0 if not summary.cancelled else 1


def _unavailable(what: str) -> int:
    raise AgenticError(
        f"{what} is not available in this version of agentic-lsp",
        "use `agentic-lsp index` and `agentic-lsp search` meanwhile",
    )


def tcp_address(text: str, allow_non_loopback: bool) -> tuple[str, int]:
    """``--tcp``'s ``[HOST:]PORT``: 127.0.0.1 unless a host is given; a host other machines can
    reach needs ``allow_non_loopback`` (and gets a warning on stderr): the LSP port has no
    authentication, anyone who reaches it can read and edit the workspace."""
    from agentic_lsp.mcp.security import is_loopback

    host, _, port = text.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or int(port) > 65535:
        raise AgenticError(f"--tcp {text!r} is not [HOST:]PORT", "e.g. --tcp 2087")
    if not is_loopback(host):
        if not allow_non_loopback:
            raise AgenticError(
                f"refusing to serve LSP on {host}: only loopback addresses are allowed by default",
                "use --tcp PORT (127.0.0.1), or pass --allow-non-loopback if other machines must "
                "reach it (the LSP port has no authentication)",
            )
        err.print(
            f"warning: serving LSP on {host}:{port}, reachable from other machines without "
            "authentication: anyone who connects can read and edit this workspace",
            markup=False,
        )
    return host, int(port)


def serve(args: argparse.Namespace) -> int:
    """The LSP server over stdio (or ``--tcp HOST:PORT``). Ends the process when the client
    says exit (or closes the stream): waiting for worker threads could hang on a blocked read."""
    import os
    import sys

    from agentic_lsp.heap import enable_freezing
    from agentic_lsp.lsp.server import create_server
    from agentic_lsp.mcp.host import McpHost
    from agentic_lsp.mcp.owner_client import OwnerTools

    allow = getattr(args, "allow_non_loopback", False)
    address = tcp_address(args.tcp, allow) if args.tcp else None  # refused before starting
    root = args.workspace.expanduser().resolve() if args.workspace else None
    folder = root if root is not None and root.is_dir() else None
    enable_freezing()  # a long-running server: see agentic_lsp.heap
    host = McpHost(args.mcp_http)
    host.preload()
    server = create_server(folder, host, OwnerTools())  # a folder another process owns: bridged
    status = server.run_tcp(*address) if address is not None else server.run_stdio()
    logging.shutdown()
    sys.stderr.flush()
    os._exit(status)


def mcp_stdio(args: argparse.Namespace) -> int:
    """``agentic-lsp mcp``: stdio (bridging to a running owner), or ``--http PORT`` only."""
    from agentic_lsp.heap import enable_freezing
    from agentic_lsp.mcp.launch import LaunchOptions, run_mcp

    enable_freezing()  # a long-running server: see agentic_lsp.heap

    root = _workspace(args.workspace)
    options = LaunchOptions(
        root=root,
        loaded=_settings(root, args),
        http_port=getattr(args, "http", None),
        host=getattr(args, "host", None),
        allow_non_loopback=getattr(args, "allow_non_loopback", False),
        tools=getattr(args, "tools", None),
    )
    return run_mcp(options)


def acp_stdio(args: argparse.Namespace) -> int:
    """``agentic-lsp acp``: an ACP agent over stdio; each session's workspace (its ``cwd``) is
    also served over MCP on localhost unless ``--no-mcp-endpoint``, so ``agentic-lsp mcp``
    launches bridge to this process."""
    from agentic_lsp.acp.launch import AcpOptions, run_acp
    from agentic_lsp.heap import enable_freezing
    from agentic_lsp.mcp.host import McpHost
    from agentic_lsp.mcp.owner_client import OwnerTools

    enable_freezing()  # a long-running server: see agentic_lsp.heap

    publisher = None if args.no_mcp_endpoint else McpHost()
    return run_acp(AcpOptions(publisher=publisher, owners=OwnerTools()))


def run(args: argparse.Namespace) -> int:
    """``agentic-lsp run``: a workflow on a task, live progress on stderr, the diff on stdout."""
    from agentic_lsp.cli.run import run_command

    root = _project(args.workspace, "run TASK -w")
    return run_command(args, root, _settings(root, args), _ProgressBar, err)
