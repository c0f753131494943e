"""How MCP tools reach the engine, and how engine errors become tool errors.

The engine comes from a *resolver* because the process that serves MCP may create it after the
server starts (the LSP server builds its engine on ``initialize``). Errors the user can act on
(:class:`~agentic_lsp.errors.AgenticError`, bad arguments) become tool errors carrying the message
and the fix; anything else is logged with its traceback and reported as an internal error, so
one failing call never takes the server down.
"""

from __future__ import annotations

import functools
import inspect
import logging
import re
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar

from mcp.server.mcpserver.exceptions import ToolError

from agentic_lsp.errors import AgenticError, IndexUnavailable
from agentic_lsp.mcp.render import DEFAULT_MAX_CHARS

if TYPE_CHECKING:
    from agentic_lsp.engine import Engine

log = logging.getLogger(__name__)

EngineResolver = Callable[[], "Engine | Awaitable[Engine]"]
_F = TypeVar("_F", bound=Callable[..., Awaitable[Any]])
# The engine of the workspace root a tool call is about, set around the call by a server that
# serves several roots (``agentic_lsp.mcp.roots``); unset, the resolver decides.
selected_engine: ContextVar[Engine | None] = ContextVar("agentic_selected_engine", default=None)
_UNSAFE = re.compile(r"[\x00-\x1f\x7f]+")


class EngineAccess:
    """The resolver plus the reply budget shared by every tool of one server."""

    def __init__(self, resolver: EngineResolver, *, max_chars: int = DEFAULT_MAX_CHARS) -> None:
        self._resolver = resolver
        self.max_chars = max_chars

    async def resolve(self) -> Engine:
        """The engine, whether or not its index is open yet."""
        selected = selected_engine.get()
        if selected is not None:
            return selected
        value = self._resolver()
        if inspect.isawaitable(value):
            value = await value
        return value

    async def engine(self) -> Engine:
        """The engine, once its index is open (raises IndexUnavailable until then)."""
        value = await self.resolve()
        if not value.is_open:
            raise IndexUnavailable(
                "the workspace index is still opening", "try again in a few seconds"
            )
        return value


def tool_errors(fn: _F) -> _F:
    """Turn expected failures into tool errors the model can read and act on."""

    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return await fn(*args, **kwargs)
        except ToolError:
            raise
        except AgenticError as exc:
            raise ToolError(str(exc)) from None
        except ValueError as exc:
            raise ToolError(f"invalid argument: {exc}") from None
        except Exception as exc:
            log.exception("MCP tool %s failed", fn.__name__)
            raise ToolError(
                f"internal error in {fn.__name__}: {type(exc).__name__}: {exc}"
            ) from None

    return wrapper  # type: ignore[return-value]


def clean(text: str, limit: int = 200) -> str:
    """One safe line of repository-derived text (a path, a symbol name) for server prose."""
    flat = _UNSAFE.sub(" ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
