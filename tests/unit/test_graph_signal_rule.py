"""The call-graph retrieval rule (:mod:`agentic_lsp.index.retrieval.graph_signal`) on hand-made
rankings, and the graph's neighbours (resolved edges only, never waiting for a refresh)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tests.unit.test_call_graph import Repo, repo  # noqa: F401  (the fixture)

from agentic_lsp.index.retrieval import graph_signal
from agentic_lsp.index.retrieval.fusion import Candidate

Target = tuple[str, str]


def cand(path: str, qualname: str, kind: str = "function") -> Candidate:
    return Candidate(f"{path}::{qualname}", {"path": path, "qualname": qualname, "kind": kind})


def ranking(*items: tuple[float, Candidate]) -> list[tuple[float, Candidate]]:
    return list(items)


def store(*found: Candidate):  # type: ignore[no-untyped-def]
    by_target = {(str(c.payload["path"]), str(c.payload["qualname"])): c for c in found}
    return lambda targets: {t: by_target[t] for t in targets if t in by_target}


def fixed(answer: dict[Target, list[Target]]):  # type: ignore[no-untyped-def]
    asked: list[list[Target]] = []

    def provider(seeds: Sequence[Target]) -> list[list[Target]]:
        asked.append(list(seeds))
        return [answer.get(s, []) for s in seeds]

    return provider, asked


def order(ranked: list[tuple[float, Candidate]]) -> list[str]:
    return [str(c.payload["qualname"]) for _, c in ranked]


def test_a_callee_of_the_top_function_enters_below_it_with_its_seed_rank() -> None:
    top, other = cand("a.py", "parse"), cand("b.py", "other")
    callee = cand("c.py", "tokenize")
    provider, asked = fixed({("a.py", "parse"): [("c.py", "tokenize")]})
    notes: list[str] = []
    out = graph_signal.apply(ranking((1.0, top), (0.3, other)), provider, store(callee), notes)
    assert order(out) == ["parse", "tokenize", "other"]  # 0.5 x 1.0 passes 0.3, not the seed
    assert out[1][0] == graph_signal.FACTOR * 1.0
    assert callee.ranks == {"call_graph": 1}
    assert notes == []
    assert asked == [[("a.py", "parse"), ("b.py", "other")]]


def test_a_neighbour_in_the_pool_keeps_the_better_score_and_classes_are_no_seeds() -> None:
    cls, top = cand("a.py", "Parser", "class"), cand("a.py", "Parser.feed", "method")
    low, high = cand("b.py", "low"), cand("b.py", "high")
    provider, asked = fixed({("a.py", "Parser.feed"): [("b.py", "low"), ("b.py", "high")]})
    ranked = ranking((2.0, cls), (1.0, top), (0.9, high), (0.1, low))
    out = graph_signal.apply(ranked, provider, store(), [])
    assert order(out) == ["Parser", "Parser.feed", "high", "low"]
    assert dict((str(c.payload["qualname"]), s) for s, c in out)["low"] == 0.5
    assert dict((str(c.payload["qualname"]), s) for s, c in out)["high"] == 0.9
    assert asked[0][0] == ("a.py", "Parser.feed")  # the class lent nothing


def test_at_most_per_seed_neighbours_and_only_stored_ones() -> None:
    top = cand("a.py", "hub")
    many = [("n.py", f"f{i}") for i in range(10)]
    provider, _ = fixed({("a.py", "hub"): many})
    stored = [cand("n.py", f"f{i}") for i in range(10) if i != 1]
    out = graph_signal.apply(ranking((1.0, top)), provider, store(*stored), [])
    assert order(out) == ["hub", "f0", "f2", "f3", "f4"]  # f1 is not in the store


def test_a_provider_that_cannot_answer_leaves_the_ranking_and_a_note() -> None:
    ranked = ranking((1.0, cand("a.py", "f")))
    notes: list[str] = []
    out = graph_signal.apply(
        ranked, lambda seeds: "the call graph is not built yet", store(), notes
    )
    assert out == ranked and notes == ["call-graph signal skipped: the call graph is not built yet"]
    notes.clear()
    assert graph_signal.apply(ranked, None, store(), notes) == ranked
    assert notes == ["call-graph signal skipped: no call graph for this workspace yet"]


def test_neighbours_follow_resolved_edges_and_never_wait(repo: Repo) -> None:  # noqa: F811
    _, _, graph = repo
    graph.refresh()
    main, run = ("app.py", "main"), ("shop/core.py", "run")
    answer = graph.neighbours_nowait([main, run])
    assert answer is not None
    by_main, by_run = answer
    # main -> start (import, re-exported run), pick (same file); thing.save() is ambiguous
    assert by_main == [run, ("app.py", "pick")]
    assert ("shop/models.py", "Cart.save") in by_run and main in by_run  # a callee, a caller
    assert run not in by_run  # its own recursion is no neighbour
    with graph._lock:
        assert graph.neighbours_nowait([main]) is None  # a refresh holds it: no waiting


def test_the_wiring_registers_a_provider_per_index_only_for_a_real_view(tmp_path: Path) -> None:
    from agentic_lsp.navigation.call_graph import call_graph_for

    class View:  # a stand-in navigation without an index: nothing registered, no error
        pass

    call_graph_for(View())  # type: ignore[arg-type]
    assert graph_signal.provider_for(View()) is None
