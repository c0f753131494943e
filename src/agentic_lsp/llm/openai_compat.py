"""An OpenAI-compatible server (llama.cpp server, LM Studio, vLLM, OpenAI) as a chat model.

``llm.base_url`` is the endpoint (e.g. ``http://127.0.0.1:8080/v1``), ``llm.model`` the served
model name, and ``llm.api_key_env`` the NAME of the environment variable holding the key (the key
itself never sits in a settings file). Failures arrive as :class:`ProviderError` with the fix;
loopback URLs ignore ``HTTP(S)_PROXY``; usage tokens arrive in ``usage_metadata``, when
streaming too.
"""

from __future__ import annotations

import ipaddress
import logging
import os
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, ClassVar
from urllib.parse import urlparse

import httpx
import openai
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_openai import ChatOpenAI
from openai.types.chat import ChatCompletion
from pydantic import PrivateAttr, SecretStr

from agentic_lsp.config import LLMSettings
from agentic_lsp.errors import ProviderError
from agentic_lsp.llm.openai_sampling import openai_capabilities, openai_samples
from agentic_lsp.llm.sampling import Capabilities, Sample, SampleRequest

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 3.0


def model_for_role(settings: LLMSettings, role: str = "default") -> str:
    """``llm.role_models[role]`` when set, else ``llm.model``."""
    return settings.role_models.get(role, settings.model)


def is_loopback(url: str) -> bool:
    host = urlparse(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


_OPENAI_SERVE_HINT = (
    "start the server (e.g. `python -m llama_cpp.server --model FILE`, LM Studio's local server, "
    "`vllm serve MODEL`) or set llm.base_url to where it runs (ending in /v1)"
)


def openai_response_format(schema: dict[str, Any], json_object: bool = False) -> dict[str, Any]:
    """The ``response_format`` that constrains a reply to ``schema``: OpenAI's ``json_schema``
    form (OpenAI, vLLM, LM Studio), or llama-cpp-python's ``json_object`` + ``schema`` form."""
    if json_object:
        return {"type": "json_object", "schema": schema}
    return {
        "type": "json_schema",
        "json_schema": {"name": str(schema.get("title") or "reply"), "schema": schema},
    }


class OpenAIChatModel(ChatOpenAI):
    """``ChatOpenAI`` for an OpenAI-compatible server, failures as :class:`ProviderError`.

    ``json_schema=`` (e.g. ``model.bind(json_schema=schema)``) constrains one reply; a server
    that rejects OpenAI's ``json_schema`` form (llama-cpp-python's) is asked again, and from then
    on, with the ``json_object`` + ``schema`` form.
    """

    schema_kwarg: ClassVar[str] = "json_schema"  # see llm.structured.schema_kwargs
    llamacpp_grammar: bool = False  # the server takes llama.cpp's `grammar` (llm.openai_grammar)
    _json_object: bool = PrivateAttr(default=False)

    @contextmanager
    def _translated_errors(self) -> Iterator[None]:
        host = self.openai_api_base or "the OpenAI-compatible server"
        try:
            yield
        except openai.AuthenticationError as exc:
            raise ProviderError(
                f"{host} refused the API key (HTTP {exc.status_code})",
                "set llm.api_key_env to the NAME of an environment variable holding a valid key, "
                "and export that variable",
            ) from None
        except openai.NotFoundError as exc:
            raise ProviderError(
                f"{host} answered HTTP 404 for model {self.model_name!r} ({_api_message(exc)})",
                f"set llm.model to a model the server serves (GET {host}/models lists them) and "
                "check that llm.base_url ends in /v1",
            ) from None
        except openai.APITimeoutError:
            raise ProviderError(
                f"{host} did not answer in time", "raise llm.timeout_s or pick a smaller model"
            ) from None
        except openai.APIConnectionError as exc:
            raise ProviderError(
                f"the OpenAI-compatible server is not reachable at {host} ({exc})",
                _OPENAI_SERVE_HINT,
            ) from None
        except openai.APIStatusError as exc:
            raise ProviderError(
                f"{host} answered HTTP {exc.status_code}: {_api_message(exc)}",
                "check the server's log",
            ) from None

    def describe(self) -> str:
        return f"openai {self.model_name} at {self.openai_api_base}"

    def sample_capabilities(self) -> Capabilities:
        return openai_capabilities(self.llamacpp_grammar)

    async def draw_samples(self, request: SampleRequest) -> list[Sample]:
        """``request.n`` samples in two requests where the server honours ``n``
        (:mod:`.openai_sampling`)."""
        return await openai_samples(
            self._complete, self.model_name, request, grammar=self.llamacpp_grammar
        )

    async def _complete(self, kwargs: dict[str, Any]) -> ChatCompletion:
        with self._translated_errors():
            completion: ChatCompletion = await self.async_client.create(**kwargs)
            return completion

    def _get_request_payload(
        self, input_: Any, *, stop: list[str] | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        schema = kwargs.pop("json_schema", None)
        if schema is not None:
            kwargs["response_format"] = openai_response_format(schema, self._json_object)
        return super()._get_request_payload(input_, stop=stop, **kwargs)

    def _schema_rejected(self, exc: openai.APIStatusError, kwargs: dict[str, Any]) -> bool:
        """Whether to ask again with the ``json_object`` form (once per model): the server
        rejected the request naming ``response_format`` (llama-cpp-python answers HTTP 500)."""
        if kwargs.get("json_schema") is None or self._json_object:
            return False
        text = f"{exc.message} {exc.body}"
        if exc.status_code in (400, 422, 500) and "response_format" in text:
            self._json_object = True
            log.info("%s rejected response_format json_schema; using json_object", self.describe())
            return True
        return False

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        with self._translated_errors():
            try:
                return super()._generate(messages, stop, run_manager, **kwargs)
            except openai.APIStatusError as exc:
                if not self._schema_rejected(exc, kwargs):
                    raise
                return super()._generate(messages, stop, run_manager, **kwargs)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        with self._translated_errors():
            try:
                return await super()._agenerate(messages, stop, run_manager, **kwargs)
            except openai.APIStatusError as exc:
                if not self._schema_rejected(exc, kwargs):
                    raise
                return await super()._agenerate(messages, stop, run_manager, **kwargs)

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        with self._translated_errors():
            try:
                yield from super()._stream(messages, stop, run_manager, **kwargs)
            except openai.APIStatusError as exc:  # raised by the request, before any chunk
                if not self._schema_rejected(exc, kwargs):
                    raise
                yield from super()._stream(messages, stop, run_manager, **kwargs)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        with self._translated_errors():
            try:
                async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
                    yield chunk
            except openai.APIStatusError as exc:  # raised by the request, before any chunk
                if not self._schema_rejected(exc, kwargs):
                    raise
                async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
                    yield chunk


def _api_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])[:300]
        if isinstance(body.get("detail"), str):
            return body["detail"][:300]
    return exc.message[:300]


def openai_api_key(settings: LLMSettings) -> str:
    """The key from the environment variable ``llm.api_key_env`` names; a placeholder when none
    is named (local servers need no key). Never read from a settings file."""
    name = settings.api_key_env
    if not name:
        return "not-needed"
    key = os.environ.get(name, "")
    if not key:
        raise ProviderError(
            f"llm.api_key_env names the environment variable {name}, which is not set",
            f"export {name}=<your key> before starting agentic-lsp, or unset llm.api_key_env",
        )
    return key


def _openai_base_url(settings: LLMSettings) -> str:
    if not settings.base_url:
        raise ProviderError(
            "llm.provider is 'openai' but llm.base_url is not set",
            "set llm.base_url to the server's OpenAI-compatible endpoint, e.g. "
            "http://127.0.0.1:8080/v1",
        )
    return settings.base_url.rstrip("/")


def http_timeout(settings: LLMSettings) -> httpx.Timeout:
    return httpx.Timeout(settings.timeout_s, connect=min(CONNECT_TIMEOUT_S, settings.timeout_s))


def openai_model(settings: LLMSettings, role: str) -> OpenAIChatModel:
    base_url = _openai_base_url(settings)
    extra: dict[str, Any] = {}
    if is_loopback(base_url):
        # An HTTP(S)_PROXY meant for the internet must not swallow requests to a local server.
        timeout = http_timeout(settings)
        extra["http_client"] = httpx.Client(trust_env=False, timeout=timeout)
        extra["http_async_client"] = httpx.AsyncClient(trust_env=False, timeout=timeout)
    return OpenAIChatModel(
        model=model_for_role(settings, role),
        base_url=base_url,
        api_key=SecretStr(openai_api_key(settings)),
        temperature=settings.temperature,
        timeout=http_timeout(settings),
        max_retries=0,
        stream_usage=True,
        llamacpp_grammar=settings.openai_grammar,
        **extra,
    )


def probe_openai(settings: LLMSettings, models: Iterable[str]) -> None:
    """``GET {base_url}/models`` within seconds; ProviderError when the server is down, refuses
    the key, or lists models and none of ``models`` is among them."""
    base_url = _openai_base_url(settings)
    headers = {"Authorization": f"Bearer {openai_api_key(settings)}"}
    timeout = min(CONNECT_TIMEOUT_S, settings.timeout_s)
    try:
        with httpx.Client(timeout=timeout, trust_env=not is_loopback(base_url)) as client:
            response = client.get(f"{base_url}/models", headers=headers)
    except httpx.HTTPError as exc:
        raise ProviderError(
            f"the OpenAI-compatible server is not reachable at {base_url} ({type(exc).__name__})",
            _OPENAI_SERVE_HINT,
        ) from None
    if response.status_code in (401, 403):
        raise ProviderError(
            f"{base_url} refused the API key (HTTP {response.status_code})",
            "set llm.api_key_env to the NAME of an environment variable holding a valid key",
        )
    if response.status_code != 200:
        raise ProviderError(
            f"{base_url}/models answered HTTP {response.status_code}",
            "check llm.base_url (it usually ends in /v1) and the server's log",
        )
    try:
        data = response.json().get("data") or []
        served = [str(m.get("id")) for m in data if isinstance(m, dict)]
    except (ValueError, AttributeError):
        served = []
    missing = [m for m in models if served and m not in served]
    if missing:
        raise ProviderError(
            f"model {missing[0]!r} is not served at {base_url}",
            f"set llm.model / llm.role_models to one of: {', '.join(served)}",
        )
