"""``agentic-lsp search``: ask the process that owns the workspace, or answer here at once.

1. **An owner answers.** When an editor's server (``agentic-lsp serve``) or an MCP host already
   owns the workspace, it has published an MCP endpoint on localhost (the runtime file
   :func:`agentic_lsp.mcp.launch.find_owner` reads and checks, as ``agentic-lsp mcp`` does).
   The command asks its ``search_files`` / ``search_code`` tool
   (:mod:`agentic_lsp.mcp.owner_search`): one index, a model already loaded, and nothing heavy
   imported here (no torch, no store). A stale, untrusted or silent
   runtime file falls back to step 2 with a note; the connect timeout is short.
2. **No owner.** The index is opened here and synced without computing embeddings, and the
   answer comes from the lexical, symbol and mention signals right away: loading the embedding
   model costs seconds, more than the whole lexical answer. ``--wait-dense`` loads it, embeds
   what the index lacks and answers with the full fusion (the command's behaviour before the
   bridge existed).

Both paths print the same ``path:line:text`` lines and the same JSON
(:mod:`agentic_lsp.cli.search_output`; the lines are read here either way); stderr says which
path answered and carries the notes. Exit status 1 when nothing was found, as ripgrep's.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from agentic_lsp.cli.subcommands import _ProgressBar, _project, _settings, err
from agentic_lsp.index.results import SearchResponse

if TYPE_CHECKING:
    from agentic_lsp.config import LoadedSettings

log = logging.getLogger(__name__)

LEXICAL_NOTE = (
    "lexical, symbol and mention signals only: dense (embedding) results need the model, "
    "which takes seconds to load; --wait-dense loads it and uses every signal"
)


def search(args: argparse.Namespace) -> int:
    root = _project(args.workspace, "search QUERY -w")
    loaded = _settings(root, args)
    response = None
    if not args.no_bridge:
        response = _from_owner(root, loaded, args)
    if response is None:
        response = _here(root, loaded, args)
    from agentic_lsp.cli.search_output import print_response

    before = args.context if args.before is None else args.before
    after = args.context if args.after is None else args.after
    print_response(response, root, loaded.settings, before=before, after=after, as_json=args.json)
    if not response.results:
        err.print(f"no results for {args.query!r}", markup=False)
    for note in response.notes:
        err.print(f"note: {note}", markup=False)
    return 0 if response.results else 1


# -- 1: the owner ---------------------------------------------------------------------------


def _from_owner(
    root: Path, loaded: LoadedSettings, args: argparse.Namespace
) -> SearchResponse | None:
    """The owner's answer, or ``None`` (and a note on stderr when one was expected)."""
    from agentic_lsp.mcp.launch import find_owner
    from agentic_lsp.mcp.owner_search import CONNECT_TIMEOUT_S, OwnerUnavailable, ask_owner
    from agentic_lsp.mcp.runtime import runtime_path
    from agentic_lsp.workspace import workspace_cache_dir

    cache_dir = workspace_cache_dir(root, loaded.settings)
    published = runtime_path(cache_dir).exists()
    owner = find_owner(cache_dir, CONNECT_TIMEOUT_S)
    if owner is None:
        if published:
            err.print(
                "note: the runtime file names no live, trusted agentic-lsp server "
                "(stale, untrusted, not listening, or it failed the owner check): answering here",
                markup=False,
            )
        return None
    from agentic_lsp.mcp.security import is_loopback  # imports the MCP SDK: only when needed

    if not is_loopback(owner.host):
        err.print(f"note: the owner (pid {owner.pid}) listens on {owner.host}, not on this "
                  "machine's loopback: not asking it; answering here", markup=False)  # fmt: skip
        return None
    try:
        response = asyncio.run(ask_owner(owner, args.query, args.limit, args.functions))
    except OwnerUnavailable as exc:
        err.print(f"note: the server that owns this workspace (pid {owner.pid}) did not answer "
                  f"({exc}); answering here", markup=False)  # fmt: skip
        return None
    err.print(f"answered by the agentic-lsp server that owns this workspace (pid {owner.pid})",
              markup=False)  # fmt: skip
    return response


# -- 2: here --------------------------------------------------------------------------------


def _here(root: Path, loaded: LoadedSettings, args: argparse.Namespace) -> SearchResponse:
    """Open the index here; lexical unless ``--wait-dense`` (then the model is loaded)."""
    from agentic_lsp.engine import Engine

    engine = Engine(root, loaded)
    engine.open()
    try:
        if not engine.indexed_files():
            err.print(f"no index for {root} yet: indexing it first")
        with _ProgressBar(enabled=err.is_terminal and not args.json) as bar:
            engine.sync_blocking(bar, embed=args.wait_dense, background=False)
        response = asyncio.run(
            engine.search(args.query, args.limit, functions=args.functions, dense=args.wait_dense)
        )
    finally:
        engine.close_blocking()
    if args.wait_dense:
        err.print("answered here (every signal, the embedding model loaded)", markup=False)
    else:
        response.notes.append(LEXICAL_NOTE)
        err.print("answered here, lexically (no agentic-lsp server owns this workspace)",
                  markup=False)  # fmt: skip
    return response
