"""Keeping the cyclic collector off long-lived state: nothing alive is lost, no cycle is frozen."""

from __future__ import annotations

import gc
import weakref

from agentic_lsp.index.heap import collector_paused, settle_heap


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
