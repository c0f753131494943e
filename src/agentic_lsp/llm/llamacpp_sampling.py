"""Samples from the in-process llama.cpp model: the chat prompt rendered with the model's own
template, the assistant's reply prefilled, a GBNF grammar, one seeded raw completion per sample.

llama.cpp keeps the evaluated prompt in its KV cache and a completion re-evaluates only what
differs from the previous one, so ``n`` samples of one prompt process the prompt once.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentic_lsp.errors import ProviderError
from agentic_lsp.llm.sampling import Sample, SampleRequest

if TYPE_CHECKING:
    from agentic_lsp.llm.llamacpp import LlamaCppChatModel

# ChatML, the template of the Qwen models this project installs; used when a GGUF carries none.
CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _token_text(llama: Any, token: int) -> str:
    if token < 0:
        return ""
    try:
        return str(llama._model.token_get_text(token))
    except (AttributeError, RuntimeError, UnicodeDecodeError):
        return ""


def render_prompt(llama: Any, system: str, user: str) -> str:
    """The chat as the model was trained to read it, ending where the assistant's reply
    starts (its own template from the GGUF metadata; ChatML when it has none)."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    template = (getattr(llama, "metadata", None) or {}).get("tokenizer.chat_template") or CHATML
    formatter = Jinja2ChatFormatter(
        template=template,
        eos_token=_token_text(llama, llama.token_eos()),
        bos_token=_token_text(llama, llama.token_bos()),
    )
    messages: list[Any] = [
        {"role": "system", "content": system},
        {"role": "user", "content": user},
    ]
    return str(formatter(messages=messages).prompt)


def grammar_for(text: str | None) -> Any:
    if not text:
        return None
    from llama_cpp import LlamaGrammar

    try:
        return LlamaGrammar.from_string(text, verbose=False)
    except (ValueError, RuntimeError) as exc:
        raise ProviderError(f"llama.cpp refused the reply grammar ({exc})", "") from None


def draw(model: LlamaCppChatModel, request: SampleRequest) -> list[Sample]:
    """``request.n`` samples; blocking (run it in a worker thread)."""
    with model._lock, model._context_errors():
        llama = model._model()
        prompt = render_prompt(llama, request.system, request.prompt) + request.prefill
        out: list[Sample] = []
        for index in range(request.n):
            grammar = grammar_for(request.grammar)  # a grammar object holds parse state
            reply = llama.create_completion(
                prompt=prompt,
                max_tokens=request.max_tokens,
                temperature=request.temperature_of(index),
                seed=request.seed_of(index),
                stop=list(request.stop),
                grammar=grammar,
            )
            choice = reply["choices"][0]
            usage = reply.get("usage") or {}
            out.append(
                Sample(
                    text=str(choice.get("text") or ""),
                    prefilled=True,
                    finish_reason=str(choice.get("finish_reason") or "stop"),
                    prompt_tokens=int(usage.get("prompt_tokens", 0)),
                    completion_tokens=int(usage.get("completion_tokens", 0)),
                )
            )
        return out


def model_name(model: LlamaCppChatModel) -> str:
    return Path(model.gguf_path).name
