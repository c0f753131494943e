"""The chat-model factory: one LangChain ``BaseChatModel`` per agent role, from ``LLMSettings``.

Providers:

* ``ollama`` (default): :class:`OllamaChatModel`, a ``langchain_ollama.ChatOllama`` whose failures
  arrive as :class:`~agentic_lsp.errors.ProviderError` carrying the exact fix (``ollama serve``,
  ``ollama pull MODEL``). Connecting gives up after a few seconds and nothing is retried, so a
  dead server is reported at once rather than after ``timeout_s``.
* ``scripted``: :class:`~agentic_lsp.llm.scripted.ScriptedChatModel`, a labelled test double.
* ``llamacpp``: :class:`~agentic_lsp.llm.llamacpp.LlamaCppChatModel`, a local GGUF file:
  ``llm.gguf_path``, else ``llm.model`` naming a model from ``agentic-lsp models install``.
* ``openai``: :class:`~agentic_lsp.llm.openai_compat.OpenAIChatModel`, any OpenAI-compatible
  server at ``llm.base_url`` (llama.cpp server, LM Studio, vLLM, …); the key is read from the
  environment variable named by ``llm.api_key_env``.

Fallback: when ``llm.provider`` is left at its default (``ollama``), Ollama does not answer and a
local model is installed (with llama-cpp-python), the largest installed local model is used
instead, with a warning; the model's description says "fallback".

Nodes call ``.invoke``/``.ainvoke``/``.stream`` as on any LangChain chat model.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import httpx
import ollama
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_ollama import ChatOllama

from agentic_lsp.config import LLMSettings
from agentic_lsp.errors import ProviderError
from agentic_lsp.llm import local_models
from agentic_lsp.llm.llamacpp import (
    INSTALL_HINT,
    LlamaCppChatModel,
    check_gguf,
    llama_cpp_available,
)
from agentic_lsp.llm.ollama_health import probe_ollama
from agentic_lsp.llm.ollama_sampling import OLLAMA_CAPABILITIES, ollama_samples
from agentic_lsp.llm.openai_compat import (
    CONNECT_TIMEOUT_S,
    http_timeout,
    is_loopback,
    model_for_role,
    openai_model,
    probe_openai,
)
from agentic_lsp.llm.sampling import Capabilities, Sample, SampleRequest
from agentic_lsp.llm.scripted import SCRIPTED_DESCRIPTION, Script, ScriptedChatModel, load_script

log = logging.getLogger(__name__)

_SERVE_HINT = (
    "start it with `ollama serve` (install: https://ollama.com/download), or set "
    "OLLAMA_HOST / llm.ollama_host to where it runs"
)


# -- which provider and which local file ----------------------------------------------------------


@dataclass(frozen=True)
class Resolved:
    """The settings to build models from, and why they differ from the user's (``note``)."""

    settings: LLMSettings
    note: str = ""


def fallback_candidate(settings: LLMSettings) -> tuple[local_models.LocalModel, str] | None:
    """The local model a fallback from Ollama would use (largest installed), when the provider
    is the default ``ollama`` not chosen by the user and llama-cpp-python is installed."""
    if settings.provider != "ollama" or "provider" in settings.model_fields_set:
        return None
    installed = local_models.installed_models()
    if not installed or not llama_cpp_available():
        return None
    model, path = installed[0]
    return model, str(path)


def resolve_provider(settings: LLMSettings) -> Resolved:
    """``settings`` as given, or switched to the installed local model when the fallback rule
    applies (see the module doc). Probes Ollama (at most a few seconds) only then."""
    candidate = fallback_candidate(settings)
    if candidate is None:
        return Resolved(settings)
    probe = probe_ollama(
        settings.ollama_host, settings.model, min(CONNECT_TIMEOUT_S, settings.timeout_s)
    )
    if probe.reachable:
        return Resolved(settings)
    model, path = candidate
    note = (
        f"fallback: Ollama is not reachable at {settings.ollama_host}, using the installed "
        f"local model {model.name}; set llm.provider to choose explicitly"
    )
    log.warning("%s", note)
    update = {"provider": "llamacpp", "gguf_path": path, "model": model.name, "role_models": {}}
    return Resolved(settings.model_copy(update=update), note)


def local_gguf(settings: LLMSettings) -> Path:
    """The GGUF file for ``llamacpp``: ``llm.gguf_path``; else ``llm.model`` as a local model
    name; else (``llm.model`` not set) the largest installed local model."""
    if settings.gguf_path:
        return check_gguf(settings.gguf_path)
    name = settings.model
    model = local_models.CATALOG.get(name)
    if model is None and "model" not in settings.model_fields_set:
        installed = local_models.installed_models()
        if installed:
            model = installed[0][0]
    if model is None:
        known = ", ".join(local_models.CATALOG)
        raise ProviderError(
            f"llm.provider is 'llamacpp' but llm.gguf_path is not set and llm.model {name!r} is "
            f"not a local model ({known})",
            f"set llm.model to one of them and run `agentic-lsp models install NAME`; "
            f"or {INSTALL_HINT}",
        )
    path = local_models.installed_path(model)
    if path is None:
        raise ProviderError(
            f"local model {model.name} is not installed",
            f"run `agentic-lsp models install {model.name}`",
        )
    return check_gguf(str(path))


def describe_provider(settings: LLMSettings, role: str = "default") -> str:
    """One line for logs and the UI, e.g. ``ollama qwen2.5-coder:7b at http://127.0.0.1:11434``."""
    resolved = resolve_provider(settings)
    settings = resolved.settings
    if settings.provider == "scripted":
        return f"{SCRIPTED_DESCRIPTION} from {settings.script_path or '(no llm.script_path)'}"
    if settings.provider == "llamacpp":
        try:
            where = str(local_gguf(settings))
        except ProviderError as exc:
            where = f"(unavailable: {exc.message})"
        return f"llamacpp {where} ({resolved.note})" if resolved.note else f"llamacpp {where}"
    if settings.provider == "openai":
        base = settings.base_url or "(no llm.base_url)"
        return f"openai {model_for_role(settings, role)} at {base}"
    return f"ollama {model_for_role(settings, role)} at {settings.ollama_host}"


class OllamaChatModel(ChatOllama):
    """``ChatOllama`` with failures translated into :class:`ProviderError` with the fix; every
    request carries ``num_ctx`` and ``num_predict`` (``llm.context_tokens``, ``llm.max_tokens``)."""

    schema_kwarg: ClassVar[str] = "format"  # Ollama's structured outputs take a JSON schema

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

    def sample_capabilities(self) -> Capabilities:
        return OLLAMA_CAPABILITIES

    async def draw_samples(self, request: SampleRequest) -> list[Sample]:
        """``request.n`` samples, one ``/api/chat`` request each (:mod:`.ollama_sampling`)."""
        return await ollama_samples(self._chat_once, request, self.num_ctx)

    async def _chat_once(
        self, messages: list[dict[str, str]], options: dict[str, Any]
    ) -> ollama.ChatResponse:
        with self._translated_errors():
            return await self._async_client.chat(
                model=self.model,
                messages=messages,
                stream=False,
                options=options,
                keep_alive=self.keep_alive,
            )

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


def _ollama_model(settings: LLMSettings, role: str) -> OllamaChatModel:
    client_kwargs: dict[str, Any] = {"timeout": http_timeout(settings)}
    if is_loopback(settings.ollama_host):
        # An HTTP(S)_PROXY meant for the internet must not swallow requests to a local server.
        client_kwargs["trust_env"] = False
    return OllamaChatModel(
        model=model_for_role(settings, role),
        base_url=settings.ollama_host,
        temperature=settings.temperature,
        num_ctx=settings.context_tokens,
        num_predict=settings.max_tokens,
        client_kwargs=client_kwargs,
    )


def _settings_script(settings: LLMSettings) -> Script:
    if not settings.script_path:
        raise ProviderError(
            "llm.provider is 'scripted' but llm.script_path is not set",
            "set llm.script_path to a YAML model script, or use provider 'ollama'",
        )
    return load_script(settings.script_path)


def _build(
    settings: LLMSettings, role: str, script: Script | None, note: str = ""
) -> BaseChatModel:
    if settings.provider == "scripted":
        return ScriptedChatModel(script=script or _settings_script(settings), role=role)
    if settings.provider == "llamacpp":
        return LlamaCppChatModel(
            gguf_path=str(local_gguf(settings)),
            temperature=settings.temperature,
            n_ctx=settings.context_tokens,
            max_tokens=settings.max_tokens,
            note=note,
        )
    if settings.provider == "openai":
        return openai_model(settings, role)
    return _ollama_model(settings, role)


def make_chat_model(
    settings: LLMSettings, role: str = "default", *, script: Script | None = None
) -> BaseChatModel:
    """The chat model for ``role``. Builds no connection; errors surface on first use (only the
    fallback rule may probe Ollama for a few seconds, see :func:`resolve_provider`).

    For ``scripted``, each call loads ``llm.script_path`` afresh unless ``script`` is given; use
    :func:`make_chat_models` so the roles of one workflow run share (and consume) one script.
    """
    resolved = resolve_provider(settings)
    return _build(resolved.settings, role, script, resolved.note)


def make_chat_models(settings: LLMSettings, roles: Iterable[str]) -> dict[str, BaseChatModel]:
    """One model per role for one workflow run; scripted roles share a single script."""
    resolved = resolve_provider(settings)
    settings = resolved.settings
    script = _settings_script(settings) if settings.provider == "scripted" else None
    shared: dict[str, BaseChatModel] = {}
    out: dict[str, BaseChatModel] = {}
    for role in roles:
        if settings.provider == "llamacpp":
            # One GGUF in memory for every role.
            if "llamacpp" not in shared:
                shared["llamacpp"] = _build(settings, role, None, resolved.note)
            out[role] = shared["llamacpp"]
        else:
            out[role] = _build(settings, role, script)
    return out


async def check_provider(settings: LLMSettings, roles: Iterable[str] = ()) -> None:
    """Raise :class:`ProviderError` now (within seconds) if the provider cannot serve ``roles``.

    For Ollama: the server must answer and every model used be pulled (the roles' models, or
    ``llm.model`` when no role is named). For ``openai``: ``GET {llm.base_url}/models`` must
    answer and list the models (when it lists any). The fallback rule applies first.
    """
    settings = (await asyncio.to_thread(resolve_provider, settings)).settings
    if settings.provider == "scripted":
        _settings_script(settings)
        return
    if settings.provider == "llamacpp":
        local_gguf(settings)
        return
    models = dict.fromkeys(model_for_role(settings, r) for r in (list(roles) or ["default"]))
    if settings.provider == "openai":
        await asyncio.to_thread(probe_openai, settings, list(models))
        return
    for model in models:
        probe = await asyncio.to_thread(
            probe_ollama, settings.ollama_host, model, min(CONNECT_TIMEOUT_S, settings.timeout_s)
        )
        if probe.problem:
            raise ProviderError(probe.problem, probe.fix)
