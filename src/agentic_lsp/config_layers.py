"""The layers settings are read from: TOML files (the user's, the workspace's own or
``[tool.agentic-lsp]`` in ``pyproject.toml``) and ``AGENTIC_LSP_SECTION__KEY`` environment
variables, and how one layer merges over another (remembering where each value came from)."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentic_lsp.errors import ConfigError

ENV_PREFIX = "AGENTIC_LSP_"
WORKSPACE_FILE = ".agentic-lsp.toml"


def read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"{path}: not valid TOML ({exc})", "fix the syntax at the line shown"
        ) from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror})", "check permissions") from exc


def workspace_layer(root: Path) -> tuple[dict[str, Any], Path | None]:
    """The workspace's settings: ``.agentic-lsp.toml`` wins over ``[tool.agentic-lsp]``."""
    own = root / WORKSPACE_FILE
    if own.is_file():
        return read_toml(own), own
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        table = read_toml(pyproject).get("tool", {}).get("agentic-lsp")
        if isinstance(table, dict):
            return table, pyproject
    return {}, None


def env_layer(environ: Mapping[str, str]) -> dict[str, Any]:
    """``AGENTIC_LSP_LLM__MODEL=x`` -> ``{"llm": {"model": "x"}}``; ``OLLAMA_HOST`` too."""
    out: dict[str, Any] = {}
    host = environ.get("OLLAMA_HOST")
    if host:
        out.setdefault("llm", {})["ollama_host"] = _normalise_ollama_host(host)
    for name, value in environ.items():
        if not name.startswith(ENV_PREFIX) or name == ENV_PREFIX + "CONFIG":
            continue
        parts = [p.lower() for p in name[len(ENV_PREFIX) :].split("__") if p]
        if not parts:
            continue
        node = out
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                break
        else:
            node[parts[-1]] = _parse_env_value(value)
    return out


def _normalise_ollama_host(host: str) -> str:
    """Ollama accepts ``0.0.0.0:11434`` or ``host`` without a scheme; make it a URL."""
    if "://" not in host:
        host = "http://" + host
    return host.rstrip("/")


def _parse_env_value(value: str) -> Any:
    """Lists come as JSON or comma-separated text; pydantic coerces scalars itself."""
    stripped = value.strip()
    if stripped.startswith(("[", "{")):
        import json

        try:
            return json.loads(stripped)
        except json.JSONDecodeError:
            return value
    return value


def merge(
    base: dict[str, Any],
    layer: Mapping[str, Any],
    source: str,
    sources: dict[tuple[str, ...], str],
    prefix: tuple[str, ...] = (),
) -> None:
    for key, value in layer.items():
        path = (*prefix, str(key))
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            merge(base[key], value, source, sources, path)
        elif isinstance(value, Mapping) and key not in base:
            base[key] = {}
            merge(base[key], value, source, sources, path)
        else:
            base[key] = value
            sources[path] = source
