"""The chat-model factory: one LangChain ``BaseChatModel`` per agent role, from ``LLMSettings``.

Providers:

* ``ollama`` (default): :class:`OllamaChatModel`, a ``langchain_ollama.ChatOllama`` whose failures
  arrive as :class:`~agentic_lsp.errors.ProviderError` carrying the exact fix (``ollama serve``,
  ``ollama pull MODEL``). Connecting gives up after a few seconds and nothing is retried, so a
  dead server is reported at once rather than after ``timeout_s``.
* ``scripted``: :class:`~agentic_lsp.llm.scripted.ScriptedChatModel`, a labelled test double.
* ``llamacpp``: :class:`~agentic_lsp.llm.llamacpp.LlamaCppChatModel`, a local GGUF file.

Nodes call ``.invoke``/``.ainvoke``/``.stream`` as on any LangChain chat model.
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlparse

import httpx
import ollama
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_ollama import ChatOllama

from agentic_lsp.config import LLMSettings
from agentic_lsp.errors import ProviderError
from agentic_lsp.llm.llamacpp import LlamaCppChatModel, check_gguf
from agentic_lsp.llm.ollama_health import probe_ollama
from agentic_lsp.llm.scripted import SCRIPTED_DESCRIPTION, Script, ScriptedChatModel, load_script

CONNECT_TIMEOUT_S = 3.0
_SERVE_HINT = (
    "start it with `ollama serve` (install: https://ollama.com/download), or set "
    "OLLAMA_HOST / llm.ollama_host to where it runs"
)


def model_for_role(settings: LLMSettings, role: str = "default") -> str:
    """``llm.role_models[role]`` when set, else ``llm.model``."""
    return settings.role_models.get(role, settings.model)


def describe_provider(settings: LLMSettings, role: str = "default") -> str:
    """One line for logs and the UI, e.g. ``ollama qwen2.5-coder:7b at http://127.0.0.1:11434``."""
    if settings.provider == "scripted":
        return f"{SCRIPTED_DESCRIPTION} from {settings.script_path or '(no llm.script_path)'}"
    if settings.provider == "llamacpp":
        return f"llamacpp {settings.gguf_path or '(no llm.gguf_path)'}"
    return f"ollama {model_for_role(settings, role)} at {settings.ollama_host}"


class OllamaChatModel(ChatOllama):
    """``ChatOllama`` with failures translated into :class:`ProviderError` with the fix."""

    @contextmanager
    def _translated_errors(self) -> Iterator[None]:
        host = self.base_url or "the Ollama host"
        try:
            yield
        except ollama.ResponseError as exc:
            if exc.status_code == 404 and "not found" in str(exc.error):
                raise ProviderError(
                    f"model {self.model!r} is not available on {host} ({exc.error})",
                    f"run `ollama pull {self.model}` or set llm.model / llm.role_models "
                    "to a model you have (`ollama list`)",
                ) from None
            status = f"HTTP {exc.status_code}" if exc.status_code > 0 else "an error"
            raise ProviderError(
                f"Ollama at {host} answered {status}: {exc.error}",
                "check the server's log (`journalctl -u ollama` or the `ollama serve` output)",
            ) from None
        except httpx.ConnectTimeout:
            raise ProviderError(
                f"Ollama is not reachable at {host} (no answer within {CONNECT_TIMEOUT_S:g} s)",
                _SERVE_HINT,
            ) from None
        except httpx.TimeoutException as exc:
            raise ProviderError(
                f"Ollama at {host} did not answer in time ({type(exc).__name__})",
                "raise llm.timeout_s, pick a smaller model, or check `ollama ps`",
            ) from None
        except (httpx.ConnectError, ConnectionError) as exc:
            raise ProviderError(
                f"Ollama is not reachable at {host} ({type(exc).__name__})", _SERVE_HINT
            ) from None
        except httpx.HTTPError as exc:
            raise ProviderError(
                f"lost the connection to Ollama at {host} ({type(exc).__name__}: {exc})",
                "retry; if it persists, check the `ollama serve` output",
            ) from None

    def describe(self) -> str:
        return f"ollama {self.model} at {self.base_url}"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        with self._translated_errors():
            return super()._generate(messages, stop, run_manager, **kwargs)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        with self._translated_errors():
            return await super()._agenerate(messages, stop, run_manager, **kwargs)

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        with self._translated_errors():
            yield from super()._stream(messages, stop, run_manager, **kwargs)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        with self._translated_errors():
            async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
                yield chunk


def _is_loopback(url: str) -> bool:
    host = urlparse(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _ollama_model(settings: LLMSettings, role: str) -> OllamaChatModel:
    client_kwargs: dict[str, Any] = {
        "timeout": httpx.Timeout(
            settings.timeout_s, connect=min(CONNECT_TIMEOUT_S, settings.timeout_s)
        )
    }
    if _is_loopback(settings.ollama_host):
        # An HTTP(S)_PROXY meant for the internet must not swallow requests to a local server.
        client_kwargs["trust_env"] = False
    return OllamaChatModel(
        model=model_for_role(settings, role),
        base_url=settings.ollama_host,
        temperature=settings.temperature,
        client_kwargs=client_kwargs,
    )


def _settings_script(settings: LLMSettings) -> Script:
    if not settings.script_path:
        raise ProviderError(
            "llm.provider is 'scripted' but llm.script_path is not set",
            "set llm.script_path to a YAML model script, or use provider 'ollama'",
        )
    return load_script(settings.script_path)


def make_chat_model(
    settings: LLMSettings, role: str = "default", *, script: Script | None = None
) -> BaseChatModel:
    """The chat model for ``role``. Builds no connection; errors surface on first use.

    For ``scripted``, each call loads ``llm.script_path`` afresh unless ``script`` is given; use
    :func:`make_chat_models` so the roles of one workflow run share (and consume) one script.
    """
    if settings.provider == "scripted":
        return ScriptedChatModel(
            script=script or _settings_script(settings),
            role=role,
        )
    if settings.provider == "llamacpp":
        check_gguf(settings.gguf_path)
        return LlamaCppChatModel(
            gguf_path=str(settings.gguf_path), temperature=settings.temperature
        )
    return _ollama_model(settings, role)


def make_chat_models(settings: LLMSettings, roles: Iterable[str]) -> dict[str, BaseChatModel]:
    """One model per role for one workflow run; scripted roles share a single script."""
    script = _settings_script(settings) if settings.provider == "scripted" else None
    shared: dict[str, BaseChatModel] = {}
    out: dict[str, BaseChatModel] = {}
    for role in roles:
        if settings.provider == "llamacpp":
            # One GGUF in memory for every role.
            out[role] = shared.setdefault("llamacpp", make_chat_model(settings, role))
        else:
            out[role] = make_chat_model(settings, role, script=script)
    return out


async def check_provider(settings: LLMSettings, roles: Iterable[str] = ()) -> None:
    """Raise :class:`ProviderError` now (within seconds) if the provider cannot serve ``roles``.

    For Ollama: the server must answer and every model used be pulled (the roles' models, or
    ``llm.model`` when no role is named).
    """
    if settings.provider == "scripted":
        _settings_script(settings)
        return
    if settings.provider == "llamacpp":
        check_gguf(settings.gguf_path)
        return
    models = dict.fromkeys(model_for_role(settings, r) for r in (list(roles) or ["default"]))
    for model in models:
        probe = await asyncio.to_thread(
            probe_ollama, settings.ollama_host, model, min(CONNECT_TIMEOUT_S, settings.timeout_s)
        )
        if probe.problem:
            raise ProviderError(probe.problem, probe.fix)
