"""Keeping the cyclic collector off long-lived state: nothing alive is lost, no cycle is frozen."""

from __future__ import annotations

import gc
import weakref

import pytest

from agentic_lsp import heap
from agentic_lsp.heap import collector_paused, release_heap, settle_heap


@pytest.fixture(autouse=True)
def freezing(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in a server (``enable_freezing``), for this test only."""
    monkeypatch.setattr(heap, "_enabled", True)


class Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the cyclic collector frees it


def test_settle_heap_collects_cycles_then_freezes_what_is_alive() -> None:
    garbage = Node()
    gone = weakref.ref(garbage)
    del garbage  # unreachable, but only a collection frees it
    kept = Node()
    assert gone() is not None
    settle_heap()
    assert gone() is None  # collected, not frozen for good
    assert gc.get_freeze_count() > 0
    assert not any(o is kept for o in gc.get_objects())  # out of the generations
    assert kept.me is kept


def test_collector_paused_restores_the_previous_state() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # was off before: stays off
    finally:
        gc.enable()


def test_settle_heap_without_collecting_still_freezes() -> None:
    before = gc.get_freeze_count()
    kept = [Node() for _ in range(10)]
    settle_heap(collect=False)
    assert gc.get_freeze_count() >= before + len(kept)


def test_released_cycles_are_collected_again() -> None:
    """What was frozen while alive and became garbage later is freed once released — by the
    collector's next pass, or by the next settle that collects."""
    for next_settle in (False, True):
        cycle = Node()
        gone = weakref.ref(cycle)
        alive = Node()
        settle_heap(collect=False)  # frozen while alive
        del cycle
        gc.collect()
        assert gone() is not None  # frozen: the collector does not look at it
        release_heap()
        if next_settle:
            settle_heap()
            assert not any(o is alive for o in gc.get_objects())  # frozen again
        else:
            gc.collect()
        assert gone() is None


def test_off_unless_a_server_turns_it_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """Off, neither call touches the collector. Watched through the calls themselves: the
    process-wide freeze count also falls whenever any frozen object is freed (another thread,
    a finalizer), so comparing it before and after is not a test of this module."""
    monkeypatch.setattr(heap, "_enabled", False)
    calls: list[str] = []
    for name in ("collect", "freeze", "unfreeze"):
        monkeypatch.setattr(gc, name, lambda *a, _n=name, **k: calls.append(_n))
    settle_heap()
    settle_heap(collect=False)
    release_heap()
    assert calls == []
    monkeypatch.setattr(heap, "_enabled", True)  # and the spy does see calls when on
    settle_heap()
    release_heap()
    assert calls == ["collect", "freeze", "unfreeze"]
