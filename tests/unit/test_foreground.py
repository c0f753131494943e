"""Background steps wait while an editor request runs; capped; never inside a request."""

from __future__ import annotations

import threading

from agentic_lsp import foreground
from agentic_lsp.foreground import editor_busy, editor_request, yield_to_editor, yielded


def test_no_request_no_wait() -> None:
    assert not editor_busy()
    assert yield_to_editor() == 0.0


def test_a_background_step_waits_until_the_request_ends() -> None:
    entered, release = threading.Event(), threading.Event()
    order: list[str] = []

    def editor() -> None:
        with editor_request():
            entered.set()
            release.wait(10)
            order.append("request done")

    def background() -> None:
        entered.wait(10)
        yield_to_editor(cap_s=10)
        order.append("background step")

    waits_before, _ = yielded()
    threads = [threading.Thread(target=editor), threading.Thread(target=background)]
    for thread in threads:
        thread.start()
    entered.wait(10)
    assert editor_busy()
    release.set()
    for thread in threads:
        thread.join(10)
    assert order == ["request done", "background step"]
    assert not editor_busy()
    assert yielded()[0] == waits_before + 1


def test_the_wait_is_capped_and_a_request_thread_never_waits() -> None:
    entered, release = threading.Event(), threading.Event()
    inside: list[float] = []

    def editor() -> None:
        with editor_request():
            inside.append(yield_to_editor(cap_s=10))  # its own thread: no wait
            entered.set()
            release.wait(10)

    thread = threading.Thread(target=editor)
    thread.start()
    try:
        entered.wait(10)
        waited = yield_to_editor(cap_s=0.05)
        assert 0.05 <= waited < 5
        assert inside == [0.0]
    finally:
        release.set()
        thread.join(10)
    assert foreground._active == 0


def test_editor_work_marks_its_requests() -> None:
    import asyncio

    from agentic_lsp.lsp.editor_work import EditorWork

    work = EditorWork()
    try:
        seen = asyncio.run(work.run(editor_busy))
    finally:
        work.close()
    assert seen is True and not editor_busy()
