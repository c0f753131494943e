"""Language servers of one workspace, one per language, for precise navigation.

* **Configured, never downloaded.** A server's command comes from the ``[navigation]``
  settings (user-only: it runs a program); :mod:`~agentic_lsp.navigation.server_commands` holds
  the table of servers and finds a command's program (``PATH``, the interpreter's ``bin``, the
  language-servers folder; never the workspace). When it is in none, the language has no server.
* **One server, several languages.** ``python`` is jedi-language-server's; ``typescript``,
  ``tsx`` and ``javascript`` (``.jsx`` too) share one typescript-language-server; ``c`` and
  ``cpp`` (headers as the index names them: ``.h`` C, ``.hpp`` C++) one clangd; ``go`` is
  gopls'. Each file is sent with its own ``languageId``. The TypeScript server is pinned to the
  ``tsserver`` installed beside it, never a workspace's ``node_modules/typescript``.
* **Lazy.** A server starts on the first question about a file of its language, initialized
  with the workspace root; it stops after ``idle_s`` without a question and at :meth:`close`.
* **Current text.** Before each question the engine's unsaved buffers of that language are
  opened in the server (``didOpen``, then ``didChange`` with the whole text when a buffer
  changes, ``didClose`` when it is gone), so answers see what the editor holds.
* **Bounded.** Every request has ``timeout_s``; a server that dies is restarted on the next
  question, at most :data:`MAX_RESTARTS` times, then the language has no server any more.

Positions here are the engine's: 1-based lines, 0-based character columns. They are turned into
LSP's 0-based UTF-16 positions (and back) with the text of the file they are in.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from agentic_lsp.index.parsing.languages import language_for_path
from agentic_lsp.navigation.lsp_client import LspClient, ServerError, ServerGone
from agentic_lsp.navigation.positions import char_col, utf16_col
from agentic_lsp.navigation.server_commands import (
    INSTALL_HINTS,
    SERVER_OF_LANGUAGE,
    configured_commands,
    language_id,
    resolve_command,
)

if TYPE_CHECKING:
    from agentic_lsp.config import NavigationSettings

MAX_RESTARTS = 3


class ServerFailed(Exception):
    """No answer from a language server; the message says why (for the fallback's note)."""


@dataclass(frozen=True)
class Location:
    """A place a server pointed at: workspace-relative ``path``, 1-based ``line``, 0-based
    character columns ``[col, end_col)``."""

    path: str
    line: int
    col: int
    end_col: int


def initialization_options(server: str, command: list[str]) -> dict[str, Any] | None:
    """typescript-language-server: one semantic ``tsserver`` (no syntax-only server, whose
    answers while the project loads are partial: a reference list of the declaration alone),
    the one installed beside it (a workspace's own ``node_modules/typescript`` is never run);
    ``None`` for the others."""
    if server != "typescript":
        return None
    options: dict[str, Any] = {"useSyntaxServer": "never"}
    program = Path(os.path.realpath(command[0]))
    for folder in program.parents:
        if folder.name == "node_modules":
            tsserver = folder / "typescript" / "lib" / "tsserver.js"
            if tsserver.is_file():
                options["path"] = str(tsserver)
                break
    return {"tsserver": options}


class ManagedServer:
    """One server (answering for one or more languages): started on demand, restarted a few
    times, stopped when idle."""

    def __init__(
        self, root: Path, language: str, command: list[str], settings: NavigationSettings
    ) -> None:
        self.root = root
        self.language = language  # the server's key: "python", "typescript", "c" or "go"
        self.command = command
        self.name = Path(command[0]).name
        self.timeout = settings.timeout_s
        self.idle_s = settings.idle_s
        self.starts = 0
        self.deaths = 0  # exits and failed starts, not idle stops
        self.client: LspClient | None = None
        self.capabilities: dict[str, Any] = {}  # the server's, from its initialize answer
        self._opened: dict[str, tuple[int, str]] = {}  # rel path -> (version, text sent)
        self._lock = asyncio.Lock()
        self._idle: asyncio.TimerHandle | None = None
        self._stopping: asyncio.Task[None] | None = None
        self.given_up = ""

    async def ask(
        self, method: str, rel: str, line: int, col: int, buffers: Mapping[str, str], **extra: Any
    ) -> list[Location]:
        """``method`` (``textDocument/definition`` or ``/references``) at ``rel:line:col``."""
        result = await self.request(method, rel, line, col, buffers, **extra)
        return await asyncio.to_thread(self._locations, result, buffers)

    async def request(
        self, method: str, rel: str, line: int, col: int, buffers: Mapping[str, str], **extra: Any
    ) -> Any:
        """The server's raw answer to ``method`` at ``rel:line:col`` (``extra`` joins the
        params); raises :class:`ServerFailed` saying why there is none."""
        async with self._lock:  # one question at a time keeps the document sync simple
            client = await self._ensure()
            try:
                text = buffers.get(rel)
                if text is None:
                    text = await asyncio.to_thread(_read_text, self.root / rel)
                await self._sync(client, {**buffers, rel: text})  # the asked file is open too
                line_text = _line(text, line)
                position = {"line": line - 1, "character": utf16_col(line_text, col)}
                params = {"textDocument": {"uri": (self.root / rel).as_uri()}, "position": position}
                return await client.request(method, {**params, **extra}, self.timeout)
            except ServerGone as exc:
                raise ServerFailed(str(exc)) from None
            except ServerError as exc:
                raise ServerFailed(str(exc)) from None
            except TimeoutError:
                raise ServerFailed(f"{self.name} gave no answer in {self.timeout:g}s") from None
            finally:
                self._arm_idle()

    async def start(self) -> None:
        """Start the server now (when it is not running), so that its ``capabilities`` are
        known; raises :class:`ServerFailed` saying why it cannot."""
        async with self._lock:
            try:
                await self._ensure()
            finally:
                self._arm_idle()

    async def _ensure(self) -> LspClient:
        if self.client is not None and self.client.alive:
            return self.client
        if self.client is not None:  # it died: restart, a few times (an idle stop is no death)
            self.deaths += 1
            await self.client.stop(0.5)
            self.client = None
        if self.given_up:
            raise ServerFailed(self.given_up)
        if self.deaths > MAX_RESTARTS:
            self.given_up = f"{self.name} died {self.deaths} times; not restarted any more"
            raise ServerFailed(self.given_up)
        self.starts += 1
        self._opened.clear()
        try:
            client = await LspClient.start(self.command, self.root, self.name)
        except OSError as exc:
            raise ServerFailed(f"cannot start {self.name}: {exc}") from None
        try:
            options = initialization_options(self.language, self.command)
            answer = await client.initialize(self.root, self.timeout, options)
        except (ServerGone, ServerError, TimeoutError) as exc:
            self.deaths += 1
            await client.stop(0.5)
            raise ServerFailed(f"{self.name} did not initialize: {exc or 'timed out'}") from None
        self.client = client
        capabilities = answer.get("capabilities")
        self.capabilities = capabilities if isinstance(capabilities, dict) else {}
        return client

    async def _sync(self, client: LspClient, buffers: Mapping[str, str]) -> None:
        server = self.language
        mine = {
            p: t
            for p, t in buffers.items()
            if SERVER_OF_LANGUAGE.get(language_for_path(p) or "") == server
        }
        for rel in [p for p in self._opened if p not in mine]:
            del self._opened[rel]
            await client.notify("textDocument/didClose", {"textDocument": {"uri": self._uri(rel)}})
        for rel, text in mine.items():
            sent = self._opened.get(rel)
            if sent is None:
                document = {"uri": self._uri(rel), "languageId": language_id(rel), "version": 1}
                await client.notify(
                    "textDocument/didOpen", {"textDocument": {**document, "text": text}}
                )
                self._opened[rel] = (1, text)
            elif sent[1] != text:
                version = sent[0] + 1
                document = {"uri": self._uri(rel), "version": version}
                changes = [{"text": text}]
                await client.notify(
                    "textDocument/didChange", {"textDocument": document, "contentChanges": changes}
                )
                self._opened[rel] = (version, text)

    def _uri(self, rel: str) -> str:
        return (self.root / rel).as_uri()

    def _locations(self, result: Any, buffers: Mapping[str, str]) -> list[Location]:
        """The server's ``Location``s inside the workspace, in the engine's positions (blocking:
        reads the files to count UTF-16 units)."""
        items = result if isinstance(result, list) else [result] if result else []
        texts: dict[str, list[str]] = {}
        found: list[Location] = []
        for item in items:
            uri = item.get("uri") or item.get("targetUri")
            where = item.get("range") or item.get("targetSelectionRange")
            rel = self.relative(uri) if isinstance(uri, str) else None
            if rel is None or not isinstance(where, dict):
                continue  # outside the workspace (the standard library, site-packages)
            if rel not in texts:
                text = buffers.get(rel)
                texts[rel] = (text if text is not None else _read_text(self.root / rel)).split("\n")
            try:
                start, end = where["start"], where["end"]
                row = texts[rel][start["line"]] if start["line"] < len(texts[rel]) else ""
                col = char_col(row, start["character"])
                same_line = end["line"] == start["line"]
                end_col = char_col(row, end["character"]) if same_line else len(row)
            except (KeyError, TypeError):
                continue  # a malformed range: skipped, not a crash
            found.append(Location(rel, start["line"] + 1, col, end_col))
        return found

    def relative(self, uri: str) -> str | None:
        """A ``file:`` URI as a workspace-relative path; ``None`` outside the workspace."""
        parsed = urlparse(uri)
        if parsed.scheme != "file":
            return None
        path = Path(unquote(parsed.path))
        try:
            return path.resolve().relative_to(self.root).as_posix()
        except ValueError:
            return None

    def _arm_idle(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
        loop = asyncio.get_running_loop()
        self._idle = loop.call_later(self.idle_s, self._stop_when_idle)

    def _stop_when_idle(self) -> None:
        self._stopping = asyncio.get_running_loop().create_task(self.stop())  # keep a reference

    async def stop(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        async with self._lock:
            client, self.client = self.client, None
            self._opened.clear()
            if client is not None:
                await client.stop()


class ServerPool:
    """The workspace's language servers (see the module rules)."""

    def __init__(
        self, root: Path, settings: NavigationSettings, buffers: Callable[[], dict[str, str]]
    ) -> None:
        self.root = root.resolve()
        self.settings = settings
        self._buffers = buffers
        self._servers: dict[str, ManagedServer] = {}
        self._missing: dict[str, str] = {}  # language -> why it has no server

    def server_for(self, rel: str) -> tuple[ManagedServer | None, str]:
        """The server for ``rel``'s language, or ``None`` and why there is none."""
        if not self.settings.enabled:
            return None, "navigation.enabled is off"
        known = language_for_path(rel)
        if known is None:
            return None, f"no language known for {rel}"
        language = SERVER_OF_LANGUAGE.get(known)
        if language is None:
            return None, f"no language server is known for {known}"
        if language in self._servers:
            return self._servers[language], ""
        if language in self._missing:
            return None, self._missing[language]
        command = configured_commands(self.settings).get(language)
        if command is None:
            return None, f"no language server is configured for {language}"
        resolved = resolve_command(command)
        if resolved is None:
            hint = INSTALL_HINTS.get(language, "install it")
            why = f"{command[0]} is not installed ({hint})"
            self._missing[language] = why
            return None, why
        server = self._servers[language] = ManagedServer(
            self.root, language, resolved, self.settings
        )
        return server, ""

    async def ask(
        self, method: str, rel: str, line: int, col: int, **extra: Any
    ) -> tuple[str, list[Location]]:
        """``(server name, locations)``; raises :class:`ServerFailed` saying why not."""
        server, why = self.server_for(rel)
        if server is None:
            raise ServerFailed(why)
        return server.name, await server.ask(method, rel, line, col, self._buffers(), **extra)

    async def request(
        self, method: str, rel: str, line: int, col: int, **extra: Any
    ) -> tuple[ManagedServer, Any]:
        """``(server, its raw answer)`` to ``method`` at ``rel:line:col``; raises
        :class:`ServerFailed` saying why there is none."""
        server, why = self.server_for(rel)
        if server is None:
            raise ServerFailed(why)
        return server, await server.request(method, rel, line, col, self._buffers(), **extra)

    def buffers(self) -> dict[str, str]:
        """The engine's unsaved buffers now, by workspace-relative path."""
        return self._buffers()

    async def close(self) -> None:
        servers, self._servers = list(self._servers.values()), {}
        await asyncio.gather(*(s.stop() for s in servers), return_exceptions=True)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _line(text: str, line: int) -> str:
    lines = text.split("\n")
    return lines[line - 1] if 1 <= line <= len(lines) else ""
