"""The LSP server: wiring and lifecycle (pygls 2, stdio or TCP).

* ``initialize``: one engine per workspace folder (settings = files < env <
  ``initializationOptions``), stores opened before answering so every request after it works;
  a folder another agentic-lsp process owns is bridged to it instead (:mod:`.owner_bridge`);
  ``initialized`` starts the background index, the file watchers and the progress reports.
* ``shutdown`` closes the engines (indexing cancelled, store closed); ``exit`` ends the process
  (status 0 after a shutdown, 1 without). End of input counts as exit.
* Unknown requests answer MethodNotFound, malformed ones InvalidParams/InvalidRequest
  (see :mod:`agentic_lsp.lsp.rpc`); one failing handler only fails its own request.
* Server errors outside requests are logged to stderr (never stdout), not shown as pop-ups.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from collections.abc import Awaitable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types as lsp
from pygls.exceptions import FeatureRequestError, JsonRpcException, JsonRpcInternalError
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer

from agentic_lsp import __version__
from agentic_lsp.changes.editor_review import bind_review
from agentic_lsp.errors import AgenticError, WorkspaceError
from agentic_lsp.heap import settle_heap
from agentic_lsp.index.progress import IndexSummary
from agentic_lsp.lsp import advertised, bridged_features, code_actions, commands, features, wire
from agentic_lsp.lsp.convert import uri_path
from agentic_lsp.lsp.editor_navigation import attach as lend_editor_servers
from agentic_lsp.lsp.editor_work import DocumentParses, EditorWork
from agentic_lsp.lsp.framing import MAX_FRAME_BYTES, FrameReader, InvalidStart, serve_frames
from agentic_lsp.lsp.notifications import ProgressReporter
from agentic_lsp.lsp.owner_bridge import BridgedFolder, OwnerBridge, OwnerLink
from agentic_lsp.lsp.review import Review
from agentic_lsp.lsp.rpc import AgenticProtocol, invalid_params, request_failed
from agentic_lsp.lsp.workspaces import Root, Workspaces
from agentic_lsp.workflows.events import RunEvent

if TYPE_CHECKING:
    from agentic_lsp.engine import Engine

log = logging.getLogger(__name__)

CLOSE_WAIT_S = 2.0
EDITOR_SWITCH_INTERVAL_S = 0.001


class EnginePublisher(Protocol):
    """Serves a folder's engine to other clients (MCP over localhost HTTP: the ``serve``
    command passes :class:`agentic_lsp.mcp.host.McpHost`). ``publish`` returns a handle with a
    ``url``, or ``None`` when another process already serves the folder."""

    async def publish(self, path: Path, engine: Engine) -> Any | None: ...

    async def withdraw(self, path: Path) -> None: ...


class AgenticLanguageServer(LanguageServer):
    def __init__(self, default_root: Path | None = None, publisher: EnginePublisher | None = None,
                 owners: OwnerLink | None = None) -> None:  # fmt: skip
        super().__init__(
            "agentic-lsp",
            __version__,
            protocol_cls=AgenticProtocol,
            text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
        )
        self.default_root = default_root
        self.workspaces = Workspaces(self)
        self.editor = EditorWork()  # the standard features' own threads (see editor_work)
        self.parses = DocumentParses()  # each open document's latest symbols
        self.outlines = DocumentParses()  # ... and its documentSymbol answer
        self.oversized: set[str] = set()  # open documents neither parsed nor indexed (too big)
        self.reporter = ProgressReporter(self)
        self.review = Review(self)
        self.publisher = publisher
        self.owners = OwnerBridge(self, owners)
        self.runs: dict[str, Root] = {}
        self.init_options: dict[str, Any] = {}
        self.shutdown_requested = False
        self._index_tasks: dict[Path, asyncio.Task[IndexSummary | None]] = {}
        self._mcp_tasks: dict[Path, asyncio.Task[None]] = {}
        self.closing = False

    def report_server_error(self, error: Exception, source: Any) -> None:
        level = logging.DEBUG if source is FeatureRequestError else logging.WARNING
        log.log(level, "%s: %s", getattr(source, "__name__", source), error)

    # -- roots --------------------------------------------------------------------------------

    async def open_root(self, folder: Path) -> Root | BridgedFolder:
        """The folder's engine, opened here; or a bridge when another process owns it."""
        root = self.workspaces.add(folder, self.init_options)
        bridged = await self.owners.open(root)
        if bridged is None:
            return root
        self.workspaces.bridge(bridged)
        return bridged

    async def start_root(self, root: Root | BridgedFolder) -> None:
        if isinstance(root, BridgedFolder):
            return self.owners.announce(root)
        await root.engine.start(index=False)
        root.engine.editor_review = bind_review(self.review, root)
        lend_editor_servers(self, root)  # the editor's own language servers, when it lends them
        self.reporter.watch_index(root)
        root.engine.changes.listeners.append(
            lambda kind, cs: self.reporter.threadsafe(self._changeset_changed, root, kind, cs)
        )
        self.review.watch(root)
        self.warn_ignored(root)
        self.start_indexing(root)
        await self.review.publish(root)
        if self.publisher is not None:
            self._mcp_tasks[root.path] = asyncio.ensure_future(self._publish(root, self.publisher))

    def warn_ignored(self, root: Root) -> None:
        """Tell the user which of the folder's own settings were ignored (untrusted folder)."""
        loaded = root.engine.loaded
        if not loaded.ignored:
            return
        for warning in loaded.warnings:
            log.warning("%s", warning)
        self.reporter.event("settings_ignored", wire.SettingsIgnored.from_loaded(loaded),
                            root=str(root.path))  # fmt: skip
        keys = ", ".join(item.key for item in loaded.ignored)
        text = (f"agentic-lsp: {root.path} is not trusted, so its settings file may not set "
                f"{keys}; they were ignored. Run the 'agentic.trustWorkspace' command (or "
                f"`agentic-lsp trust {root.path}`) if you trust this repository.")  # fmt: skip
        try:
            self.window_show_message(lsp.ShowMessageParams(lsp.MessageType.Warning, text))
        except Exception:
            log.exception("could not show the ignored-settings warning")

    async def reload_root(self, root: Root) -> Root | BridgedFolder:
        """Serve ``root`` again with freshly loaded settings (after its trust changed). The
        settings are checked first: a broken settings file leaves the folder as it was."""
        self.workspaces.check_settings(root.path, self.init_options)
        self.workspaces.remove(root.path)
        await self.close_root(root)
        fresh = await self.open_root(root.path)
        await self.start_root(fresh)
        return fresh

    async def _publish(self, root: Root, publisher: EnginePublisher) -> None:
        try:
            handle = await publisher.publish(root.path, root.engine)
        except Exception as exc:  # MCP is an extra: the editor's features go on without it
            log.warning("could not serve %s over MCP: %s", root.path, exc)
            return
        if handle is not None:
            self.reporter.event("mcp_endpoint", {"url": handle.url}, root=str(root.path))

    def _changeset_changed(self, root: Root, kind: str, changeset: Any) -> None:
        self.reporter.event(f"changeset_{kind}", {"changesetId": changeset.id,
                            "status": changeset.status}, root=str(root.path))  # fmt: skip
        self.review.schedule_publish(root)

    def start_indexing(self, root: Root) -> asyncio.Task[IndexSummary | None]:
        """The running index sync of ``root``, or a new one (one at a time per folder)."""
        task = self._index_tasks.get(root.path)
        if task is None or task.done():
            task = asyncio.ensure_future(self._index(root))
            self._index_tasks[root.path] = task
        return task

    async def _index(self, root: Root) -> IndexSummary | None:
        try:
            return await root.engine.reindex()
        except Exception as exc:
            log.exception("indexing %s failed", root.path)
            self.reporter.index_failed(root, f"indexing failed: {exc}")
            return None

    def run_root(self, run_id: str) -> Root:
        root = self.runs.get(run_id)
        if root is None:
            raise AgenticError(f"no run {run_id!r} in this session", "start one with runWorkflow")
        return root

    def run_event(self, root: Root, token: str, event: RunEvent) -> None:
        self.reporter.run_event(root, token, event)
        if event.kind in {"changeset_ready", "run_finished"}:
            self.review.schedule_publish(root)

    async def close_root(self, root: Root) -> None:
        """Stop serving one folder: its indexing, watchers and engine (store closed)."""
        root.engine.editor_review = None
        root.engine.cancel_indexing()
        publishing = self._mcp_tasks.pop(root.path, None)
        if publishing is not None and not publishing.done():
            await asyncio.wait([publishing], timeout=CLOSE_WAIT_S)
        if self.publisher is not None:
            await self.publisher.withdraw(root.path)
        task = self._index_tasks.pop(root.path, None)
        if task is not None and not task.done():
            # indexing stops at its next batch; a model still loading is not waited for
            await asyncio.wait([task], timeout=CLOSE_WAIT_S)
        await self.review.forget(root)
        try:
            await root.engine.close()
        except Exception:
            log.exception("closing the engine of %s failed", root.path)

    async def close(self) -> None:
        if self.closing:
            return
        self.closing = True
        roots = list(self.workspaces.roots.values())
        await asyncio.gather(*(self.close_root(root) for root in roots))
        await self.workspaces.close()
        self.parses.close()
        self.outlines.close()
        self.editor.close()

    # -- transports -------------------------------------------------------------------------

    def run_stdio(self, max_frame: int = MAX_FRAME_BYTES) -> int:
        """Serve on stdin/stdout until exit or end of input; returns the exit status."""
        stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
        sys.stdout = sys.stderr  # a stray print() must never corrupt the protocol stream
        self.protocol.set_writer(StdoutWriter(stdout))
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lsp-stdin")

        async def serve(stop: threading.Event) -> None:
            loop = asyncio.get_running_loop()

            def read(n: int) -> Awaitable[bytes]:
                return loop.run_in_executor(executor, stdin.read1, n)  # type: ignore[union-attr]

            frames = FrameReader(read, max_frame=max_frame)
            await serve_frames(stop, frames, self.protocol, self.report_server_error)

        return self._run(serve)

    def run_tcp(self, host: str, port: int, max_frame: int = MAX_FRAME_BYTES) -> int:
        """Serve one client on ``host:port``; returns the exit status. A connection whose first
        bytes are not an LSP frame (an HTTP request from a browser, say) is closed without
        anything dispatched, and so is any other connection while the client is connected."""

        async def serve(stop: threading.Event) -> None:
            done = asyncio.Event()
            client: list[asyncio.StreamWriter] = []

            async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
                peer = writer.get_extra_info("peername")
                if client:
                    log.warning("refused a second connection from %s", peer)
                    writer.close()
                    return

                def first() -> None:
                    if client:
                        raise InvalidStart("another client is connected")
                    client.append(writer)
                    self.protocol.set_writer(writer)

                frames = FrameReader(reader.read, max_frame=max_frame, strict=True)
                try:
                    await serve_frames(stop, frames, self.protocol, self.report_server_error, first)
                except (InvalidStart, ConnectionError) as exc:
                    log.warning("dropped a connection from %s: %s", peer, exc)
                finally:
                    if client and client[0] is writer:
                        done.set()
                    else:
                        writer.close()

            server = await asyncio.start_server(connection, host, port)
            address = server.sockets[0].getsockname()
            log.info("agentic-lsp listening on %s:%s", address[0], address[1])
            print(f"agentic-lsp listening on {address[0]}:{address[1]}", flush=True)
            async with server:
                await done.wait()

        return self._run(serve)

    def _run(self, body: Any) -> int:
        # Indexing (torch) must not take every core from the editor's requests; an explicit
        # OMP_NUM_THREADS wins. Set before the model is imported, which happens lazily.
        os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 2) - 1)))
        # A request thread waiting for the GIL gets it within 1 ms of a busy index thread
        # (not 5): editor requests hand off between threads several times each.
        sys.setswitchinterval(EDITOR_SWITCH_INTERVAL_S)
        # Modules, classes and functions imported so far live as long as the process: the
        # cyclic collector's full passes (GIL held) need not rescan them.
        settle_heap(collect=False)
        stop = threading.Event()
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)

        async def main() -> None:
            try:
                await body(stop)
            finally:
                await self.close()

        status = 1
        try:
            loop.run_until_complete(main())
            status = 0 if self.shutdown_requested else 1
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 1
        except KeyboardInterrupt:
            status = 130
        finally:
            stop.set()
        return status


def _folders(params: lsp.InitializeParams, default: Path | None) -> list[Path]:
    found = [uri_path(f.uri) for f in params.workspace_folders or []]
    if not found and params.root_uri:
        found = [uri_path(params.root_uri)]
    if not found and params.root_path:
        found = [Path(params.root_path)]
    if not found and default is not None:
        found = [default]
    folders = [path for path in found if path is not None]
    if not folders:
        raise WorkspaceError("no workspace folder given", "open a folder, or pass --workspace")
    return folders


def _expected_errors(record: logging.LogRecord) -> bool:
    """Keep pygls' tracebacks for real failures, not for errors we answer on purpose."""
    exc = record.exc_info[1] if record.exc_info else None
    return not (isinstance(exc, JsonRpcException) and not isinstance(exc, JsonRpcInternalError))


def create_server(default_root: Path | None = None, publisher: EnginePublisher | None = None,
                  owners: OwnerLink | None = None) -> AgenticLanguageServer:  # fmt: skip
    # pygls logs every message at INFO: far too chatty (and slow) for a server's stderr.
    pygls_log = logging.getLogger("pygls")
    pygls_log.setLevel(max(logging.WARNING, logging.getLogger().level))
    logging.getLogger("pygls.protocol.json_rpc").addFilter(_expected_errors)
    server = AgenticLanguageServer(default_root, publisher, owners)

    @server.feature(lsp.INITIALIZE)
    async def initialize(ls: AgenticLanguageServer, params: lsp.InitializeParams) -> None:
        options = params.initialization_options
        options = None if options == [] else options  # an empty Lua table, from Neovim
        if options is not None and not isinstance(options, Mapping):
            raise invalid_params("initializationOptions must be an object of settings")
        ls.init_options = dict(options or {})
        window = params.capabilities.window
        ls.reporter.attach(asyncio.get_running_loop(), bool(window and window.work_done_progress))
        try:
            for folder in _folders(params, ls.default_root):
                await ls.open_root(folder)
        except AgenticError as exc:
            raise request_failed(exc) from exc
        advertised.advertise_only(ls)  # lsp.standard_features, before the capabilities

    @server.feature(lsp.INITIALIZED)
    async def initialized(ls: AgenticLanguageServer, params: lsp.InitializedParams) -> None:
        opened: list[Root | BridgedFolder] = [*ls.workspaces.roots.values()]
        for root in [*opened, *ls.workspaces.bridged.values()]:
            await ls.start_root(root)

    @server.feature(lsp.SHUTDOWN)
    async def shutdown(ls: AgenticLanguageServer, params: None) -> None:
        ls.shutdown_requested = True
        await ls.close()

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def folders_changed(
        ls: AgenticLanguageServer, params: lsp.DidChangeWorkspaceFoldersParams
    ) -> None:
        for folder in params.event.removed:
            path = uri_path(folder.uri)
            root = ls.workspaces.remove(path) if path is not None else None
            if root is not None:
                await ls.close_root(root)
        for folder in params.event.added:
            path = uri_path(folder.uri)
            if path is not None and not (
                ls.workspaces.find(path) or ls.workspaces.bridged_at(path)
            ):
                await ls.start_root(await ls.open_root(path))

    @server.feature(lsp.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    async def progress_cancelled(
        ls: AgenticLanguageServer, params: lsp.WorkDoneProgressCancelParams
    ) -> None:
        ls.reporter.cancel(params.token)

    features.register(server)
    bridged_features.register(server)  # after features: it wraps their handlers
    code_actions.register(server)
    commands.register(server)
    return server
