"""Precise definitions and references from a real language server (jedi-language-server), and
the name-based fallback when the server is missing, crashes or gives up.

The fixture repository is one where the name-based answer is wrong: two classes each define
``save``; references of ``A.save`` must not include the callers of ``B.save``.
"""

from __future__ import annotations

import asyncio
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentic_lsp.config import load_settings
from agentic_lsp.engine import Engine
from agentic_lsp.navigation import Position
from agentic_lsp.navigation.positions import char_col, utf16_col
from agentic_lsp.navigation.server_pool import MAX_RESTARTS, resolve_command

JEDI = "language_server:jedi-language-server"
needs_jedi = pytest.mark.skipif(
    resolve_command(["jedi-language-server"]) is None,
    reason="jedi-language-server is not installed (pip install jedi-language-server)",
)

MODELS = """\
class A:
    def save(self):
        return "a"


class B:
    def save(self):
        return "b"
"""
USE = """\
from pkg.models import A, B


def keep():
    a = A()
    a.save()


def other():
    b = B()
    b.save()
    b.save()
"""
REEXPORT = "from pkg.models import A as Alias\n"
ALIAS_USE = "from pkg import Alias\n\n\ndef go():\n    return Alias().save()\n"
# A "language server" that answers initialize, then exits on its first real question.
CRASHER = textwrap.dedent(
    """\
    import json, sys
    def read():
        length = 0
        while True:
            line = sys.stdin.buffer.readline()
            if not line:
                sys.exit(0)
            if not line.strip():
                break
            if line.lower().startswith(b"content-length"):
                length = int(line.split(b":")[1])
        return json.loads(sys.stdin.buffer.read(length))
    while True:
        msg = read()
        if msg.get("method") == "initialize":
            body = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"capabilities": {}}})
            head = b"Content-Length: %d\\r\\n\\r\\n" % len(body)
            sys.stdout.buffer.write(head + body.encode())
            sys.stdout.buffer.flush()
        elif msg.get("method", "").startswith("textDocument/") and "id" in msg:
            if sys.argv[1:] != ["hang"]:
                sys.exit(3)  # else: never answers
    """
)


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "models.py").write_text(MODELS)
    (root / "pkg" / "use.py").write_text(USE)
    (root / "pkg" / "__init__.py").write_text(REEXPORT)
    (root / "main.py").write_text(ALIAS_USE)
    return root


async def open_engine(
    root: Path, user_config: Path, server: list[str] | None = None, timeout_s: float = 30
) -> Engine:
    lines = ["[navigation]", f"timeout_s = {timeout_s}"]
    if server is not None:
        lines.append(f"python_server = {server!r}".replace("'", '"'))
    user_config.write_text("\n".join(lines) + "\n")
    engine = Engine(root, load_settings(root))
    await engine.start(index=False, watch=False)
    await asyncio.to_thread(engine.sync_blocking, None, False)
    return engine


@pytest.fixture
async def engine(tmp_path: Path, user_config: Path) -> AsyncIterator[Engine]:
    eng = await open_engine(workspace(tmp_path), user_config)
    try:
        yield eng
    finally:
        await eng.close()


def test_columns_convert_between_characters_and_utf16_units() -> None:
    line = "x = '😀' + name"
    assert utf16_col(line, 10) == 11 and char_col(line, 11) == 10
    assert utf16_col("plain", 3) == 3 and char_col("plain", 3) == 3
    assert char_col("ab", 99) == 2


@needs_jedi
async def test_references_of_a_method_exclude_the_other_class_callers(engine: Engine) -> None:
    # `save` of class A, asked at its definition (pkg/models.py line 2, column 8)
    answer = await engine.precise.references(
        "save", "pkg/models.py", Position("pkg/models.py", 2, 8), 100
    )
    assert answer.source == JEDI and answer.note == ""
    found = {(o.path, o.line) for o in answer.result.occurrences}
    assert ("pkg/use.py", 6) in found and ("pkg/models.py", 2) in found
    assert not found & {("pkg/use.py", 11), ("pkg/use.py", 12), ("pkg/models.py", 7)}
    definition = next(o for o in answer.result.occurrences if o.line == 2)
    assert definition.is_definition and (definition.col, definition.end_col) == (8, 12)

    names = engine.navigation.references("save", "pkg/models.py")  # what it replaces
    assert ("pkg/use.py", 11) in {(o.path, o.line) for o in names.occurrences}


@needs_jedi
async def test_definition_of_a_call_and_through_a_reexported_alias(engine: Engine) -> None:
    answer = await engine.precise.definitions("save", "pkg/use.py", Position("pkg/use.py", 11, 6))
    assert answer.source == JEDI
    assert [(r.path, r.symbol.qualname) for r in answer.refs] == [("pkg/models.py", "B.save")]

    # main.py line 5: `    return Alias().save()`, `Alias` re-exported by pkg/__init__.py
    answer = await engine.precise.definitions("save", "main.py", Position("main.py", 5, 20))
    assert [(r.path, r.symbol.qualname) for r in answer.refs] == [("pkg/models.py", "A.save")]


@needs_jedi
async def test_an_unsaved_buffer_is_what_the_server_sees(engine: Engine) -> None:
    edited = USE.replace("    b = B()\n", "    b = A()\n")  # other() now calls A.save
    await engine.update_buffer("pkg/use.py", edited)
    answer = await engine.precise.definitions("save", "pkg/use.py", Position("pkg/use.py", 11, 6))
    assert [r.symbol.qualname for r in answer.refs] == ["A.save"]


async def test_a_missing_server_gives_the_name_based_answer_with_a_note(
    tmp_path: Path, user_config: Path
) -> None:
    engine = await open_engine(workspace(tmp_path), user_config, ["no-such-language-server-x"])
    try:
        at = Position("pkg/models.py", 2, 8)
        answer = await engine.precise.references("save", "pkg/models.py", at, 100)
        assert answer.source == "name_match"
        assert "no-such-language-server-x is not installed" in answer.note
        assert ("pkg/use.py", 11) in {(o.path, o.line) for o in answer.result.occurrences}
        defs = await engine.precise.definitions("save", "pkg/use.py", Position("pkg/use.py", 6, 6))
        assert defs.source == "name_match" and "not installed" in defs.note
        assert {r.symbol.qualname for r in defs.refs} == {"A.save", "B.save"}
    finally:
        await engine.close()


async def test_a_crashing_server_falls_back_and_is_restarted_a_few_times(
    tmp_path: Path, user_config: Path
) -> None:
    script = tmp_path / "crasher.py"
    script.write_text(CRASHER)
    engine = await open_engine(workspace(tmp_path), user_config, [sys.executable, str(script)])
    try:
        at = Position("pkg/use.py", 6, 6)
        notes = []
        for _ in range(MAX_RESTARTS + 3):
            answer = await engine.precise.definitions("save", "pkg/use.py", at)
            assert answer.source == "name_match" and answer.refs
            notes.append(answer.note)
        assert all("exited (code 3)" in n for n in notes[: MAX_RESTARTS + 1]), notes
        assert all("not restarted any more" in n for n in notes[MAX_RESTARTS + 1 :]), notes
        server, _ = engine.precise.servers.server_for("pkg/use.py")
        assert server is not None and server.starts == server.deaths == MAX_RESTARTS + 1
    finally:
        await engine.close()


@needs_jedi
async def test_the_server_stops_when_idle_and_at_close(tmp_path: Path, user_config: Path) -> None:
    root = workspace(tmp_path)
    engine = await open_engine(root, user_config)
    try:
        engine.precise.servers.settings.idle_s = 0.5
        at = Position("pkg/use.py", 6, 6)
        assert (await engine.precise.definitions("save", "pkg/use.py", at)).source == JEDI
        server, _ = engine.precise.servers.server_for("pkg/use.py")
        assert server is not None and server.client is not None
        first = server.client.process
        await asyncio.wait_for(first.wait(), 10)  # idle: shut down
        assert server.client is None
        assert (await engine.precise.definitions("save", "pkg/use.py", at)).source == JEDI
        assert server.client is not None and (server.starts, server.deaths) == (2, 0)
        process = server.client.process
    finally:
        await engine.close()
    assert process.returncode is not None  # stopped with the engine


async def test_a_server_that_never_answers_times_out_into_the_fallback(
    tmp_path: Path, user_config: Path
) -> None:
    script = tmp_path / "hanger.py"
    script.write_text(CRASHER)
    server = [sys.executable, str(script), "hang"]
    engine = await open_engine(workspace(tmp_path), user_config, server, timeout_s=1)
    try:
        at = Position("pkg/use.py", 6, 6)
        started = asyncio.get_running_loop().time()
        answer = await engine.precise.references("save", "pkg/use.py", at, 100)
        assert asyncio.get_running_loop().time() - started < 10
        assert answer.source == "name_match" and "gave no answer in 1s" in answer.note
        assert ("pkg/use.py", 11) in {(o.path, o.line) for o in answer.result.occurrences}
        pool_server, _ = engine.precise.servers.server_for("pkg/use.py")
        assert pool_server is not None and pool_server.deaths == 0  # slow is not dead
    finally:
        await engine.close()
