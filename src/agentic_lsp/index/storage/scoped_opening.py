"""Where a workspace's index store lives, and opening it: one store, or one per scope.

Without ``index.scopes`` the store is ``<workspace cache>/store``, as it always was. With
scopes, each scope has its own store at ``<workspace cache>/scopes/<slug>-<hash>/store`` (the
hash of the normalised scope keeps two scopes with the same slug apart), so the scope is part
of the cache key: adding a scope builds only its store, removing one leaves its folder on disk
(re-adding it reuses the store), and the other scopes are never touched. The sub-stores are
opened with :func:`~agentic_lsp.index.storage.opening.open_store` (each recovers on its own)
and combined by :class:`~agentic_lsp.index.storage.scoped.ScopedStore`.

On a Qdrant server a scope's store is a tenant of its own: the tenant is named from the
scope's folder path, as a workspace's is from its cache folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from pathlib import Path
from typing import TYPE_CHECKING

from agentic_lsp.index.storage.opening import open_store, server_options
from agentic_lsp.index.storage.scoped import ScopedStore
from agentic_lsp.index.storage.vector_store import OpenedStore

if TYPE_CHECKING:
    from agentic_lsp.config import IndexSettings

SCOPES_DIR = "scopes"  # under the workspace cache folder: the scopes' stores and their state


def scope_store_dir(cache_dir: Path, scope: str) -> Path:
    """The store folder of one scope: readable slug plus a short hash of the scope."""
    digest = hashlib.blake2b(scope.encode(), digest_size=5).hexdigest()
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", scope).strip("-.")[:48] or "scope"
    return cache_dir / SCOPES_DIR / f"{slug}-{digest}" / "store"


def store_dirs(index: IndexSettings, cache_dir: Path) -> dict[str, Path]:
    """Store folder by scope; without scopes the one store, under the key ``""``."""
    if not index.scopes:
        return {"": cache_dir / "store"}
    return {scope: scope_store_dir(cache_dir, scope) for scope in index.scopes}


def open_workspace_store(
    index: IndexSettings, cache_dir: Path, *, dim: int, model_id: str
) -> OpenedStore:
    """The workspace's store (a :class:`ScopedStore` when ``index.scopes`` is set). A sub-store
    that had to be moved aside and started empty is named in the message and in
    ``recovered_from``; one that cannot be opened closes the others and raises."""
    dirs = store_dirs(index, cache_dir)
    options = server_options(index)
    if not index.scopes:
        return open_store(index.store, path=dirs[""], dim=dim, model_id=model_id, **options)
    opened: dict[str, OpenedStore] = {}
    try:
        for scope, path in dirs.items():
            opened[scope] = open_store(
                index.store, path=path, dim=dim, model_id=model_id, **options
            )
    except BaseException:
        for each in opened.values():
            with contextlib.suppress(Exception):
                each.store.close()
        raise
    recovered = [(scope, o) for scope, o in opened.items() if o.recovered_from is not None]
    store = ScopedStore({scope: o.store for scope, o in opened.items()})
    if recovered:
        message = "; ".join(f"scope {scope}: {o.message}" for scope, o in recovered)
        return OpenedStore(store, recovered[0][1].recovered_from, message)
    return OpenedStore(store, None, f"opened the index of scopes {', '.join(opened)}")
