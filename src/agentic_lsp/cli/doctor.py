"""``agentic-lsp doctor``: check everything a user needs and print what to do about each problem.

Each check returns a :class:`Check`; a failing check never stops the others. Exit status is 1 when
any check failed (warnings do not count), so scripts can gate on it; ``--json`` prints the same
checks as one JSON object. No model is loaded (about a second): the embedding model's files,
dimension and runtime are checked without importing torch, the LLM provider's settings without
loading weights; ``--load-models`` also loads the embedding model and embeds one text.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from agentic_lsp import __version__
from agentic_lsp.config import LoadedSettings, load_settings
from agentic_lsp.errors import AgenticError

OK, WARN, FAIL = "ok", "warn", "FAIL"


@dataclass(frozen=True)
class Check:
    name: str
    status: str
    detail: str
    fix: str = ""


def check_python() -> Check:
    version = ".".join(map(str, sys.version_info[:3]))
    return Check("python", OK, f"{version} ({sys.executable})")


def check_config(workspace: Path) -> tuple[Check, LoadedSettings | None]:
    try:
        loaded = load_settings(workspace)
    except AgenticError as exc:
        return Check("config", FAIL, exc.message, exc.hint), None
    files = ", ".join(str(p) for p in loaded.files) or "defaults only"
    return Check("config", OK, files), loaded


def check_trust(workspace: Path, loaded: LoadedSettings) -> Check:
    """Whether the workspace's own settings file may set user-only keys, and which it tried."""
    state = f"trusted ({loaded.trust_source})" if loaded.trusted else loaded.trust_source
    if not loaded.ignored:
        return Check("workspace trust", OK, state)
    keys = ", ".join(f"{i.key} ({i.source})" for i in loaded.ignored)
    return Check(
        "workspace trust",
        WARN,
        f"{state}; ignored: {keys}",
        f"if you trust this repository: agentic-lsp trust {workspace.expanduser().resolve()}",
    )


def check_ollama(loaded: LoadedSettings) -> Check:
    llm = loaded.settings.llm
    if llm.provider != "ollama":
        return Check("ollama", OK, f"not used (llm.provider = {llm.provider})")
    from agentic_lsp.llm.ollama_health import probe_ollama

    probe = probe_ollama(llm.ollama_host, llm.model)
    if not probe.reachable:
        return Check("ollama", WARN, probe.problem + "; workflows need it", probe.fix)
    if not probe.model_present:
        return Check("ollama", WARN, probe.problem, probe.fix)
    return Check("ollama", OK, f"{llm.ollama_host} v{probe.version}, model {llm.model} present")


def check_local_models(loaded: LoadedSettings) -> Check:
    """Installed local models (verified), the llama.cpp runtime, the provider and the fallback."""
    from agentic_lsp.errors import ProviderError
    from agentic_lsp.llm import local_models as lm
    from agentic_lsp.llm.providers import fallback_candidate, local_gguf, resolve_provider

    llm = loaded.settings.llm
    installed = lm.installed_models()
    models = "; ".join(
        f"{m.name} at {p} ({p.stat().st_size:,} bytes, sha256 verified)" for m, p in installed
    )
    runtime = "llama_cpp importable" if lm.llama_cpp_importable() else "llama_cpp NOT importable"
    facts = [models or "no local model installed", runtime]
    provider = f"llm.provider = {llm.provider} ({loaded.source_of('llm', 'provider')})"
    install_fix = "agentic-lsp models install qwen2.5-coder-1.5b"
    if llm.provider == "llamacpp":
        try:
            path = local_gguf(llm)
        except ProviderError as exc:
            return Check("local models", FAIL, "; ".join([*facts, provider, exc.message]), exc.hint)
        return Check("local models", OK, "; ".join([*facts, provider, f"uses {path}"]))
    candidate = fallback_candidate(llm)
    if candidate is None:
        if llm.provider != "ollama" or "provider" in llm.model_fields_set:
            why = "llm.provider is set explicitly"
        else:
            why = "llama_cpp is missing" if installed else "no local model installed"
        fallback = f"no local fallback ({why})"
        fix = install_fix if llm.provider == "ollama" and not installed else ""
        return Check("local models", OK, "; ".join([*facts, provider, fallback]), fix)
    resolved = resolve_provider(llm)
    if resolved.note:
        return Check("local models", WARN, "; ".join([*facts, provider, resolved.note]))
    decision = f"Ollama answers; falls back to {candidate[0].name} when it does not"
    return Check("local models", OK, "; ".join([*facts, provider, decision]))


def check_sampling(loaded: LoadedSettings) -> Check:
    """What the provider in use does with the repair path's samples. The chat model is built but
    not used (no request is sent; a llamacpp model loads its weights only on first use)."""
    from agentic_lsp.errors import ProviderError
    from agentic_lsp.llm.providers import make_chat_model, resolve_provider
    from agentic_lsp.llm.sampling import capabilities

    resolved = resolve_provider(loaded.settings.llm).settings
    provider = resolved.provider
    try:
        # The provider named explicitly: the fallback rule was applied just now.
        model = make_chat_model(resolved.model_copy(update={"provider": provider}))
    except ProviderError as exc:
        return Check("sampling", WARN, f"unknown ({provider}): {exc.message}", exc.hint)
    return Check("sampling", OK, f"{capabilities(model).describe()} ({provider})")


def check_embedder(loaded: LoadedSettings, load: bool = False) -> Check:
    """The embedding model's files and runtime; with ``load`` the model itself (seconds)."""
    from agentic_lsp.health import embedder_files_health, embedder_health

    settings = loaded.settings
    spec, host = settings.index.embedding_model, settings.llm.ollama_host
    if load:
        return Check("embeddings", *embedder_health(spec, host, settings))
    return Check("embeddings", *embedder_files_health(spec, host))


def check_grammars() -> Check:
    from agentic_lsp.health import grammar_health

    return Check("grammars", *grammar_health())


def check_store(workspace: Path, loaded: LoadedSettings, probe: bool = False) -> Check:
    from agentic_lsp.health import scopes_health, store_health

    if loaded.settings.index.scopes:  # one store per scope: each one's counts
        return Check("index store", *scopes_health(workspace, loaded.settings))
    return Check("index store", *store_health(workspace, loaded.settings, probe=probe))


def check_language_servers(loaded: LoadedSettings) -> Check:
    from agentic_lsp.health import language_server_health

    return Check("language servers", *language_server_health(loaded.settings.navigation))


def check_git(workspace: Path) -> Check:
    import pygit2

    try:
        repo_path = pygit2.discover_repository(str(workspace))
    except pygit2.GitError:
        repo_path = None
    libgit2 = pygit2.LIBGIT2_VERSION
    if repo_path is None:
        return Check("git", OK, f"libgit2 {libgit2}; {workspace} is not a git repo (no commits)")
    return Check("git", OK, f"libgit2 {libgit2}; repo at {Path(repo_path).parent}")


def check_sandbox(loaded: LoadedSettings | None) -> Check:
    from agentic_lsp.agents.isolation import ENABLE_HINT, bwrap_status

    works, detail = bwrap_status()
    if works:
        return Check("sandbox", OK, detail)
    if loaded is not None and loaded.settings.workflows.allow_unisolated:
        return Check("sandbox", WARN, f"{detail}; model code runs UNISOLATED (allowed)")
    return Check(
        "sandbox", WARN, f"{detail}; model-written code will not run before review", ENABLE_HINT
    )


def check_clients(workspace: Path) -> list[Check]:
    """One line per client: whether its configuration starts agentic-lsp, and with what."""
    from agentic_lsp.cli.setup_clients import SetupEnv
    from agentic_lsp.cli.setup_status import client_statuses

    checks = []
    for status in client_statuses(SetupEnv.current(), workspace):
        fix = f"agentic-lsp setup {status.client}"
        if status.problem:
            detail = f"{status.detail}; {status.problem}"
            checks.append(Check(f"client {status.client}", WARN, detail, fix))
        else:
            hint = "" if status.configured else f"to use it: {fix}"
            checks.append(Check(f"client {status.client}", OK, status.detail, hint))
    return checks


def _guarded(name: str, fn: Callable[[], Check]) -> Check:
    try:
        return fn()
    except Exception as exc:  # the doctor reports, it does not crash
        return Check(name, FAIL, f"check crashed: {type(exc).__name__}: {exc}", "report a bug")


def run_checks(workspace: Path, load_models: bool = False) -> list[Check]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    checks = [check_python()]
    config_check, loaded = check_config(workspace)
    checks.append(config_check)
    if loaded is not None:
        checks.append(_guarded("workspace trust", lambda: check_trust(workspace, loaded)))
        checks.append(_guarded("ollama", lambda: check_ollama(loaded)))
        checks.append(_guarded("local models", lambda: check_local_models(loaded)))
        checks.append(_guarded("sampling", lambda: check_sampling(loaded)))
        checks.append(_guarded("embeddings", lambda: check_embedder(loaded, load_models)))
        checks.append(_guarded("index store", lambda: check_store(workspace, loaded, load_models)))
        checks.append(_guarded("language servers", lambda: check_language_servers(loaded)))
    checks.append(_guarded("grammars", check_grammars))
    checks.append(_guarded("git", lambda: check_git(workspace)))
    checks.append(_guarded("sandbox", lambda: check_sandbox(loaded)))
    try:
        checks += check_clients(workspace)
    except Exception as exc:  # the doctor reports, it does not crash
        checks.append(Check("clients", FAIL, f"check crashed: {exc}", "report a bug"))
    return checks


def run_doctor(workspace: Path, *, as_json: bool = False, load_models: bool = False) -> int:
    workspace = workspace.resolve()
    if not as_json:
        print(f"agentic-lsp {__version__} doctor — workspace {workspace}", flush=True)
    checks = run_checks(workspace, load_models)
    failed = [c for c in checks if c.status == FAIL]
    warned = [c for c in checks if c.status == WARN]
    if as_json:
        report = {
            "version": __version__,
            "workspace": str(workspace),
            "checks": [asdict(c) for c in checks],
            "failed": len(failed),
            "warnings": len(warned),
        }
        print(json.dumps(report, indent=2))
        return 1 if failed else 0
    width = max(len(c.name) for c in checks)
    for check in checks:
        print(f"[{check.status:^4}] {check.name:<{width}}  {check.detail}")
        if check.fix:
            print(f"       {'':<{width}}  fix: {check.fix}")
    print(f"{len(checks)} checks: {len(failed)} failed, {len(warned)} warnings")
    return 1 if failed else 0
