"""Which local folder a root URI names, and how a tool call picks its root."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agentic_lsp.errors import AgenticError
from agentic_lsp.mcp.roots import WorkspaceRoots, root_path


def test_root_path_accepts_local_folders_only(tmp_path: Path) -> None:
    folder = tmp_path / "a b"
    folder.mkdir()
    (tmp_path / "file.txt").write_text("x")
    assert root_path(folder.as_uri()) == folder.resolve()
    assert root_path(f"file://localhost{folder}") == folder.resolve()
    assert root_path((tmp_path / "file.txt").as_uri()) is None  # not a folder
    assert root_path((tmp_path / "missing").as_uri()) is None
    assert root_path(f"file://otherhost{folder}") is None
    assert root_path("https://example.com/repo") is None
    assert root_path("file:relative/path") is None


class FakeSession:
    def __init__(self, roots: list[Path] | None) -> None:
        self.roots = roots
        self.asked = 0
        self.client_capabilities = SimpleNamespace(roots=None if roots is None else object())

    async def send_request(self, request: Any, result_type: Any, metadata: Any = None) -> Any:
        self.asked += 1
        assert metadata.related_request_id == 7
        roots = [SimpleNamespace(uri=p.as_uri()) for p in self.roots or []]
        return SimpleNamespace(roots=[*roots, SimpleNamespace(uri="https://x/y")])


def make(tmp_path: Path, roots: list[Path] | None) -> tuple[WorkspaceRoots, Any, list[Path]]:
    opened: list[Path] = []

    async def open_root(path: Path) -> Any:
        opened.append(path)
        await asyncio.sleep(0.01)
        return f"engine:{path.name}"

    launch = tmp_path / "launch"
    launch.mkdir(exist_ok=True)
    served = WorkspaceRoots(launch, "engine:launch", open_root)  # type: ignore[arg-type]
    request = SimpleNamespace(session=FakeSession(roots), request_id=7)
    return served, request, opened


async def test_picks_by_argument_path_or_first_root(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "a" / "nested"
    b.mkdir(parents=True)
    served, request, opened = make(tmp_path, [a, b])
    assert await served.select(request, None, {}) == "engine:a"
    assert await served.select(request, None, {"path": str(b / "x.py")}) == "engine:nested"
    assert await served.select(request, None, {"file": str(a / "x.py")}) == "engine:a"
    assert await served.select(request, "nested", {}) == "engine:nested"
    assert await served.select(request, b.as_uri(), {"path": "rel.py"}) == "engine:nested"
    with pytest.raises(AgenticError, match="outside every workspace root"):
        await served.select(request, None, {"path": str(tmp_path / "other.py")})
    with pytest.raises(AgenticError, match="not a workspace root"):
        await served.select(request, str(tmp_path), {})
    assert opened == [a, b] and request.session.asked == 1  # asked once, opened once each
    served.changed()
    request.session.roots = [b]
    assert await served.select(request, None, {}) == "engine:nested"
    assert request.session.asked == 2


async def test_concurrent_first_calls_open_a_root_once(tmp_path: Path) -> None:
    a = tmp_path / "a"
    a.mkdir()
    served, request, opened = make(tmp_path, [a])
    engines = await asyncio.gather(*(served.select(request, None, {}) for _ in range(5)))
    assert engines == ["engine:a"] * 5 and opened == [a]


async def test_without_roots_everything_goes_to_the_launch_workspace(tmp_path: Path) -> None:
    served, request, opened = make(tmp_path, None)
    assert await served.select(request, None, {"path": "/etc/passwd"}) == "engine:launch"
    assert await served.select(request, str(tmp_path / "launch"), {}) == "engine:launch"
    with pytest.raises(AgenticError, match="not a workspace root"):
        await served.select(request, "elsewhere", {})
    assert opened == [] and request.session.asked == 0
