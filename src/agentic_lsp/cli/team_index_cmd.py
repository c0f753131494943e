"""``agentic-lsp index --export FILE`` / ``--import FILE``: the team index on the command line
(:mod:`agentic_lsp.index.team_index`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from agentic_lsp import __version__

if TYPE_CHECKING:
    from agentic_lsp.engine import Engine


def import_team_index(engine: Engine, path: Path, console: Console) -> None:
    """Before the engine opens: the artefact's vectors into the workspace's embedding cache,
    and its index into a workspace that has none."""
    done = engine.team_index.import_file(path)
    commit = done.commit[:12] if done.commit else "no commit recorded"
    _say(
        console,
        f"team index {path} ({commit}): {done.added} vectors added, {done.kept} already here"
        + (f", {done.invalid} invalid rows refused" if done.invalid else ""),
    )
    if done.store is not None:
        _say(
            console,
            f"the commit's index: {done.store.files} files ({done.store.bytes / 1e6:.1f} MB); "
            "this sync only reads files that match it",
        )
    elif done.store_left_out:
        _say(console, f"the commit's index was not imported: {done.store_left_out}")


def export_team_index(engine: Engine, path: Path, console: Console) -> None:
    """After a sync with every vector: the committed files' vectors written to ``path``, and
    the index itself when it is the commit's."""
    done = engine.team_index.export_file(path, __version__)
    commit = done.commit[:12] if done.commit else "not a git repository: every indexed file"
    _say(
        console,
        f"team index written to {done.path}: {done.vectors} vectors of {done.files} files "
        f"({commit}, {done.model_id})",
    )
    if done.left_out:
        shown = ", ".join(done.left_out[:5]) + (" …" if len(done.left_out) > 5 else "")
        _say(
            console,
            f"left out {len(done.left_out)} path(s) that differ from the commit "
            f"(uncommitted or untracked): {shown}",
        )
    if done.store is not None:
        size, stored = done.store.bytes / 1e6, done.store.stored / 1e6
        _say(
            console,
            f"with the commit's index: {done.store.files} files "
            f"({size:.1f} MB, {stored:.1f} MB compressed)",
        )
    elif done.store_left_out:
        _say(console, f"vectors only, the index itself left out: {done.store_left_out}")
    if done.missing:
        _say(console, f"note: {done.missing} indexed texts had no vector yet")


def _say(console: Console, text: str) -> None:
    console.print(text, markup=False, soft_wrap=True)
