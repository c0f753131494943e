"""Settings: one pydantic model, filled from layers.

Precedence (later wins): built-in defaults
< user config file (``~/.config/agentic-lsp/config.toml``)
< workspace ``.agentic-lsp.toml`` (or ``[tool.agentic-lsp]`` in ``pyproject.toml``) < environment
(``AGENTIC_LSP_SECTION__KEY``, ``OLLAMA_HOST``) < LSP ``initializationOptions``.

A repository's own file may set only the keys :mod:`agentic_lsp.trust` allows it; the rest are
ignored (listed in :attr:`LoadedSettings.ignored`) until the user trusts the workspace.

Every leaf value remembers the layer it came from, so a validation error names the key *and* the
file or variable to fix, never a traceback.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agentic_lsp.config_layers import (
    ENV_PREFIX,
    env_layer,
    merge,
    read_toml,
    workspace_layer,
)
from agentic_lsp.config_navigation import NavigationSettings
from agentic_lsp.config_scopes import normal_scopes
from agentic_lsp.errors import ConfigError
from agentic_lsp.trust import INIT_OPTION, Ignored, is_trusted, split_repo_layer, trust_store_path


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class IndexSettings(_Section):
    max_file_bytes: int = Field(1_000_000, ge=1_000, description="Files larger are skipped.")
    exclude: list[str] = Field(default_factory=list, description="Extra gitignore-style patterns.")
    scopes: list[str] = Field(
        default_factory=list, description="Workspace folders to index (monorepos); empty: all."
    )
    _scopes = field_validator("scopes", mode="before")(normal_scopes)
    include_hidden: bool = False
    redact_secrets: bool = True
    store: Literal["edge", "qdrant"] = "edge"
    qdrant_url: str | None = None
    qdrant_api_key: str | None = None
    qdrant_shards: int | None = Field(None, ge=1, le=1024, description="Shards when created.")
    qdrant_replicas: int | None = Field(None, ge=1, le=16, description="Replicas when created.")
    team_index: str | None = Field(None, description="A team index file, imported when changed.")
    embedding_model: str = Field(
        "bundled:all-MiniLM-L6-v2",
        description=(
            "'bundled:all-MiniLM-L6-v2', 'ollama:<model>' (at llm.ollama_host) or a local "
            "sentence-transformers model folder."
        ),
    )
    embedding_batch_size: int | None = Field(
        None,
        ge=1,
        le=4096,
        description=(
            "Texts per model batch. Unset: 16 for a local model (on 2 cores the fastest and "
            "under half the activation memory of 64), 64 per Ollama /api/embed request."
        ),
    )
    embedding_runtime: Literal["auto", "torch", "onnx"] = Field(
        "auto",
        description="'auto': plain torch for a mean-pooling BERT, else onnxruntime when it can.",
    )
    embedding_precision: Literal["auto", "float32", "bfloat16"] = Field(
        "auto",
        description=(
            "Numeric path of a local embedding model on CPU: 'auto' uses bfloat16 only where the "
            "CPU has native bf16 and a timed probe shows it faster with the same vectors."
        ),
    )
    reranker: str | None = Field(
        None, description="Local sentence-transformers cross-encoder folder for reranking."
    )
    rerank_top_n: int = Field(30, ge=1, le=500)
    file_top_k: int = Field(20, ge=1, le=1000)
    function_top_k: int = Field(20, ge=1, le=1000)
    function_embed_files: int = Field(
        8, ge=0, le=1000, description="Phase 2 embeds functions of this many top files on demand."
    )
    function_embed_budget: int = Field(
        32, ge=0, le=100_000, description="At most this many function embeddings per query."
    )
    background_function_embeddings: bool = Field(
        True,
        description="After a sync, embed every function in the background (edited files first).",
    )
    call_graph_signal: bool = Field(
        False,
        description=(
            "Phase 2 lends the top functions' resolved callers and callees (Python call graph) "
            "a discounted score."
        ),
    )
    watch: bool = True
    debounce_ms: int = Field(150, ge=0, le=60_000)


class LLMSettings(_Section):
    provider: Literal["ollama", "llamacpp", "openai", "scripted"] = "ollama"
    ollama_host: str = "http://127.0.0.1:11434"
    model: str = Field(
        "qwen2.5-coder:7b",
        description=(
            "Default model for every role: an Ollama tag, a local model name for 'llamacpp' "
            "(`agentic-lsp models list`), or the served model name for 'openai'."
        ),
    )
    role_models: dict[str, str] = Field(default_factory=dict)
    timeout_s: float = Field(120.0, gt=0)
    temperature: float = Field(0.1, ge=0, le=2)
    gguf_path: str | None = Field(None, description="A GGUF file for 'llamacpp' (wins over model).")
    context_tokens: int = Field(
        8192,
        ge=512,
        le=262_144,
        description=(
            "Context window in tokens: the llamacpp model's, and Ollama's num_ctx sent with every "
            "request (Ollama's own default, 2k-4k, drops the oldest prompt tokens silently)."
        ),
    )
    max_tokens: int = Field(
        1024,
        ge=16,
        le=131_072,
        description=(
            "Most tokens one reply may take: llamacpp's max_tokens and Ollama's num_predict "
            "(repair samples set their own cap)."
        ),
    )
    base_url: str | None = Field(
        None, description="OpenAI-compatible endpoint for 'openai', e.g. http://127.0.0.1:8080/v1."
    )
    api_key_env: str | None = Field(
        None, description="Name of the environment variable holding the 'openai' API key."
    )
    openai_grammar: bool = Field(
        False,
        description=(
            "The 'openai' server takes llama.cpp's GBNF `grammar` field (llama.cpp's llama-server "
            "and llama-cpp-python's server do): repair samples send their grammar. Off: no "
            "grammar is sent (other servers reject or ignore it)."
        ),
    )
    script_path: str | None = None
    edit_format: Literal["auto", "search_replace", "definitions", "function"] = Field(
        "auto",
        description=(
            "How models are asked to write code edits: SEARCH/REPLACE blocks, whole "
            "definitions (functions, classes), or 'function': the repair path for small "
            "models (the harness picks one function, the model samples rewrites of it, the "
            "project's tests choose). 'auto': 'function' for small local models (llamacpp), "
            "'search_replace' otherwise; replies in either block format are accepted."
        ),
    )
    samples: int = Field(
        8,
        ge=1,
        le=32,
        description=(
            "Rewrites the repair path draws per attempt (the first greedy, the rest at "
            "sample_temperature with fixed seeds); fewer for large functions."
        ),
    )
    sample_temperature: float = Field(0.8, ge=0, le=2)
    repair_target: Literal["choice", "ranked"] = Field(
        "choice",
        description=(
            "When the task names no function, which one the repair path rewrites: 'choice', "
            "the model picks among retrieval's candidates for the first attempt (the next "
            "candidate is tried second); 'ranked', retrieval's order alone, a new function "
            "each attempt (no choice call)."
        ),
    )
    model_tools: Literal["auto", "on", "off"] = Field(
        "auto",
        description=(
            "Offer models the index tools (definition, references, search, read) before they "
            "answer. 'auto': off for small local models (llamacpp), on otherwise."
        ),
    )
    model_queries: Literal["auto", "on", "off"] = Field(
        "auto",
        description=(
            "Let the model write retrieval queries (on top of the task text). 'auto': off for "
            "small local models (llamacpp), on otherwise."
        ),
    )


class ChangesSettings(_Section):
    commit_on_accept: bool = True
    # Start accept commits' summary with a conventional prefix (fix:, feat:, refactor:,
    # docs:, test:, chore:) chosen from the paths and the run's workflow (changes/commit_kind.py).
    commit_prefixes: bool = False
    # Commit a run's accepted changes on agentic-lsp/run/<run-id> instead of writing the
    # working tree, which stays as it was with the index and HEAD (changes/run_branch.py).
    branch_per_run: bool = False


class MCPSettings(_Section):
    http_host: str = "127.0.0.1"
    http_port: int | None = Field(None, ge=0, le=65535)
    allowed_origins: list[str] = Field(default_factory=list)
    max_body_bytes: int = Field(1_000_000, ge=1_000)
    # The tools a stdio launch lists (agentic_lsp.mcp.tool_list): search, workflows or all.
    tools: Literal["search", "workflows", "all"] = "search"


class WorkflowSettings(_Section):
    test_command: str | None = None
    test_timeout_s: float = Field(300.0, gt=0)
    max_iterations: int = Field(3, ge=1, le=20)
    max_parallel_tickets: int = Field(
        2, ge=1, le=16, description="Tickets of a plan worked on at once, each in its worktree."
    )
    keep_runs: int = Field(
        200,
        ge=1,
        le=100_000,
        description="Finished runs kept (reports, events) in the workspace's cache; older ones "
        "are deleted. Runs still running, waiting or interrupted are always kept.",
    )
    sandbox_network: bool = Field(
        False,
        description="Let sandboxed commands (tests, linters) use the network. User-only setting.",
    )
    allow_unisolated: bool = Field(
        False,
        description=(
            "Run model-proposed code (tests, linters) before review even when no sandbox "
            "isolation (bubblewrap) is available. User-only setting."
        ),
    )


StandardFeature = Literal[
    "documentSymbol", "workspaceSymbol", "definition", "references", "hover", "callHierarchy"
]
_FEATURES = get_args(StandardFeature)


class LspSettings(_Section):
    # The standard providers advertised (read at initialize; trimmed next to another server).
    standard_features: list[StandardFeature] = Field(default_factory=lambda: [*_FEATURES])


class Settings(_Section):
    """All of agentic-lsp's settings. Unknown keys are errors (typos must not pass silently)."""

    cache_dir: str | None = Field(None, description="Where index data lives (default: XDG cache).")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    index: IndexSettings = Field(default_factory=IndexSettings)  # type: ignore[arg-type]
    llm: LLMSettings = Field(default_factory=LLMSettings)  # type: ignore[arg-type]
    changes: ChangesSettings = Field(default_factory=ChangesSettings)
    mcp: MCPSettings = Field(default_factory=MCPSettings)  # type: ignore[arg-type]
    workflows: WorkflowSettings = Field(default_factory=WorkflowSettings)  # type: ignore[arg-type]
    navigation: NavigationSettings = Field(default_factory=NavigationSettings)
    lsp: LspSettings = Field(default_factory=LspSettings)

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper_level(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value


@dataclass
class LoadedSettings:
    """Validated settings plus where each value came from (for ``doctor`` and error messages)."""

    settings: Settings
    sources: dict[tuple[str, ...], str] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)
    workspace: Path | None = None
    trusted: bool = False
    trust_source: str = "not trusted"  # what trusted it: the trust store or the editor
    ignored: list[Ignored] = field(default_factory=list)  # protected keys the repository set

    @property
    def warnings(self) -> list[str]:
        root = self.workspace or Path(".")
        return [item.message(root) for item in self.ignored]

    def source_of(self, *key: str) -> str:
        return self.sources.get(tuple(key), "default")


def user_config_path() -> Path:
    override = os.environ.get(ENV_PREFIX + "CONFIG")
    if override:
        return Path(override)
    return Path(platformdirs.user_config_dir("agentic-lsp")) / "config.toml"


def _error_source(loc: tuple[Any, ...], sources: dict[tuple[str, ...], str]) -> str:
    key = tuple(str(p) for p in loc)
    while key:
        if key in sources:
            return sources[key]
        key = key[:-1]
    # An unknown *section* records its leaves only; find any leaf below it.
    for path, src in sources.items():
        if path[: len(loc)] == tuple(str(p) for p in loc):
            return src
    return "default"


def load_settings(
    workspace: Path | None = None,
    *,
    init_options: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    user_file: Path | None = None,
) -> LoadedSettings:
    """Build settings from every layer. Raises :class:`ConfigError` naming key and source."""
    environ = os.environ if environ is None else environ
    merged: dict[str, Any] = {}
    sources: dict[tuple[str, ...], str] = {}
    files: list[Path] = []
    ignored: list[Ignored] = []
    options = dict(init_options or {})
    vouched = options.pop(INIT_OPTION, None)

    user_path = user_file or user_config_path()
    if user_path.is_file():
        merge(merged, read_toml(user_path), str(user_path), sources)
        files.append(user_path)
    trusted, trust_source = _trust(workspace, vouched, trust_store_path(user_path))
    if workspace is not None:
        layer, path = workspace_layer(workspace)
        if path is not None:
            label = f"{path} [tool.agentic-lsp]" if path.name == "pyproject.toml" else str(path)
            if not trusted:
                layer, ignored = split_repo_layer(layer, label)
            merge(merged, layer, label, sources)
            files.append(path)
    merge(merged, env_layer(environ), "environment", sources)
    if options:
        merge(merged, options, "initializationOptions", sources)

    try:
        settings = Settings.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, sources), "correct or remove the key shown") from None
    return LoadedSettings(settings, sources, files, workspace, trusted, trust_source, ignored)


def _trust(workspace: Path | None, vouched: Any, store: Path) -> tuple[bool, str]:
    """Whether the workspace's own file may set protected keys, and why (or why not).
    ``trustWorkspace`` from the editor decides when given; else the user's trust store."""
    if workspace is None:
        return False, "no workspace"
    if vouched is not None:
        if not isinstance(vouched, bool):
            raise ConfigError(
                f"{INIT_OPTION}: must be true or false (got {vouched!r}) — from "
                "initializationOptions",
                "correct or remove the key shown",
            )
        return vouched, "initializationOptions" if vouched else "not trusted by the editor"
    real = Path(os.path.realpath(workspace))
    inside = Path(os.path.realpath(store)).is_relative_to(real)
    if not inside and is_trusted(store, workspace):  # a repository's own file never counts
        return True, f"trust store {store}"
    return False, "not trusted"


def _describe(exc: ValidationError, sources: dict[tuple[str, ...], str]) -> str:
    lines = ["invalid configuration:"]
    for err in exc.errors():
        loc = tuple(err["loc"])
        key = ".".join(str(p) for p in loc)
        src = _error_source(loc, sources)
        if src == "environment":
            src = "environment variable " + ENV_PREFIX + "__".join(str(p).upper() for p in loc)
        msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
        value = err.get("input")
        shown = "" if err["type"] == "extra_forbidden" else f" (got {value!r})"
        lines.append(f"  {key}: {msg}{shown} — from {src}")
    return "\n".join(lines)


def cache_root(settings: Settings) -> Path:
    """Top of the index cache: ``cache_dir`` setting, else the XDG user cache dir."""
    if settings.cache_dir:
        return Path(settings.cache_dir).expanduser()
    return Path(platformdirs.user_cache_dir("agentic-lsp"))
