"""The agents' navigation tools answer through the engine's precise view (the same as MCP and
LSP), with a real jedi-language-server on a workspace where name matches are wrong: two classes
each define ``save``; ``a.save()`` with ``a = A()`` is ``A.save`` only."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from test_precise_navigation import USE, needs_jedi  # the same-named-methods workspace

from agentic_lsp.agents.tools import TOOL_HELP, IndexTools, parse_calls
from agentic_lsp.agents.workspace_view import WorkspaceView
from agentic_lsp.config import load_settings
from agentic_lsp.engine import Engine

JEDI = "[source: language_server:jedi-language-server"

MODELS = '''\
class A:
    def save(self):
        """Save an A."""
        return "a"


class B:
    def save(self):
        return "b"
'''


@pytest.fixture
async def engine(tmp_path: Path, user_config: Path) -> AsyncIterator[Engine]:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "models.py").write_text(MODELS)
    (root / "pkg" / "use.py").write_text(USE)
    user_config.write_text("[navigation]\ntimeout_s = 30\n")
    eng = Engine(root, load_settings(root))
    await eng.start(index=False, watch=False)
    await asyncio.to_thread(eng.sync_blocking, None, False)
    try:
        yield eng
    finally:
        await eng.close()


def _tools(engine: Engine, **kwargs: object) -> IndexTools:
    view = WorkspaceView(engine.navigation.readable)
    return IndexTools(engine.navigation, None, view, **kwargs)  # type: ignore[arg-type]


@needs_jedi
async def test_definition_at_a_use_is_the_servers_and_labelled(engine: Engine) -> None:
    tools = _tools(engine, precise=engine.precise)
    # name matches give both A.save and B.save; jedi knows a is an A
    named = await tools.call("definition", "save")
    assert named.splitlines()[-1].startswith("[source: name_match; give path, line and column")
    assert "A.save" in named and "B.save" in named
    precise = await tools.call("definition", "save pkg/use.py:6")
    assert precise.splitlines()[-1] == JEDI + "]"
    assert "pkg/models.py:2 method A.save" in precise and "B.save" not in precise
    implementations = await tools.call("implementations", "save pkg/use.py:6")
    assert implementations.splitlines()[-1].startswith(
        "[source: name_match; language server unavailable:"
    )
    assert "A.save" in implementations  # jedi has no implementations: named definitions


@needs_jedi
async def test_references_and_hover_through_the_engine_view(engine: Engine) -> None:
    engine.precise  # made by the engine: the tools find it over the same navigation  # noqa: B018
    tools = _tools(engine)
    refs = await tools.call("references", "save pkg/use.py:11")
    assert refs.splitlines() == [
        "pkg/use.py:11: b.save()",
        "pkg/use.py:12: b.save()",
        "pkg/models.py:8: def save(self):",
        JEDI + "]",
    ]
    hover = await tools.call("hover", "save pkg/use.py:6")
    assert hover.endswith("\n[source: name_match; own language server: no hover]")
    assert "save" in hover
    assert await tools.call("hover", "nowhere pkg/use.py:6") == (
        "error: 'nowhere' is not on pkg/use.py:6"
    )
    assert (await tools.call("definition", "save pkg/use.py")).startswith("error: definition takes")


def test_tool_help_names_the_position_form_and_stays_short() -> None:
    assert "TOOL: definition parse_config src/app.py:12" in TOOL_HELP
    assert len(TOOL_HELP) < 460  # every agent prompt carries it
    assert parse_calls("TOOL: hover save pkg/use.py:6\nTOOL: implementations Base.run") == [
        ("hover", "save pkg/use.py:6"),
        ("implementations", "Base.run"),
    ]


async def test_a_runs_index_ports_carry_the_engines_precise_view(engine: Engine) -> None:
    """What a workflow run's agents get (stages.py builds IndexTools from these ports)."""
    ports = await asyncio.to_thread(engine.index_ports)
    assert ports.precise is engine.precise and ports.navigation is engine.navigation
