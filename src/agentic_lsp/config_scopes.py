"""``index.scopes``: the workspace subtrees a monorepo's index covers (one module of
:mod:`agentic_lsp.config`, which validates the setting with :func:`normal_scopes`).

A scope is a folder path relative to the workspace, written with ``/``. The check is strict
because a scope names a folder of the cache (its store) and decides what is walked: a path that
leaves the workspace, an absolute path, or two scopes where one holds the other (a file would
belong to both stores) are errors, not guesses.
"""

from __future__ import annotations

from typing import Any


def normal_scopes(value: Any) -> list[str]:
    """The scopes, each normalised (``./a/b/`` -> ``a/b``) and sorted; raises ``ValueError``
    (shown as a settings error naming the key and its source) for anything unusable."""
    if not isinstance(value, list | tuple):
        raise ValueError("must be a list of workspace-relative folders, e.g. ['services/api']")
    scopes: list[str] = []
    for item in value:
        scope = _normal_scope(item)
        if scope in scopes:
            raise ValueError(f"scope {scope!r} is listed twice")
        scopes.append(scope)
    for outer in scopes:
        inner = next((s for s in scopes if s.startswith(outer + "/")), None)
        if inner is not None:
            raise ValueError(f"scope {inner!r} lies inside scope {outer!r}; list only one of them")
    return sorted(scopes)


def _normal_scope(item: Any) -> str:
    if not isinstance(item, str):
        raise ValueError(f"a scope must be a string, got {item!r}")
    text = item.strip()
    if not text:
        raise ValueError("a scope must not be empty")
    if "\\" in text:
        raise ValueError(f"scope {item!r}: write folders with '/', not '\\'")
    if text.startswith("/") or (len(text) > 1 and text[1] == ":"):
        raise ValueError(f"scope {item!r} is absolute; give a folder relative to the workspace")
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ValueError(f"scope {item!r} leaves the workspace ('..')")
    if not parts:
        raise ValueError(
            f"scope {item!r} is the whole workspace; leave index.scopes empty to index it all"
        )
    return "/".join(parts)


def scope_of(path: str, scopes: list[str] | tuple[str, ...]) -> str | None:
    """The scope holding the workspace-relative ``path``, or ``None``. Also takes a point key:
    every key starts with its file's path (``a/b.py``, ``a/b.py::f:function``, ``a/b.md#2``)."""
    for scope in scopes:
        if path.startswith(scope + "/"):
            return scope
    return None
