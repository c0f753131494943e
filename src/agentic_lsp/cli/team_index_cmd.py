"""``agentic-lsp index --export FILE`` / ``--import FILE``: the team index on the command line
(:mod:`agentic_lsp.index.team_index`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from agentic_lsp import __version__
from agentic_lsp.index.embedding.cache import CACHE_FILE
from agentic_lsp.index.embedding.model import embedding_model_id
from agentic_lsp.index.team_index import export_vectors, import_vectors

if TYPE_CHECKING:
    from agentic_lsp.engine import Engine


def import_team_index(engine: Engine, path: Path, console: Console) -> None:
    """Before the engine opens: the artefact's vectors into the workspace's embedding cache."""
    model_id = embedding_model_id(engine.settings.index.embedding_model)
    engine.cache_dir.mkdir(parents=True, exist_ok=True)
    done = import_vectors(path.expanduser(), engine.cache_dir / CACHE_FILE, model_id)
    commit = done.commit[:12] if done.commit else "no commit recorded"
    console.print(
        f"team index {path} ({commit}): {done.added} vectors added, {done.kept} already here"
        + (f", {done.invalid} invalid rows refused" if done.invalid else ""),
        markup=False,
        soft_wrap=True,
    )


def export_team_index(engine: Engine, path: Path, console: Console) -> None:
    """After a sync with every vector: the committed files' vectors written to ``path``."""
    indexer = engine.indexer
    dim = indexer.embedder().dim
    model_id = embedding_model_id(engine.settings.index.embedding_model)
    done = export_vectors(
        engine.root,
        indexer.store,
        engine.cache_dir / CACHE_FILE,
        model_id,
        dim,
        path.expanduser().absolute(),
        __version__,
    )
    commit = done.commit[:12] if done.commit else "not a git repository: every indexed file"
    console.print(
        f"team index written to {done.path}: {done.vectors} vectors of {done.files} files "
        f"({commit}, {model_id})",
        markup=False,
        soft_wrap=True,
    )
    if done.left_out:
        shown = ", ".join(done.left_out[:5]) + (" …" if len(done.left_out) > 5 else "")
        console.print(
            f"left out {len(done.left_out)} path(s) that differ from the commit "
            f"(uncommitted or untracked): {shown}",
            markup=False,
            soft_wrap=True,
        )
    if done.missing:
        console.print(
            f"note: {done.missing} indexed texts had no vector yet", markup=False, soft_wrap=True
        )
