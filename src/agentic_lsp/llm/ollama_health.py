"""Fast reachability and model checks for an Ollama server, with the exact fix to print."""

from __future__ import annotations

from dataclasses import dataclass

import httpx


@dataclass(frozen=True)
class OllamaProbe:
    reachable: bool
    version: str | None
    models: tuple[str, ...]
    model_present: bool
    problem: str  # empty when all is well
    fix: str


def _matches(wanted: str, available: str) -> bool:
    """``qwen2.5-coder`` matches ``qwen2.5-coder:latest``; an explicit tag must match exactly."""
    if ":" not in wanted:
        return available.split(":", 1)[0] == wanted
    return available == wanted


def probe_ollama(host: str, model: str, timeout_s: float = 2.0) -> OllamaProbe:
    """Ask ``host`` for its version and model list; never raises, never waits past the timeout."""
    host = host.rstrip("/")
    try:
        with httpx.Client(base_url=host, timeout=timeout_s, trust_env=False) as client:
            version = client.get("/api/version").json().get("version")
            tags = client.get("/api/tags").json().get("models", [])
    except (httpx.HTTPError, ValueError) as exc:
        return OllamaProbe(
            False,
            None,
            (),
            False,
            f"Ollama is not reachable at {host} ({type(exc).__name__})",
            "start it with `ollama serve` (install: https://ollama.com/download), or set "
            "OLLAMA_HOST / llm.ollama_host to where it runs",
        )
    names = tuple(str(m.get("name") or m.get("model") or "") for m in tags)
    present = any(_matches(model, name) for name in names)
    if present:
        return OllamaProbe(True, version, names, True, "", "")
    return OllamaProbe(
        True,
        version,
        names,
        False,
        f"model {model!r} is not pulled on {host}",
        f"run `ollama pull {model}` or set llm.model to one of: {', '.join(names) or '(none)'}",
    )
