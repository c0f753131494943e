"""Which unsaved buffer text each path's stored symbols were built from.

The engine records an editor buffer before the indexer stores its symbols (the update waits
for the index writer, e.g. behind a cold index), so a reader holding the buffer must not take
the stored symbols for it until the update is stored: the LSP server once answered a growing
file's outline with the symbols of the file on disk, and kept that answer for the version.
"""

from __future__ import annotations


class OverlayBuilds:
    """``path`` → the buffer text its stored symbols describe (absent: the file on disk, or
    not known — a cold index parses a buffer without saying which text it read)."""

    def __init__(self) -> None:
        self._built: dict[str, str] = {}

    def stored(self, path: str, overlay: str | None) -> None:
        """The symbols of ``overlay`` (``None``: of the file on disk) are stored for ``path``."""
        if overlay is None:
            self._built.pop(path, None)
        else:
            self._built[path] = overlay

    def unknown(self, path: str) -> None:
        self._built.pop(path, None)

    def describe(self, path: str, buffer: str | None) -> bool:
        """Whether the stored symbols of ``path`` describe ``buffer`` (``None``: the disk)."""
        built = self._built.get(path)
        if buffer is None:
            return built is None
        return built is buffer or built == buffer
