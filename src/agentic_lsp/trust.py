"""Workspace trust: which settings a repository may set, and the user's list of trusted folders.

A repository's own settings (``.agentic-lsp.toml`` or ``[tool.agentic-lsp]`` in
``pyproject.toml``) come with the code, so whoever wrote the repository wrote them. They may
tune the index and the workflows (:data:`REPO` keys in :data:`CLASSIFICATION`); keys that
choose where code and prompts go, what is hidden from the model, where secrets and runtime
files live, who may talk to the server, or what leaves the sandbox (:data:`USER` keys) are
ignored, with a warning, until the user trusts the folder. The user config file, the
environment and the editor's ``initializationOptions`` may set every key.

Trust is recorded in a user-level file next to the user config file (never read from a
workspace, so a repository cannot trust itself): ``agentic-lsp trust``, the LSP command
``agentic.trustWorkspace``, or ``trustWorkspace: true`` in ``initializationOptions`` (VS Code
sends it for folders VS Code's Workspace Trust trusts).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Who = Literal["repo", "user"]

TRUST_FILE = "trusted-workspaces.json"
#: The ``initializationOptions`` key an editor uses to vouch for a folder (not a setting).
INIT_OPTION = "trustWorkspace"

_HOSTS = "chooses where the code and prompts are sent"
_MODEL = "loads model files from a path (a model folder may run code when loaded)"
_STORE = "chooses where index data, runtime files and the bearer token are stored"
_SECRETS = "decides what is hidden from the model"
_MCP = "decides who may connect to the MCP server"
_SANDBOX = "decides what a workflow's commands may reach outside the sandbox"

#: Every settings key (dotted, leaves of :class:`~agentic_lsp.config.Settings`) and who may set
#: it: ``("repo", "")`` for a repository's settings file too, ``("user", why)`` for the user
#: config file, the environment and the editor only. A new setting must be added here (a test
#: checks every field is classified).
CLASSIFICATION: dict[str, tuple[Who, str]] = {
    "cache_dir": ("user", _STORE),
    "log_level": ("repo", ""),
    # index
    "index.max_file_bytes": ("repo", ""),
    "index.exclude": ("repo", ""),
    "index.scopes": ("repo", ""),  # only narrows what is indexed
    "index.include_hidden": ("user", _SECRETS + " (hidden files often hold credentials)"),
    "index.redact_secrets": ("user", _SECRETS),
    "index.store": ("user", _STORE),
    "index.qdrant_url": ("user", _HOSTS),
    "index.qdrant_shards": ("user", "shapes collections on a server the user chose"),
    "index.qdrant_replicas": ("user", "shapes collections on a server the user chose"),
    "index.team_index": ("user", "decides which vectors rank the user's search results"),
    "index.qdrant_api_key": ("user", "is a credential"),
    "index.embedding_model": ("user", _MODEL),
    "index.embedding_batch_size": ("repo", ""),
    "index.embedding_precision": ("repo", ""),
    "index.embedding_runtime": ("repo", ""),  # the same vectors either way
    "index.reranker": ("user", _MODEL),
    "index.rerank_top_n": ("repo", ""),
    "index.file_top_k": ("repo", ""),
    "index.function_top_k": ("repo", ""),
    "index.function_embed_files": ("repo", ""),
    "index.function_embed_budget": ("repo", ""),
    "index.call_graph_signal": ("repo", ""),
    "index.background_function_embeddings": ("repo", ""),
    "index.watch": ("repo", ""),
    "index.debounce_ms": ("repo", ""),
    # llm: every key picks a host, a provider, a model or a file to load (but edit_format,
    # model_queries and model_tools, which only shape prompts)
    "llm.provider": ("user", _HOSTS),
    "llm.ollama_host": ("user", _HOSTS),
    "llm.model": ("user", _HOSTS),
    "llm.role_models": ("user", _HOSTS),
    "llm.timeout_s": ("user", "is a model-host setting"),
    "llm.temperature": ("user", "is a model-host setting"),
    "llm.gguf_path": ("user", _MODEL),
    "llm.context_tokens": ("user", "is a model-host setting"),
    "llm.max_tokens": ("user", "is a model-host setting"),
    "llm.base_url": ("user", _HOSTS),
    "llm.api_key_env": ("user", "chooses which secret is sent to the model host"),
    "llm.openai_grammar": ("user", "is a model-host setting"),
    "llm.script_path": ("user", "replaces the model with a script file"),
    "llm.samples": ("user", "decides how much model time a run spends"),
    "llm.sample_temperature": ("user", "is a model-host setting"),
    "llm.edit_format": ("repo", ""),
    "llm.model_queries": ("repo", ""),
    "llm.model_tools": ("repo", ""),
    "llm.repair_target": ("repo", ""),  # which function the repair path rewrites first
    # changes
    "changes.commit_on_accept": ("user", "decides whether accepting a change makes git commits"),
    "changes.commit_prefixes": ("repo", ""),  # only shapes commit messages
    "changes.branch_per_run": ("user", "decides whether accepting a change writes the files"),
    # mcp
    "mcp.http_host": ("user", _MCP),
    "mcp.http_port": ("user", _MCP),
    "mcp.allowed_origins": ("user", _MCP),
    "mcp.max_body_bytes": ("user", _MCP),
    "mcp.tools": ("user", "decides which tools the user's MCP clients offer their model"),
    # workflows (the test command only ever runs inside the sandbox)
    "workflows.test_command": ("repo", ""),
    "workflows.test_timeout_s": ("repo", ""),
    "workflows.max_iterations": ("repo", ""),
    "workflows.max_parallel_tickets": ("repo", ""),
    "workflows.keep_runs": ("user", "decides how much of the user's run history is kept"),
    "workflows.sandbox_network": ("user", _SANDBOX),
    "workflows.allow_unisolated": ("user", _SANDBOX),
    # navigation
    "navigation.enabled": ("repo", ""),
    "navigation.python_server": ("user", "runs a program: the language server's command"),
    "navigation.typescript_server": ("user", "runs a program: the language server's command"),
    "navigation.c_server": ("user", "runs a program: the language server's command"),
    "navigation.go_server": ("user", "runs a program: the language server's command"),
    "navigation.timeout_s": ("repo", ""),
    "navigation.idle_s": ("repo", ""),
    "navigation.editor_timeout_s": ("repo", ""),
    # lsp: what the editor is offered (a repository may trim it)
    "lsp.standard_features": ("repo", ""),
}

PROTECTED = frozenset(key for key, (who, _) in CLASSIFICATION.items() if who == "user")


@dataclass(frozen=True)
class Ignored:
    """A protected key a repository tried to set, left out of the settings."""

    key: str
    source: str  # the file that set it
    reason: str

    def message(self, root: Path) -> str:
        return (
            f"{self.key} in {self.source} ignored: it {self.reason}, and the workspace "
            f"{root} is not trusted. To allow it, run `agentic-lsp trust {root}` or the "
            "'agentic.trustWorkspace' command (or set it in your user config file)"
        )


def _under_protected(path: str) -> bool:
    return any(key.startswith(path + ".") for key in PROTECTED)


def split_repo_layer(
    layer: Mapping[str, Any], source: str, prefix: str = ""
) -> tuple[dict[str, Any], list[Ignored]]:
    """``layer`` without its protected keys, and those keys. Unknown keys stay (validation
    names them); a non-table value where a section holding protected keys belongs is dropped."""
    kept: dict[str, Any] = {}
    ignored: list[Ignored] = []
    for key, value in layer.items():
        path = f"{prefix}{key}"
        entry = CLASSIFICATION.get(path)
        if entry is not None:
            if entry[0] == "user":
                ignored.append(Ignored(path, source, entry[1]))
            else:
                kept[key] = value
        elif isinstance(value, Mapping):
            sub, sub_ignored = split_repo_layer(value, source, path + ".")
            kept[key] = sub
            ignored.extend(sub_ignored)
        elif _under_protected(path):
            ignored.append(Ignored(path, source, "is a section holding user-only settings"))
        else:
            kept[key] = value
    return kept, ignored


# -- the trust store ------------------------------------------------------------------------------


def trust_store_path(user_config: Path) -> Path:
    """The trust file: next to the user config file (``AGENTIC_LSP_CONFIG``'s folder, else the
    XDG config dir)."""
    return user_config.parent / TRUST_FILE


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path.expanduser()))


def trusted_roots(store: Path) -> list[Path]:
    try:
        data = json.loads(store.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError):
        return []  # an unreadable store trusts nothing
    roots = data.get("trusted", []) if isinstance(data, dict) else []
    return [Path(p) for p in roots if isinstance(p, str)]


def is_trusted(store: Path, root: Path) -> bool:
    """Whether ``root`` or a folder above it is in the trust store."""
    real = _real(root)
    return any(t == real or t in real.parents for t in trusted_roots(store))


def set_trusted(store: Path, root: Path, trusted: bool = True) -> bool:
    """Record (or revoke) trust in ``root``; returns whether the store changed."""
    real = _real(root)
    roots = trusted_roots(store)
    if trusted and real not in roots:
        roots.append(real)
    elif not trusted and real in roots:
        roots.remove(real)
    else:
        return False
    store.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"trusted": [str(p) for p in roots]}, indent=2) + "\n"
    fd, tmp = tempfile.mkstemp(dir=store.parent, prefix=".trust-", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, store)
    return True
