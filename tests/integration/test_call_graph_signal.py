"""The call graph as a phase-2 retrieval signal (``index.call_graph_signal``) on a real engine:
the top function's callee enters the results when the signal is on and the graph is built, not
when it is off; a graph not built yet, or none at all, skips the signal with a note."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests.integration.test_index_sync import close, open_engine

from agentic_lsp.engine import Engine
from agentic_lsp.index.retrieval import graph_signal
from agentic_lsp.navigation.call_graph import Neighbours, call_graph_for

FIXTURE = Path(__file__).parents[1] / "fixtures" / "call_graph_signal"
QUERY = "render_invoice_table renders the invoice table wrong"
NO_DENSE = frozenset({"dense"})  # lexical only: the callee shares no word with the query
CALLEE = ("pkg/layout.py", "pad_columns")


def found(
    engine: Engine, disabled: frozenset[str] = NO_DENSE
) -> tuple[list[tuple[str, str]], list[str]]:
    response = engine.searcher.search(QUERY, 5, disabled=disabled)
    return [(r.path, r.symbol or "") for r in response.results], response.notes


@pytest.fixture
def engine(tmp_path: Path, request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    env = {
        "AGENTIC_LSP_INDEX__CALL_GRAPH_SIGNAL": request.param,
        "AGENTIC_LSP_INDEX__WATCH": "false",
    }
    opened = open_engine(root, AGENTIC_LSP_CACHE_DIR=str(tmp_path / "cache"), **env)
    opened.sync_blocking()
    yield opened
    close(opened)


@pytest.mark.parametrize("engine", ["true"], indirect=True)
def test_the_top_functions_callee_enters_when_on(engine: Engine) -> None:
    call_graph_for(engine.navigation).refresh()
    on, notes = found(engine)
    assert on[0] == ("pkg/report.py", "render_invoice_table")
    assert CALLEE in on
    assert not any("call-graph" in n for n in notes)
    signals = engine.searcher.search(QUERY, 5, disabled=NO_DENSE).results[on.index(CALLEE)].signals
    assert signals.get("call_graph") == 1  # lent by the first seed
    off, _ = found(engine, NO_DENSE | {"call_graph"})
    assert CALLEE not in off
    assert ("pkg/layout.py", "shout") not in on  # not called: no edge, no lift


@pytest.mark.parametrize("engine", ["false"], indirect=True)
def test_the_setting_off_leaves_the_ranking_alone(engine: Engine) -> None:
    call_graph_for(engine.navigation).refresh()
    off, notes = found(engine)
    assert off[0] == ("pkg/report.py", "render_invoice_table")
    assert CALLEE not in off
    assert not any("call-graph" in n for n in notes)


@pytest.mark.parametrize("engine", ["true"], indirect=True)
def test_an_unbuilt_graph_is_skipped_with_a_note_and_built_in_the_background(
    engine: Engine,
) -> None:
    graph_signal._PROVIDERS.pop(engine.indexer, None)
    results, notes = found(engine)
    assert CALLEE not in results
    assert "call-graph signal skipped: no call graph for this workspace yet" in notes

    graph = call_graph_for(engine.navigation)  # created, never refreshed
    provider = graph_signal.provider_for(engine.indexer)
    assert isinstance(provider, Neighbours) and graph.refreshes == 0
    results, notes = found(engine)
    assert CALLEE not in results
    assert any("not built yet" in n for n in notes)
    provider.wait()  # the query started the build in a worker thread and did not wait
    assert graph.refreshes == 1
    results, notes = found(engine)
    assert CALLEE in results
