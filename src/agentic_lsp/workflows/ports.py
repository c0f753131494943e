"""What the workflow service needs of its workspace, handed over by the Engine (which stands
above the service: the service never receives or imports it).

The index is opened on demand (``open_index`` blocks: call it in a worker thread), so a run
started before the editor's index finished opening waits for the store, not for the sync.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agentic_lsp.changes.change_service import ChangeService
from agentic_lsp.config import Settings
from agentic_lsp.index.retrieval.search import Searcher
from agentic_lsp.navigation import Navigation
from agentic_lsp.navigation.precise import PreciseNavigation


@dataclass(frozen=True)
class IndexPorts:
    """Search and navigation over the open index (``navigation.readable`` reads files)."""

    searcher: Searcher
    navigation: Navigation
    precise: PreciseNavigation | None = None  # the engine's language-server-first view


@dataclass(frozen=True)
class RunPorts:
    root: Path
    settings: Settings
    cache_dir: Path  # the workspace's cache folder (test sandboxes live under it)
    changes: ChangeService
    open_index: Callable[[], IndexPorts]
