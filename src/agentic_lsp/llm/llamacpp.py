"""A local GGUF model through ``llama-cpp-python`` (``agentic-lsp models install NAME`` installs
both a model and the runtime).

No server and no extra LangChain dependency: :class:`LlamaCppChatModel` wraps
``llama_cpp.Llama.create_chat_completion`` in a small chat model. The GGUF file is loaded on first
use (seconds for a small model) and kept; calls are serialised because a ``Llama`` instance is not
thread-safe.

``json_schema=`` (e.g. ``model.bind(json_schema=schema)``) constrains one reply to a JSON schema
through llama.cpp's grammar-based ``response_format``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import ConfigDict, PrivateAttr

from agentic_lsp.errors import ProviderError
from agentic_lsp.llm.sampling import Capabilities, Sample, SampleRequest
from agentic_lsp.llm.scripted import as_role_text

INSTALL_HINT = (
    "run `agentic-lsp models install qwen2.5-coder-1.5b` (the model and llama-cpp-python), or "
    "`pip install llama-cpp-python` and set llm.gguf_path to a local .gguf file"
)


def physical_cores() -> int:
    """Physical CPU cores (llama.cpp is slower on hyper-threads); logical cores when unknown."""
    cores: set[tuple[str, str]] = set()
    package = core = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "physical id":
                    package = value.strip()
                elif key == "core id":
                    core = value.strip()
                    cores.add((package, core))
    except OSError:
        pass
    return len(cores) or os.cpu_count() or 1


def response_format(json_schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """llama-cpp-python's schema-constrained ``response_format`` for ``json_schema``."""
    if json_schema is None:
        return None
    return {"type": "json_object", "schema": json_schema}


def llama_cpp_available() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None


def check_gguf(gguf_path: str | None) -> Path:
    """The model file, or a ProviderError that says what to install or set."""
    if not llama_cpp_available():
        raise ProviderError("the llamacpp provider needs llama-cpp-python", INSTALL_HINT)
    if not gguf_path:
        raise ProviderError(
            "llm.gguf_path is not set and llm.model is no local model", INSTALL_HINT
        )
    path = Path(gguf_path).expanduser()
    if not path.is_file():
        raise ProviderError(f"GGUF model file not found: {path}", INSTALL_HINT)
    return path


class LlamaCppChatModel(BaseChatModel):
    """Chat completions from a GGUF file, in-process."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    gguf_path: str
    temperature: float = 0.1
    n_ctx: int = 8192
    max_tokens: int = 1024
    n_threads: int | None = None  # None: physical cores
    note: str = ""  # shown by describe(), e.g. why this model was chosen as a fallback
    schema_kwarg: ClassVar[str] = "json_schema"  # see llm.structured.schema_kwargs
    _llama: Any = PrivateAttr(default=None)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "llamacpp"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"gguf_path": self.gguf_path, "n_ctx": self.n_ctx}

    @contextmanager
    def _context_errors(self) -> Iterator[None]:
        """llama.cpp refuses a prompt longer than the context window with a ValueError."""
        try:
            yield
        except ValueError as exc:
            if "context window" not in str(exc) and "exceed" not in str(exc):
                raise
            raise ProviderError(
                f"the prompt does not fit the model's context of {self.n_ctx} tokens ({exc})",
                "raise llm.context_tokens, or lower the workflow's retrieval token_budgets",
            ) from None

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` in this model's own vocabulary (prompt budgets use it)."""
        with self._lock:
            tokens = self._model().tokenize(text.encode("utf-8"), add_bos=False, special=False)
        return len(tokens)

    def sample_capabilities(self) -> Capabilities:
        return Capabilities(prefill=True, grammar=True, seed=True, context_window=True)

    async def draw_samples(self, request: SampleRequest) -> list[Sample]:
        """Several completions of one prompt (see :mod:`agentic_lsp.llm.llamacpp_sampling`)."""
        from agentic_lsp.llm.llamacpp_sampling import draw

        return await asyncio.to_thread(draw, self, request)

    def describe(self) -> str:
        text = f"llamacpp {Path(self.gguf_path).name}"
        return f"{text} ({self.note})" if self.note else text

    def _model(self) -> Any:
        if self._llama is None:
            path = check_gguf(self.gguf_path)
            import llama_cpp

            try:
                self._llama = llama_cpp.Llama(
                    model_path=str(path),
                    n_ctx=self.n_ctx,
                    n_threads=self.n_threads or physical_cores(),
                    verbose=False,
                )
            except (ValueError, RuntimeError) as exc:
                raise ProviderError(
                    f"llama.cpp cannot load {path} ({exc})",
                    "check that the file is a complete GGUF model for this llama-cpp-python",
                ) from None
        return self._llama

    def _request(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None,
        json_schema: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        request: dict[str, Any] = {
            "messages": [{"role": r, "content": t} for r, t in as_role_text(messages)],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "stop": stop or [],
        }
        fmt = response_format(json_schema)
        if fmt is not None:
            request["response_format"] = fmt
        return request

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        with self._lock, self._context_errors():
            request = self._request(messages, stop, kwargs.get("json_schema"))
            out = self._model().create_chat_completion(**request)
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        message = AIMessage(
            content=choice["message"].get("content") or "",
            response_metadata={
                "provider": "llamacpp",
                "model_provider": "llamacpp",
                "model_name": Path(self.gguf_path).name,
                "finish_reason": choice.get("finish_reason"),
            },
            usage_metadata=UsageMetadata(
                input_tokens=int(usage.get("prompt_tokens", 0)),
                output_tokens=int(usage.get("completion_tokens", 0)),
                total_tokens=int(usage.get("total_tokens", 0)),
            ),
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        with self._lock, self._context_errors():
            parts = self._model().create_chat_completion(
                **self._request(messages, stop, kwargs.get("json_schema")), stream=True
            )
            for part in parts:
                choice = part["choices"][0]
                text = choice.get("delta", {}).get("content") or ""
                meta = {"provider": "llamacpp", "finish_reason": choice["finish_reason"]}
                chunk = ChatGenerationChunk(
                    message=AIMessageChunk(
                        content=text, response_metadata=meta if choice.get("finish_reason") else {}
                    )
                )
                if run_manager:
                    run_manager.on_llm_new_token(text, chunk=chunk)
                yield chunk
