"""The call graph on a fixture repository parsed with the real tree-sitter grammar: how each
call is resolved (self, same file, aliased and re-exported imports, recursion, nested
functions), ambiguity kept with its candidates, impact, and incremental updates."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from agentic_lsp.agents.tools import IndexTools, parse_calls
from agentic_lsp.navigation.call_graph import CallGraph, FunctionRef, call_graph_for
from agentic_lsp.navigation.call_resolution import module_names
from agentic_lsp.navigation.call_sites import extract_calls

FIXTURE = Path(__file__).parents[1] / "fixtures" / "call_graph"


class _Readable:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.buffer: dict[str, str] = {}
        self.reads: list[str] = []

    def buffers(self) -> dict[str, str]:
        return dict(self.buffer)

    def text_or_none(self, path: str) -> str | None:
        self.reads.append(path)
        if path in self.buffer:
            return self.buffer[path]
        file = self.root / path
        return file.read_text() if file.is_file() else None


class _Navigation:
    """The four things the graph asks of :class:`~agentic_lsp.navigation.Navigation`."""

    def __init__(self, root: Path) -> None:
        self.readable = _Readable(root)

    def language_of(self, path: str, text: str | None = None) -> str | None:
        return "python" if path.endswith(".py") else None

    def indexed_files(self) -> list[tuple[str, str, str | None]]:
        root = self.readable.root
        return [
            (p.relative_to(root).as_posix(), hashlib.sha1(p.read_bytes()).hexdigest(), "python")
            for p in sorted(root.rglob("*.py"))
        ]


Repo = tuple[Path, _Navigation, CallGraph]


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    nav = _Navigation(root)
    return root, nav, CallGraph(nav)  # type: ignore[arg-type]


def _edges(graph: CallGraph) -> set[tuple[str, str, int, str, tuple[tuple[str, str], ...]]]:
    return {(e.path, e.caller, e.line, e.resolution, e.targets) for e in graph.edges()}


def _one(graph: CallGraph, name: str) -> list[FunctionRef]:
    found = graph.find(name)
    assert len(found) == 1, found
    return found


def test_extraction_names_callers_calls_and_imports() -> None:
    facts = extract_calls("shop/core.py", "python", (FIXTURE / "shop/core.py").read_text())
    assert [d.qualname for d in facts.definitions] == ["helper", "run", "run.inner"]
    calls = {(c.caller, c.callee, c.line, c.col) for c in facts.calls}
    assert ("run.inner", "helper", 13, 15) in calls  # the nested function is the caller
    assert ("run", "Basket().save", 17, 13) in calls
    bindings = {(b.local, b.module, b.attr, b.level) for b in facts.bindings}
    assert bindings == {("osp", "os.path", None, 0), ("models", "", "models", 1),
                        ("Basket", "models", "Cart", 1)}  # fmt: skip
    assert extract_calls("a.go", "go", "package a").calls == []
    local = extract_calls("b.py", "python", "def f(helper, *rest):\n    run = helper\n    run()\n")
    assert local.local_names == {"f": {"helper", "rest", "run"}}


def test_module_names_start_at_the_top_package() -> None:
    paths = ["src/pkg/__init__.py", "src/pkg/a.py", "tool.py"]
    names = module_names(paths)
    assert names["pkg"] == "src/pkg/__init__.py" and names["pkg.a"] == "src/pkg/a.py"
    assert names["tool"] == "tool.py" and "src.pkg.a" in names


def test_each_call_is_resolved_by_the_rule_that_places_it(repo: Repo) -> None:
    _, _, graph = repo
    edges = _edges(graph)
    assert edges == {
        ("app.py", "main", 5, "import", (("shop/core.py", "run"),)),  # re-export + alias
        ("app.py", "main", 6, "same_file", (("app.py", "pick"),)),
        # an untyped receiver and two methods named save: both kept, none picked
        ("app.py", "main", 7, "ambiguous",
         (("shop/models.py", "Cart.save"), ("shop/models.py", "Order.save"))),
        ("shop/core.py", "run.inner", 13, "same_file", (("shop/core.py", "helper"),)),
        ("shop/core.py", "run", 16, "same_file", (("shop/core.py", "run"),)),  # recursion
        ("shop/core.py", "run", 17, "import", (("shop/models.py", "Cart.save"),)),
        ("shop/core.py", "run", 17, "import", (("shop/models.py", "Cart"),)),  # aliased
        ("shop/core.py", "run", 18, "import", (("shop/models.py", "make_cart"),)),
        ("shop/core.py", "run", 20, "same_file", (("shop/core.py", "run.inner"),)),
        ("shop/models.py", "Cart.save", 3, "self", (("shop/models.py", "Cart.check"),)),
        ("shop/models.py", "Order.save", 11, "self", (("shop/models.py", "Order.check"),)),
        ("shop/models.py", "make_cart", 18, "same_file", (("shop/models.py", "Cart"),)),
    }  # fmt: skip
    stats = graph.stats()
    assert stats.external == 1  # osp.join: the standard library
    assert stats.by_resolution["ambiguous"] == 1


def test_callers_callees_and_impact(repo: Repo) -> None:
    _, _, graph = repo
    check = graph.find("check")
    assert {f.qualname for f in check} == {"Cart.check", "Order.check"}
    cart_check = graph.find("Cart.check")
    assert [(e.caller, e.resolution) for e in graph.callers(cart_check)] == [("Cart.save", "self")]
    callees = graph.callees(_one(graph, "run"))
    assert {e.callee for e in callees} == {"run", "Basket", "Basket().save", "models.make_cart",
                                           "inner"}  # fmt: skip
    at_line = graph.find(path="shop/core.py", line=13)
    assert [f.qualname for f in at_line] == ["run.inner"]

    entries, truncated = graph.impact(cart_check, depth=5)
    reached = [(e.function.qualname, e.depth, e.edge.resolution) for e in entries]
    assert reached == [("Cart.save", 1, "self"), ("main", 2, "ambiguous"), ("run", 2, "import")]
    assert not truncated
    strict, _ = graph.impact(cart_check, depth=5, ambiguous=False)
    assert [(e.function.qualname, e.depth) for e in strict] == [
        ("Cart.save", 1),
        ("run", 2),
        ("main", 3),
    ]
    capped, truncated = graph.impact(cart_check, depth=5, limit=1)
    assert len(capped) == 1 and truncated
    shallow, _ = graph.impact(cart_check, depth=1)
    assert [e.function.qualname for e in shallow] == ["Cart.save"]


def test_a_changed_file_or_buffer_is_the_only_one_parsed_again(repo: Repo) -> None:
    root, nav, graph = repo
    assert graph.refresh() == 4 and graph.refresh() == 0
    nav.readable.reads.clear()
    app = root / "app.py"
    app.write_text(app.read_text() + "\n\ndef again():\n    main()\n")
    assert graph.refresh() == 1 and nav.readable.reads == ["app.py"]
    assert [e.caller for e in graph.callers(_one(graph, "main"))] == ["again"]

    nav.readable.buffer["shop/core.py"] = "def helper():\n    return helper()\n"
    assert graph.refresh() == 1
    assert {(e.path, e.caller) for e in graph.callers(_one(graph, "helper"))} == {
        ("shop/core.py", "helper")
    }
    assert not graph.find("run")  # the buffer's text wins over the disk's
    assert graph.callers(graph.find("Cart")) == [
        e for e in graph.edges() if e.targets == (("shop/models.py", "Cart"),)
    ]
    del nav.readable.buffer["shop/core.py"]
    (root / "shop/models.py").unlink()
    graph.refresh()
    assert not graph.find("Cart.check")
    assert all("shop/models.py" not in {t[0] for t in e.targets} for e in graph.edges())


async def test_agents_ask_the_same_graph(repo: Repo) -> None:
    _, nav, _ = repo
    tools = IndexTools(nav, None, None)  # type: ignore[arg-type]
    assert call_graph_for(nav) is call_graph_for(nav)  # type: ignore[arg-type]
    callers = await tools.call("callers", "Cart.save")
    assert callers.splitlines() == [
        "app.py:7 main -> thing.save (ambiguous)",
        "shop/core.py:17 run -> Basket().save (import)",
    ]
    impact = await tools.call("impact", "make_cart")
    assert impact.splitlines() == ["1 shop/core.py:11 run (import)", "2 app.py:4 main (import)"]
    assert (
        await tools.call("callees", "nothing_here")
        == "no function 'nothing_here' in the call graph"
    )
    assert parse_calls("TOOL: callees run\nTOOL: impact Cart.check") == [
        ("callees", "run"),
        ("impact", "Cart.check"),
    ]
