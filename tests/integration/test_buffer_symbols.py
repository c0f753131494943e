"""An editor buffer's symbols while its index update is still on its way.

The engine records a buffer's text before the indexer stores its symbols (the update waits for
the index writer, e.g. behind a cold index). A symbol request in that window once got the
symbols the index held for the *previous* text, and the LSP server kept that outline for the
document's version: typing a growing file ended with an outline of the file on disk."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agentic_lsp.config import load_settings
from agentic_lsp.engine import Engine

ORIGINAL = "def on_disk(value):\n    return value\n"
TYPED = ORIGINAL + "\n\ndef typed_later(value):\n    return value + 1\n"


def _names(found) -> set[str]:  # type: ignore[no-untyped-def]
    return {s.name for s in found.symbols}


async def test_a_buffer_waiting_for_its_index_update_is_parsed_not_read_from_the_index(
    tmp_path: Path,
) -> None:
    (tmp_path / "m.py").write_text(ORIGINAL)
    engine = Engine(tmp_path, load_settings(tmp_path))
    await engine.start(index=False, watch=False)
    try:
        await asyncio.to_thread(engine.sync_blocking, None, False)
        navigation = engine.navigation
        assert _names(navigation.symbols_of("m.py")) == {"on_disk"}
        writer = engine.indexer._write_lock  # held as a cold index holds it
        writer.acquire()
        try:
            update = asyncio.ensure_future(engine.update_buffer("m.py", TYPED))
            for _ in range(200):  # until the engine holds the buffer (the update then waits)
                if engine.buffer_snapshot().get("m.py") == TYPED:
                    break
                await asyncio.sleep(0.01)
            assert engine.buffer_snapshot().get("m.py") == TYPED and not update.done()
            for text in (TYPED, None):  # the editor's text given, or the engine's buffer
                found = navigation.symbols_of("m.py", text)
                assert _names(found) == {"on_disk", "typed_later"}, (text, found.source)
                assert found.source == "parsed"
        finally:
            writer.release()
        await update
        found = navigation.symbols_of("m.py", TYPED)
        assert _names(found) == {"on_disk", "typed_later"} and found.source == "index"
        await engine.update_buffer("m.py", None)  # closed: the file on disk again
        found = navigation.symbols_of("m.py")
        assert _names(found) == {"on_disk"} and found.source == "index"
    finally:
        await engine.close()
