"""The architecture's invariants (``tests/architecture_rules.py``), checked on the source tree.

The checker is tested first on synthetic trees: one with a back-arrow for every rule, where each
rule must report exactly what was planted, and a clean one, where nothing may be reported.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from architecture_rules import (
    ADAPTERS_APART,
    ADAPTERS_NO_INDEX,
    CIRCLES,
    ENGINE_ON_TOP,
    OVERLAY,
    PROTOCOLS,
    RULES,
    SERVICES_DOWN,
    SMALL,
    Violation,
    check,
    scan,
)

SRC = Path(__file__).resolve().parents[2] / "src" / "agentic_lsp"


def write_tree(root: Path, files: dict[str, str]) -> Path:
    package = root / "agentic_lsp"
    for rel, text in files.items():
        path = package / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return package


def by_rule(violations: list[Violation]) -> dict[str, set[str]]:
    """Each rule's violations, as the message up to the rule name."""
    out: dict[str, set[str]] = {}
    for v in violations:
        out.setdefault(v.rule, set()).add(v.message.split(":")[0])
    return out


# Modules both synthetic trees share; the engine may use the index, overlay included.
BASE = {
    "__init__.py": "",
    "engine.py": """
        from agentic_lsp.index.indexer import Indexer

        class Engine:
            def __init__(self):
                self._indexer = Indexer()

            def buffer(self, path, text):
                self._indexer.set_overlay(path, text)
                return dict(self._indexer.overlays)
        """,
    "index/__init__.py": "from agentic_lsp.index.indexer import Indexer\n",
    "index/indexer.py": """
        from . import store

        class Indexer:
            def __init__(self):
                self.overlays = {}
                self.store = store.Store()

            def set_overlay(self, path, text):
                self.overlays[path] = text
        """,
    "index/store.py": "from agentic_lsp.index.models import Chunk\n\nclass Store: ...\n",
    "index/models.py": "class Chunk: ...\n",
    "index/progress.py": "class Progress: ...\n",
    "lsp/__init__.py": "",
    "mcp/b.py": "",  # a namespace package, like the real agentic_lsp.mcp
    "cli/__init__.py": "",
    "changes/__init__.py": "",
    "workflows/__init__.py": "",
    "llm/__init__.py": "",
    "agents/__init__.py": "",
    "navigation/__init__.py": "",
}

DIRTY = {
    **BASE,
    # a service importing the Engine, inside a function, as a submodule of the package
    "index/x.py": """
        def run():
            from agentic_lsp import engine
            return engine
        """,
    # lsp -> mcp through a relative import; an adapter reaching the index package's re-export
    "lsp/a.py": """
        from lsprotocol import types
        from ..mcp import b

        def indexer():
            from agentic_lsp.index import Indexer
            return Indexer
        """,
    # an adapter importing index internals: by importlib, and under TYPE_CHECKING
    "mcp/b.py": """
        import importlib

        import mcp.server
        from agentic_lsp.index import models

        store = importlib.import_module("agentic_lsp.index.store")
        """,
    "cli/main.py": """
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from agentic_lsp.index.store import Store
        """,
    # a service reaching into the Engine's indexer and the overlay
    "changes/service.py": """
        def buffers(engine):
            return dict(engine._indexer.overlays) if getattr(engine, "_indexer") else {}
        """,
    # protocol types outside the adapter
    "workflows/x.py": "import lsprotocol.types\n",
    # a circle across two packages (llm <-> agents)
    "llm/a.py": "import agentic_lsp.agents.b\n",
    "agents/b.py": "from ..llm import a\n",
    "navigation/big.py": "x = 1\n" * 401,
}

EXPECTED = {
    ADAPTERS_NO_INDEX: {
        "module agentic_lsp.lsp.a imports agentic_lsp.index",
        "module agentic_lsp.mcp.b imports agentic_lsp.index.store",
        "module agentic_lsp.cli.main imports agentic_lsp.index.store",
    },
    ENGINE_ON_TOP: {"module agentic_lsp.index.x imports agentic_lsp.engine"},
    ADAPTERS_APART: {"module agentic_lsp.lsp.a imports agentic_lsp.mcp.b"},
    OVERLAY: {
        "module agentic_lsp.changes.service accesses .overlays",
        "module agentic_lsp.changes.service accesses ._indexer",
    },
    PROTOCOLS: {"module agentic_lsp.workflows.x imports lsprotocol.types"},
    SERVICES_DOWN: {"module agentic_lsp.index.x imports agentic_lsp.engine"},
    CIRCLES: {"modules agentic_lsp.agents.b, agentic_lsp.llm.a import each other"},
    SMALL: {"module agentic_lsp.navigation.big has 401 lines"},
}

CLEAN = {
    **BASE,
    # adapters: result modules of the index, their own protocol, the Engine; the CLI wires both
    "lsp/a.py": """
        from lsprotocol import types
        from pygls.server import LanguageServer

        from agentic_lsp.engine import Engine
        from agentic_lsp.index.models import Chunk
        """,
    "mcp/b.py": """
        import importlib

        from mcp.server import FastMCP

        from agentic_lsp.index import models, progress

        results = importlib.import_module("agentic_lsp.index.results")
        """,
    "cli/main.py": """
        from agentic_lsp.engine import Engine
        from agentic_lsp.lsp import a
        from agentic_lsp.mcp import b
        """,
    "testing/__init__.py": """
        import lsprotocol.types
        import mcp

        from agentic_lsp.engine import Engine
        """,
    # services use the index and each other; a circle inside one package is allowed
    "changes/service.py": "from agentic_lsp.index.store import Store\nfrom . import other\n",
    "changes/other.py": "from . import service\n",
    "workflows/x.py": "from agentic_lsp.changes import service\nfrom agentic_lsp.llm import a\n",
    "llm/a.py": "from agentic_lsp.index.models import Chunk\n",
    "navigation/big.py": "x = 1\n" * 400,
    # sample files copied to a user's disk are not modules
    "cli/demo_assets/project/app.py": "from agentic_lsp.engine import Engine\n" + "x = 1\n" * 500,
}


def test_every_rule_reports_exactly_its_planted_violation(tmp_path: Path) -> None:
    found = check(write_tree(tmp_path, DIRTY))
    assert by_rule(found) == EXPECTED
    assert {rule.name for rule in RULES} == set(EXPECTED), "every rule needs a planted violation"


def test_violation_messages_name_module_target_rule_and_reason(tmp_path: Path) -> None:
    found = check(write_tree(tmp_path, DIRTY))
    [apart] = [v for v in found if v.rule == ADAPTERS_APART]
    assert apart.message == (
        "module agentic_lsp.lsp.a imports agentic_lsp.mcp.b: lsp/ does not import mcp/ "
        "(the LSP server gets MCP hosting injected by the CLI)"
    )
    assert apart.where == "agentic_lsp/lsp/a.py:3"
    [circle] = [v for v in found if v.rule == CIRCLES]
    assert "the circle spans agents, llm" in circle.message
    assert "agentic_lsp.agents.b -> agentic_lsp.llm.a" in circle.message
    assert "agentic_lsp.llm.a -> agentic_lsp.agents.b" in circle.message


def test_clean_tree_reports_nothing(tmp_path: Path) -> None:
    assert check(write_tree(tmp_path, CLEAN)) == []


def test_scan_resolves_every_kind_of_import(tmp_path: Path) -> None:
    project = scan(write_tree(tmp_path, DIRTY))
    graph = project.graph()
    assert "agentic_lsp.engine" in graph["agentic_lsp.index.x"]  # in a function, `from pkg import`
    assert "agentic_lsp.mcp.b" in graph["agentic_lsp.lsp.a"]  # relative
    assert "agentic_lsp.index.store" in graph["agentic_lsp.cli.main"]  # under TYPE_CHECKING
    assert "agentic_lsp.index.store" in graph["agentic_lsp.mcp.b"]  # importlib.import_module
    assert "agentic_lsp.index.indexer" in graph["agentic_lsp.index"]  # from a package __init__
    assert "agentic_lsp.index.store" in graph["agentic_lsp.index.indexer"]  # `from . import`


def test_checker_reads_the_source_tree() -> None:
    project = scan(SRC)
    assert "agentic_lsp.engine" in project.modules
    assert "agentic_lsp.mcp.server" in project.modules
    assert not any(".demo_assets." in name for name in project.modules)
    assert project.graph()["agentic_lsp.cli.main"], "the CLI imports something"


def test_source_tree_follows_the_architecture() -> None:
    violations = check(SRC)
    if violations:
        listing = "\n".join(str(v) for v in violations)
        pytest.fail(f"{len(violations)} architecture violations:\n{listing}", pytrace=False)
