"""References over an index read only the files whose indexed text may hold the name (one
query of the files collection's sparse index), plus files too long for that text to cover,
and find exactly what reading every file finds."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agentic_lsp.config import load_settings
from agentic_lsp.engine import Engine
from agentic_lsp.index.build import FILE_LEXICAL_CHARS
from agentic_lsp.index.retrieval import references

USERS = {
    "pkg/defines.py": "def needle_name(x):\n    return x\n",
    "pkg/uses.py": "from pkg.defines import needle_name\n\nvalue = needle_name(3)\n",
    "pkg/dotted.py": "import pkg.defines\n\nv = pkg.defines.needle_name(1)\n",
}
OTHER_CASE = {"pkg/shout.py": "NEEDLE_NAME = 1  # the same term case-folded, not the name\n"}
LONG = "pkg/long.py"  # the name only past what the file's lexical vector covers


def _write(root: Path) -> None:
    for i in range(40):
        (root / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n")
    (root / "pkg").mkdir()
    for rel, text in {**USERS, **OTHER_CASE}.items():
        (root / rel).write_text(text)
    filler = "".join(f"# filler line {i:07d}\n" for i in range(FILE_LEXICAL_CHARS // 20 + 10))
    (root / LONG).write_text(filler + "late = needle_name\n")


async def test_references_read_only_the_files_the_index_says_may_name_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(tmp_path)
    engine = Engine(tmp_path, load_settings(tmp_path))
    await engine.start(index=False, watch=False)
    try:
        await asyncio.to_thread(engine.sync_blocking, None, False)
        read: list[str] = []
        real_read = references._read_file

        def spy(root: Path, path: str, *args: object) -> str | None:
            read.append(path)
            return real_read(root, path, *args)  # type: ignore[arg-type]

        monkeypatch.setattr(references, "_read_file", spy)
        found = engine.navigation.references("needle_name", "m0.py")
        assert {o.path for o in found.occurrences} == {*USERS, LONG}
        assert sorted(read) == sorted({*USERS, *OTHER_CASE, LONG})  # never m0..m39
        assert found.files_scanned == len(engine.indexer.records)

        read.clear()
        everything = references.find_references(
            tmp_path, "needle_name", list(engine.indexer.records), from_path="m0.py"
        )
        assert len(read) == len(engine.indexer.records)
        assert [(o.path, o.line, o.col) for o in everything.occurrences] == [
            (o.path, o.line, o.col) for o in found.occurrences
        ]

        read.clear()
        one_letter = engine.navigation.references("x", "m0.py")  # not a lexical term
        assert {f"m{i}.py" for i in range(40)} <= set(read)  # nothing ruled out by the index
        assert {o.path for o in one_letter.occurrences} == {"pkg/defines.py"}
    finally:
        await engine.close()


async def test_previews_are_redacted_unless_the_caller_shows_none(tmp_path: Path) -> None:
    secret = "pa55-w0rd-9f3Kq7Zx1Lm8"
    (tmp_path / "conf.py").write_text(f'password = "{secret}"; marker = needle_name\n')
    engine = Engine(tmp_path, load_settings(tmp_path))
    await engine.start(index=False, watch=False)
    try:
        await asyncio.to_thread(engine.sync_blocking, None, False)
        shown = engine.navigation.references("needle_name", "conf.py")
        assert [o.path for o in shown.occurrences] == ["conf.py"]
        assert secret not in shown.occurrences[0].preview  # what MCP and agents get
        located = engine.navigation.references("needle_name", "conf.py", previews=False)
        assert [(o.line, o.col) for o in located.occurrences] == [
            (o.line, o.col) for o in shown.occurrences
        ]
        assert secret in located.occurrences[0].preview  # LSP: locations, never shown
    finally:
        await engine.close()
