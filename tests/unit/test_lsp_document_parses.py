"""Editor-side parse cache: one parse per document version, shared by concurrent requests."""

from __future__ import annotations

import asyncio
import threading

from agentic_lsp.lsp.editor_work import DocumentParses, EditorWork


class Doc:
    """A document the editor keeps changing: ``current()`` is what a request reads."""

    def __init__(self, version: int, text: str) -> None:
        self.version, self.text = version, text

    def current(self) -> tuple[int, str]:
        return self.version, self.text

    def type(self, more: str) -> None:
        self.version, self.text = self.version + 1, self.text + more


def test_one_parse_per_version_shared_by_waiting_requests() -> None:
    async def body() -> None:
        parses, calls, doc = DocumentParses(), [], Doc(1, "a")

        async def parse(version: int, text: str) -> str:
            calls.append(text)
            await asyncio.sleep(0.01)
            return text.upper()

        first = [parses.get("u", doc.current, parse) for _ in range(3)]
        assert await asyncio.gather(*first) == ["A", "A", "A"]
        assert await parses.get("u", doc.current, parse) == "A"  # cached
        assert calls == ["a"]
        doc.type("b")
        assert await parses.get("u", doc.current, parse) == "AB"
        assert parses.cached("u", 1, "a") is None  # only the latest version is kept
        parses.forget("u")
        assert parses.cached("u", 2, "ab") is None

    asyncio.run(body())


def test_fast_typing_never_runs_two_parses_and_answers_from_the_newest_version() -> None:
    """A request sent while an older version is parsed waits for that parse and is answered
    by the next one, of the newest text: superseded versions are never parsed."""

    async def body() -> None:
        parses, doc = DocumentParses(), Doc(1, "a")
        calls: list[str] = []
        running = 0
        most = 0

        async def parse(version: int, text: str) -> str:
            nonlocal running, most
            running += 1
            most = max(most, running)
            calls.append(text)
            await asyncio.sleep(0.02)
            running -= 1
            return text

        first = asyncio.ensure_future(parses.get("u", doc.current, parse))
        await asyncio.sleep(0.005)
        later = []
        for ch in "bcde":  # four versions typed while version 1 is parsed, a request each
            doc.type(ch)
            later.append(asyncio.ensure_future(parses.get("u", doc.current, parse)))
        assert await first == "a"
        assert await asyncio.gather(*later) == ["abcde"] * 4
        assert calls == ["a", "abcde"]  # versions 2-4 were never parsed
        assert most == 1

    asyncio.run(body())


def test_a_request_is_never_answered_from_an_older_version_and_never_starves() -> None:
    """Typing that never stops: each request is answered by a parse of its own version or a
    newer one, after at most the parse running when it came and one more."""

    async def body() -> None:
        parses, doc = DocumentParses(), Doc(1, "x")

        async def parse(version: int, text: str) -> tuple[int, str]:
            await asyncio.sleep(0.01)
            return version, text

        async def typist() -> None:
            while True:
                await asyncio.sleep(0.002)
                doc.type("y")

        typing = asyncio.ensure_future(typist())
        try:
            for _ in range(5):
                asked = doc.version
                version, text = await asyncio.wait_for(parses.get("u", doc.current, parse), 1)
                assert version >= asked and len(text) == version
        finally:
            typing.cancel()

    asyncio.run(body())


def test_a_request_arriving_between_a_parse_finishing_and_its_bookkeeping_does_not_spin() -> None:
    """A parse that has just finished but whose done-callback has not run yet (the request's
    step was queued first): the request must not spin on the event loop awaiting a done future
    (it once did, starving the callback forever and freezing the server)."""
    answers: list[str] = []

    async def body() -> None:
        parses, doc = DocumentParses(), Doc(1, "a")
        later: list[asyncio.Future[str]] = []

        async def parse(version: int, text: str) -> str:
            if version == 1:  # queued before this parse's done-callbacks
                doc.type("b")
                later.append(asyncio.ensure_future(parses.get("u", doc.current, parse)))
            return text

        answers.append(await parses.get("u", doc.current, parse))
        answers.append(await later[0])

    thread = threading.Thread(target=asyncio.run, args=(body(),), daemon=True)
    thread.start()
    thread.join(10)
    assert not thread.is_alive(), "the event loop spun on a finished parse"
    assert answers == ["a", "ab"]


def test_a_failed_parse_of_the_asked_version_fails_the_request_not_the_next_one() -> None:
    async def body() -> None:
        parses, doc = DocumentParses(), Doc(1, "bad")

        async def parse(version: int, text: str) -> str:
            await asyncio.sleep(0.005)
            if text == "bad":
                raise ValueError("unparseable")
            return text

        failing = asyncio.ensure_future(parses.get("u", doc.current, parse))
        await asyncio.sleep(0.001)
        doc.type("!")
        following = asyncio.ensure_future(parses.get("u", doc.current, parse))
        try:
            await failing
        except ValueError:
            pass
        else:
            raise AssertionError("the failed parse answered")
        assert await following == "bad!"

    asyncio.run(body())


def test_a_cancelled_request_does_not_cancel_the_shared_parse() -> None:
    async def body() -> None:
        parses, doc = DocumentParses(), Doc(1, "t")
        started = asyncio.Event()

        async def parse(version: int, text: str) -> str:
            started.set()
            await asyncio.sleep(0.02)
            return "done"

        first = asyncio.ensure_future(parses.get("u", doc.current, parse))
        await started.wait()
        second = asyncio.ensure_future(parses.get("u", doc.current, parse))
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
