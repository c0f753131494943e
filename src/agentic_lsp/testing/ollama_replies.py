"""The Ollama test server's replies: names, model details and how a scripted reply ends
(a stop string, or ``num_predict`` words), as a real server would shape them."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any


def full_name(model: str) -> str:
    """Ollama's rule: a name without a tag means ``:latest``."""
    return model if ":" in model.rsplit("/", 1)[-1] else f"{model}:latest"


def now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def details() -> dict[str, Any]:
    return {
        "parent_model": "",
        "format": "gguf",
        "family": "scripted",
        "families": ["scripted"],
        "parameter_size": "0B",
        "quantization_level": "none",
    }


def ended(reply: str, options: Mapping[str, Any]) -> tuple[str, str]:
    """``reply`` cut before the first stop string, else after ``num_predict`` words; and the
    ``done_reason``."""
    stops = options.get("stop")
    for stop in stops if isinstance(stops, list) else []:
        if isinstance(stop, str) and stop and stop in reply:
            reply = reply[: reply.index(stop)]
    limit = options.get("num_predict")
    words = re.findall(r"\s*\S+", reply)
    if isinstance(limit, int) and 0 < limit < len(words):
        return "".join(words[:limit]), "length"
    return reply, "stop"


def assistant(content: str) -> dict[str, str]:
    return {"role": "assistant", "content": content}
