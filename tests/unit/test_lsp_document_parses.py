"""Editor-side parse cache: one parse per document version, shared by concurrent requests."""

from __future__ import annotations

import asyncio

from agentic_lsp.lsp.editor_work import DocumentParses, EditorWork


def test_one_parse_per_version_shared_by_waiting_requests() -> None:
    async def body() -> None:
        parses, calls = DocumentParses(), []

        async def parse(text: str) -> str:
            calls.append(text)
            await asyncio.sleep(0.01)
            return text.upper()

        first = [parses.get("u", 1, "a", lambda: parse("a")) for _ in range(3)]
        assert await asyncio.gather(*first) == ["A", "A", "A"]
        assert await parses.get("u", 1, "a", lambda: parse("a")) == "A"  # cached
        assert calls == ["a"]
        assert await parses.get("u", 2, "ab", lambda: parse("ab")) == "AB"
        assert parses.cached("u", 1, "a") is None  # only the latest version is kept
        parses.forget("u")
        assert parses.cached("u", 2, "ab") is None

    asyncio.run(body())


def test_a_cancelled_request_does_not_cancel_the_shared_parse() -> None:
    async def body() -> None:
        parses = DocumentParses()
        started = asyncio.Event()

        async def parse() -> str:
            started.set()
            await asyncio.sleep(0.02)
            return "done"

        first = asyncio.ensure_future(parses.get("u", 1, "t", parse))
        await started.wait()
        second = asyncio.ensure_future(parses.get("u", 1, "t", parse))
        first.cancel()
        assert await second == "done"
        assert parses.cached("u", 1, "t") == "done"

    asyncio.run(body())


def test_debounced_parse_runs_once_after_a_burst() -> None:
    async def body() -> None:
        parses, runs = DocumentParses(debounce_s=0.02), []

        async def parse() -> None:
            runs.append(1)

        for _ in range(20):
            parses.schedule("u", parse)
        await asyncio.sleep(0.1)
        assert runs == [1]
        parses.close()

    asyncio.run(body())


def test_editor_work_tells_a_cancelled_call_to_stop() -> None:
    async def body() -> None:
        work = EditorWork(1)
        seen: list[bool] = []

        def loop(cancel) -> None:  # type: ignore[no-untyped-def]
            import time

            while not cancel():
                time.sleep(0.005)
            seen.append(True)

        task = asyncio.ensure_future(work.run_cancellable(loop))
        await asyncio.sleep(0.05)
        task.cancel()
        await asyncio.sleep(0.1)
        assert seen == [True]
        work.close()

    asyncio.run(body())
