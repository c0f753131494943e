"""JSON-RPC robustness: bad input gets an error answer, never a crash or a silent hang.

* A request whose params do not match the method's schema is answered with InvalidParams
  naming the offending field (pygls alone would drop it and leave the client waiting).
* A request that is not JSON-RPC 2.0 (wrong or missing ``jsonrpc``, not an object), has no
  ``method`` (and is no response) or a ``method`` that is not a string is answered with
  InvalidRequest when it carries a usable id, otherwise logged and dropped.
* Before ``initialize``, requests are answered ServerNotInitialized and notifications dropped
  (``exit`` excepted), as the specification asks.
* After ``shutdown``, requests are answered InvalidRequest and notifications dropped (pygls would
  drop both, leaving the client waiting); ``exit`` then ends the process with status 0 even while
  the shutdown's own cleanup is still running.
* ``workspace/executeCommand`` runs the command as a task of the request itself, so
  ``$/cancelRequest`` reaches it (pygls' generator-based dispatch would answer "cancelled"
  while the command kept running).
* Engine errors (:class:`~agentic_lsp.errors.AgenticError`) become RequestFailed errors with the
  hint in ``data``; work in threads is told to stop when its request is cancelled.
* A handler may return :class:`RawResult`, a result already encoded as JSON text (in a worker
  thread): it is written as is, so a big answer costs the event loop no encoding.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import attrs
import cattrs
from lsprotocol import types as lsp
from pydantic import BaseModel, ValidationError
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
    JsonRpcMethodNotFound,
)
from pygls.protocol import LanguageServerProtocol, lsp_method

from agentic_lsp.errors import AgenticError, StaleChangeset

log = logging.getLogger(__name__)

T = TypeVar("T")
Model = TypeVar("Model", bound=BaseModel)

REQUEST_FAILED = -32803
INVALID_REQUEST = -32600
SERVER_NOT_INITIALIZED = -32002


@attrs.define
class UnreadableRequest:
    """A request pygls could not structure: answered with an error instead of dropped."""

    id: int | str
    method: str
    code: int
    message: str
    jsonrpc: str = "2.0"


@attrs.frozen
class RawResult:
    """A request's result as JSON text (an array or object), encoded off the event loop."""

    json: str


@attrs.define
class DroppedMessage:
    """A message that is neither request, notification nor response, and has no id to answer."""

    reason: str


_WRITES: set[asyncio.Future[Any]] = set()  # raw answers still being written (async writers)

CANCEL_WAIT_TURNS = 100  # loop turns a cancel waits for its request's task to start


class AgenticProtocol(LanguageServerProtocol):
    initialize_seen = False
    shutdown_seen = False

    def structure_message(self, data: dict[str, Any]) -> Any:
        if isinstance(data, dict) and "jsonrpc" in data:
            why = _invalid_request(data)
            if why:
                if _answerable(data):
                    return UnreadableRequest(data["id"], "", INVALID_REQUEST, why)
                return DroppedMessage(why)
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if not (_answerable(data) and isinstance(data.get("method"), str)):
                raise
            method = data["method"]
            if method not in self.fm.features and method not in self.fm.builtin_features:
                error = JsonRpcMethodNotFound.of(method)
                return UnreadableRequest(data["id"], method, error.code, error.message)
            detail = _describe_structure_error(exc.__cause__) or exc.message
            message = f"invalid params for {method}: {detail}"
            return UnreadableRequest(data["id"], method, JsonRpcInvalidParams.CODE, message)

    def _handle_cancel_notification(self, msg_id: Any, waited: int = 0) -> None:
        """Cancel a request, but never before its task has started: a task cancelled before
        its first step never runs its handler, so work it would stop (an index sync the
        command joins) went on. Frames read in one chunk dispatch back to back, so the cancel
        can arrive that early; it waits a few loop turns for the request to start."""
        future = self._request_futures.get(msg_id)
        if (
            isinstance(future, asyncio.Task)
            and inspect.getcoroutinestate(future.get_coro()) == inspect.CORO_CREATED
            and waited < CANCEL_WAIT_TURNS
        ):
            asyncio.get_running_loop().call_soon(
                self._handle_cancel_notification, msg_id, waited + 1
            )
            return
        super()._handle_cancel_notification(msg_id)

    def _send_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        if error is not None or not isinstance(result, RawResult):
            super()._send_response(msg_id, result=result, error=error)
            return
        self._result_types.pop(msg_id, None)
        body = f'{{"id":{json.dumps(msg_id)},"jsonrpc":"2.0","result":{result.json}}}'
        if self.writer is None:
            log.error("no transport to answer request %r on", msg_id)
            return
        data = body.encode(self.CHARSET)
        if self._include_headers:
            header = (
                f"Content-Length: {len(data)}\r\n"
                f"Content-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n"
            )
            data = header.encode("ascii") + data
        written = self.writer.write(data)
        if inspect.isawaitable(written):  # an async writer (pygls' websocket transport)
            task = asyncio.ensure_future(written)
            _WRITES.add(task)
            task.add_done_callback(_WRITES.discard)

    def handle_message(self, message: Any) -> None:
        if isinstance(message, DroppedMessage):
            log.warning("dropping an invalid message: %s", message.reason)
            return
        if not self.initialize_seen and not self._before_initialize(message):
            return
        method = getattr(message, "method", None)
        if self.shutdown_seen and method != lsp.EXIT:
            request_id = getattr(message, "id", None)
            log.warning("%s after shutdown: refused", method or "a message")
            if method and request_id is not None:
                error = lsp.ResponseError(INVALID_REQUEST, f"{method}: the server is shutting down")
                self._send_response(request_id, error=error)
            return
        if method == lsp.SHUTDOWN and not isinstance(message, UnreadableRequest):
            self.shutdown_seen = True
        elif method == lsp.EXIT and self.shutdown_seen:
            self._shutdown = True  # pygls sets it only once the shutdown handler has returned
        if isinstance(message, UnreadableRequest):
            log.warning("rejected %s request %r: %s", message.method, message.id, message.message)
            self._send_response(message.id, error=lsp.ResponseError(message.code, message.message))
            return
        version = getattr(message, "jsonrpc", None)
        if version != self.VERSION:
            log.warning("dropping a message that is not JSON-RPC 2.0: %.200r", message)
            fields = message if isinstance(message, dict) else {
                "id": getattr(message, "id", None), "method": getattr(message, "method", None)
            }  # fmt: skip
            request_id = fields.get("id")
            if _answerable(fields) and fields.get("method") and request_id is not None:
                error = lsp.ResponseError(INVALID_REQUEST, 'expected "jsonrpc": "2.0"')
                self._send_response(request_id, error=error)
            return
        super().handle_message(message)

    def _before_initialize(self, message: Any) -> bool:
        """Whether a message that arrives before ``initialize`` is handled."""
        method = getattr(message, "method", None)
        if not isinstance(method, str) or not method or method == lsp.EXIT:
            return True
        if method == lsp.INITIALIZE:
            self.initialize_seen = not isinstance(message, UnreadableRequest)
            return True
        request_id = getattr(message, "id", None)
        if request_id is None:
            log.warning("dropping %s: the client has not sent initialize yet", method)
            return False
        error = lsp.ResponseError(SERVER_NOT_INITIALIZED, f"{method}: server not initialized")
        self._send_response(request_id, error=error)
        return False

    @lsp_method(lsp.WORKSPACE_EXECUTE_COMMAND)
    async def lsp_workspace__execute_command(  # type: ignore[override]
        self, params: lsp.ExecuteCommandParams
    ) -> Any:
        handler = self.fm.commands.get(params.command)
        if handler is None:
            known = ", ".join(sorted(self.fm.commands))
            raise JsonRpcInvalidParams(f"unknown command {params.command!r}; commands: {known}")
        arguments = params.arguments if params.arguments is not None else []
        if not isinstance(arguments, list | tuple):
            raise JsonRpcInvalidParams(f"{params.command}: arguments must be an array")
        return await handler(*arguments)


def _invalid_request(data: dict[str, Any]) -> str:
    """Why a JSON-RPC message is no request, notification or response ("" if it is one)."""
    if "method" in data:
        return "" if isinstance(data["method"], str) else '"method" must be a string'
    if "result" in data or "error" in data:
        return ""
    return 'a request needs a "method"'


def _answerable(data: Any) -> bool:
    return (
        isinstance(data, dict)
        and isinstance(data.get("id"), int | str)
        and not isinstance(data.get("id"), bool)
    )


def _describe_structure_error(cause: BaseException | None) -> str:
    if cause is None:
        return ""
    if isinstance(cause, cattrs.ClassValidationError | cattrs.IterableValidationError):
        try:
            return "; ".join(cattrs.transform_error(cause, path="params")[:5])
        except Exception:  # the description is best-effort, the error answer is not
            return str(cause)
    return str(cause)


# -- errors ---------------------------------------------------------------------------------------


def request_failed(exc: AgenticError) -> JsonRpcException:
    """An engine error as a JSON-RPC error: the message, and the hint (and kind) in ``data``."""
    data: dict[str, Any] = {"kind": type(exc).__name__, "hint": exc.hint}
    if isinstance(exc, StaleChangeset):
        data["kind"] = "stale"
    return JsonRpcException(message=str(exc), code=REQUEST_FAILED, data=data)


def invalid_params(message: str) -> JsonRpcInvalidParams:
    return JsonRpcInvalidParams(message)


Handler = Callable[..., Awaitable[T]]


def guarded(handler: Handler[T]) -> Handler[T]:
    """Answer engine errors as RequestFailed and unexpected ones as InternalError (logged)."""

    @functools.wraps(handler)
    async def wrapper(*args: Any, **kwargs: Any) -> T:
        try:
            return await handler(*args, **kwargs)
        except (JsonRpcException, asyncio.CancelledError):
            raise
        except AgenticError as exc:
            raise request_failed(exc) from exc
        except Exception as exc:
            log.exception("%s failed", handler.__name__)
            raise JsonRpcInternalError(f"{handler.__name__} failed: {exc}") from exc

    return wrapper


async def in_thread(fn: Callable[..., T], *args: Any) -> T:
    """Run ``fn(*args, cancel)`` in a worker thread; ``cancel()`` turns true once the request
    awaiting it is cancelled, so long loops can stop early."""
    stop = threading.Event()
    try:
        return await asyncio.to_thread(fn, *args, stop.is_set)
    except asyncio.CancelledError:
        stop.set()
        raise


# -- command arguments ----------------------------------------------------------------------------


def parse_args(command: str, model: type[Model], args: tuple[Any, ...], shape: str) -> Model:
    """The single object argument of ``command`` validated by ``model``; InvalidParams saying
    what is expected otherwise. An empty list stands for an empty object (Lua tables)."""
    if args and args[0] == []:
        args = ({}, *args[1:])
    if len(args) > 1 or (args and not isinstance(args[0], dict)):
        raise invalid_params(f"{command} expects one object argument: {shape}")
    try:
        return model.model_validate(args[0] if args else {})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'argument'}: {err['msg']}"
            for err in exc.errors()[:5]
        )
        raise invalid_params(f"{command}: {problems}; expected {shape}") from None


def method_not_found(method: str) -> JsonRpcMethodNotFound:
    return JsonRpcMethodNotFound.of(method)
