"""Component health for ``doctor``: the embedding model, the grammars, the index store.

Read-only looks (nothing is moved or rebuilt); each returns ``(status, detail, fix)`` with status
``"ok"``, ``"warn"`` or ``"FAIL"`` and never raises for an expected problem. Engine-level, so the
command line asks here instead of reaching into the index.

:func:`embedder_files_health` and ``store_health(probe=False)`` never load the embedding model
(nor import torch) and send nothing to an embedding server: ``doctor`` answers in about a second.
:func:`embedder_health` loads the model and embeds one text (``doctor --load-models``).
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path
from typing import Any

from agentic_lsp.config import NavigationSettings, Settings, cache_root
from agentic_lsp.errors import AgenticError
from agentic_lsp.index.embedding.model import (
    DEFAULT_OLLAMA_HOST,
    EmbedderUnavailable,
    embedding_model_id,
    is_ollama,
    load_embedder,
    model_dimension,
    model_folder,
)
from agentic_lsp.index.parsing.languages import CODE_LANGUAGES
from agentic_lsp.index.storage.opening import (
    meta_problem,
    open_store,
    recorded_dim,
    server_options,
)
from agentic_lsp.index.storage.vector_store import COLLECTIONS
from agentic_lsp.navigation.server_commands import (
    INSTALL_HINTS,
    LABELS,
    configured_commands,
    resolve_command,
)
from agentic_lsp.workspace import workspace_cache_dir

GRAMMARS = (*sorted(CODE_LANGUAGES), "markdown")


def embedder_health(
    spec: str, ollama_host: str = DEFAULT_OLLAMA_HOST, settings: Settings | None = None
) -> tuple[str, str, str]:
    """Load the embedding model (as ``settings`` configure it: runtime, precision) and embed one
    text (seconds: the model loads). An Ollama embedder is asked over HTTP: reachable, model
    pulled, a well-formed vector."""
    started = time.perf_counter()
    options: dict[str, Any] = {}
    if settings is not None:
        idx = settings.index
        options = {"precision": idx.embedding_precision, "runtime": idx.embedding_runtime,
                   "decisions": cache_root(settings) / "embedding-precision.json"}  # fmt: skip
    try:
        embedder = load_embedder(spec, ollama_host=ollama_host, **options)
        vector = embedder.embed(["def parse(text): ..."])[0]
    except EmbedderUnavailable as exc:
        return "FAIL", exc.message, exc.hint
    took = time.perf_counter() - started
    if is_ollama(spec):
        where = f"Ollama at {ollama_host}"
        return "ok", f"{embedder.model_id} on {where}, dim {len(vector)}, in {took:.1f}s", ""
    runtime = "onnxruntime" if getattr(embedder, "runtime", "") == "onnx" else "torch"
    on = f"{runtime} ({embedder.precision})"
    return "ok", f"{embedder.model_id} on {on}, dim {len(vector)}, loaded in {took:.1f}s", ""


_WEIGHTS = ("model.safetensors", "pytorch_model.bin", "model.onnx", "onnx/model.onnx")
_RUNTIME = ("torch", "sentence_transformers")


def embedder_files_health(
    spec: str, ollama_host: str = DEFAULT_OLLAMA_HOST
) -> tuple[str, str, str]:
    """What can be told about the embedding model without loading it: its files and dimension
    (read from its config), whether torch and sentence-transformers are installed (found, not
    imported). An Ollama embedder is not asked (that would make the server load it)."""
    later = "not loaded (`agentic-lsp doctor --load-models` loads it and embeds one text)"
    if is_ollama(spec):
        return "ok", f"{embedding_model_id(spec)} on Ollama at {ollama_host}; {later}", ""
    try:
        folder = model_folder(spec)
        dim = model_dimension(spec, ollama_host)
    except EmbedderUnavailable as exc:
        return "FAIL", exc.message, exc.hint
    except (OSError, ValueError) as exc:
        return "FAIL", f"cannot read the model's config in {spec}: {exc}", "reinstall the model"
    if not any((folder / name).is_file() for name in _WEIGHTS):
        return "FAIL", f"no model weights in {folder}", "reinstall the model package"
    missing = [name for name in _RUNTIME if importlib.util.find_spec(name) is None]
    if missing:
        return (
            "FAIL",
            f"{', '.join(missing)} not installed: dense search is unavailable",
            "install agentic-lsp with its dependencies (make install)",
        )
    return "ok", f"{embedding_model_id(spec)}, dim {dim}, files in {folder}; {later}", ""


def grammar_health() -> tuple[str, str, str]:
    """Whether every bundled tree-sitter grammar loads."""
    from tree_sitter_language_pack import get_parser

    missing = []
    for name in GRAMMARS:
        try:
            get_parser(name)  # type: ignore[arg-type]
        except Exception:  # a grammar that fails to load for any reason is "missing"
            missing.append(name)
    if missing:
        return (
            "FAIL",
            "cannot load: " + ", ".join(missing),
            "reinstall: pip install --force-reinstall 'tree-sitter-language-pack<1'",
        )
    return "ok", f"{len(GRAMMARS)} bundled grammars load", ""


def store_health(
    workspace: Path, settings: Settings, *, probe: bool = True
) -> tuple[str, str, str]:
    """(status, detail, fix) for the doctor table. Never raises. ``probe=False``: a remote
    (Ollama) embedder's dimension is taken from the store's meta instead of asking the server."""
    idx = settings.index
    model_id = embedding_model_id(idx.embedding_model)
    store_dir = workspace_cache_dir(workspace, settings) / "store"
    try:
        if not probe and is_ollama(idx.embedding_model):
            raise EmbedderUnavailable(f"{model_id} was not asked", "run doctor --load-models")
        dim = model_dimension(idx.embedding_model, settings.llm.ollama_host)
    except EmbedderUnavailable as exc:  # a remote embedder that is down: trust the store's meta
        recorded = recorded_dim(store_dir, model_id) if idx.store == "edge" else None
        if recorded is None and not store_dir.exists() and idx.store == "edge":
            return "ok", f"embedded Qdrant Edge; no index yet (will be at {store_dir})", ""
        if recorded is None:
            return "warn", f"cannot check the index store: {exc.message}", exc.hint
        dim = recorded
    if idx.store == "qdrant":
        if not idx.qdrant_url:
            return (
                "FAIL",
                "index.store = 'qdrant' but index.qdrant_url is empty",
                "set index.qdrant_url",
            )
        try:
            # the workspace's own tenant: the path names it, as when the server opens it
            opened = open_store(
                "qdrant", path=store_dir, dim=dim, model_id=model_id, **server_options(idx)
            )
        except AgenticError as exc:
            return "FAIL", f"Qdrant server: {exc.message}", exc.hint
        try:
            return "ok", f"Qdrant server {idx.qdrant_url}: {opened.store.count('files')} files", ""
        finally:
            opened.store.close()
    if not store_dir.exists():
        return "ok", f"embedded Qdrant Edge; no index yet (will be at {store_dir})", ""
    problem = meta_problem(store_dir, dim=dim, model_id=model_id)
    missing = [c for c in COLLECTIONS if not (store_dir / c).is_dir()]
    if problem or missing:
        why = problem or f"missing collections {missing}"
        return (
            "warn",
            f"index at {store_dir} cannot be reused ({why})",
            "nothing to do: the next `agentic-lsp index` or server start moves it aside "
            "and rebuilds",
        )
    aside = sorted(store_dir.parent.glob("store.corrupt-*"))
    note = f"; {len(aside)} damaged store(s) kept aside, delete them when you like" if aside else ""
    return "ok", f"embedded Qdrant Edge at {store_dir}{note}", ""


def scopes_health(workspace: Path, settings: Settings) -> tuple[str, str, str]:
    """The index scopes (``index.scopes``) and each scope's store: its files and functions,
    "not built yet", "in use" (a running server holds it) or why it will be rebuilt. Reads the
    store's own meta for the dimension: no model is loaded, nothing is moved."""
    from agentic_lsp.index.storage.scoped_opening import store_dirs

    idx = settings.index
    model_id = embedding_model_id(idx.embedding_model)
    parts, status = [], "ok"
    for scope, store_dir in store_dirs(idx, workspace_cache_dir(workspace, settings)).items():
        try:
            parts.append(f"{scope}: {_scope_counts(idx.store, store_dir, model_id, settings)}")
        except AgenticError as exc:
            status = "warn"
            parts.append(f"{scope}: cannot be read ({exc.message})")
    where = "Qdrant server tenants" if idx.store == "qdrant" else "one embedded store each"
    return status, f"{len(parts)} scopes ({where}): " + "; ".join(parts), ""


def _scope_counts(kind: str, store_dir: Path, model_id: str, settings: Settings) -> str:
    dim = recorded_dim(store_dir, model_id)
    if kind == "qdrant":
        dim = dim or model_dimension(settings.index.embedding_model, settings.llm.ollama_host)
        opened = open_store("qdrant", path=store_dir, dim=dim, model_id=model_id,
                            **server_options(settings.index))  # fmt: skip
        store = opened.store
    elif not store_dir.exists():
        return "not built yet"
    elif dim is None or meta_problem(store_dir, dim=dim, model_id=model_id):
        return "will be rebuilt (built for another model or schema)"
    else:
        from agentic_lsp.index.storage.edge import EdgeStore

        store = EdgeStore.load(store_dir, dim)
    try:
        return f"{store.count('files')} files, {store.count('functions')} functions"
    finally:
        store.close()


def language_server_health(settings: NavigationSettings) -> tuple[str, str, str]:
    """Whether each configured language server's program is installed (found, not started):
    without one, definitions and references of that language are name-based. A missing default
    (gopls where no Go is installed) is a note with its install line; a missing command the user
    chose is a warning."""
    if not settings.enabled:
        return "ok", "off (navigation.enabled = false): definitions and references by name", ""
    defaults = configured_commands(NavigationSettings())
    found, missing, fixes, chosen = [], [], [], False
    for server, command in configured_commands(settings).items():
        resolved = resolve_command(command)
        if resolved is None:
            missing.append(f"{LABELS[server]}: {command[0]} not found")
            fixes.append(INSTALL_HINTS.get(server, f"install {command[0]}"))
            chosen = chosen or command != defaults.get(server)
        else:
            found.append(f"{LABELS[server]}: {resolved[0]}")
    if missing:
        detail = "; ".join([*found, *missing]) + " (their answers fall back to name matches)"
        return ("warn" if chosen else "ok"), detail, "; ".join(fixes)
    if not found:
        return "ok", "no language server configured: definitions and references by name", ""
    return "ok", "; ".join(found), ""
