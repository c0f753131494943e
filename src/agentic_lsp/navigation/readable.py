"""A workspace file as a model or a client may read it: the one home of that policy.

Every path goes through :func:`~agentic_lsp.workspace.relative_to_workspace` (``..``, absolute
paths elsewhere, sibling prefixes, symlinks out, NUL, UNC and drive forms are refused); ``.git``
internals are never read; secret files are refused by the name asked for *and* by the name the
path resolves to, so a harmless looking symlink to ``.env`` is refused too. The text is the
editor's unsaved buffer when one is open, else the file on disk, with secret values redacted
(``index.redact_secrets``) either way. The MCP tools, the agents' workspace view and the
retrieval grounding all read through :class:`ReadableFiles`.

**One policy for every byte that leaves the engine.** Whatever workspace text or tool output is
shown to a model or a client goes through :meth:`ReadableFiles.redact` (file text) or
:meth:`ReadableFiles.redact_output` (command output, which also catches ``NAME=value`` pairs in
the middle of a line, as in a printed settings dump). The exits covered:

* file text: ``read_file``, search snippets, ``find_definition`` source, retrieval grounding
  and the agents' :class:`~agentic_lsp.agents.workspace_view.WorkspaceView` (:meth:`read`);
* occurrence previews of references (LSP ``textDocument/references``, MCP ``find_references``,
  the agents' index tools): :meth:`Navigation.references` passes :meth:`redact`, and secret
  files' buffers are never searched;
* changeset diffs in MCP replies and resources;
* test and linter output, agent outputs, errors and log lines of a workflow run: redacted where
  they enter the run (``workflows/stages.py``), so the failure context, the retry prompt, the
  stage results, the run report and its events only hold redacted text;
* values the policy found in the workspace's files (:attr:`ReadableFiles.known`, in memory
  only) are scrubbed wherever they reappear on their own — a failing test printing a password
  read from ``settings.py`` — by :meth:`redact`, :meth:`redact_output` and :meth:`scrub_known`
  (the run store and run replies); a run learns them before it starts (:meth:`learn_secrets`);
* the index itself: discovery skips secret files, also behind a symlink whose *target* is a
  secret or lies inside ``.git`` (``SkipReason.SECRET``), and ``read_indexable_text`` refuses
  them the same way.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from agentic_lsp.config import IndexSettings
from agentic_lsp.errors import WorkspaceError
from agentic_lsp.index.discovery.known_secrets import KnownSecrets
from agentic_lsp.index.discovery.secrets import REDACTED, is_secret_path, redact_secrets
from agentic_lsp.index.discovery.walk import read_indexable_text
from agentic_lsp.index.models import SkipReason
from agentic_lsp.workspace import relative_to_workspace

BuffersFn = Callable[[], Mapping[str, str]]

_REFUSALS = {
    SkipReason.SECRET: "it holds secrets; agentic-lsp never reads such files",
    SkipReason.BINARY: "it is a binary file",
    SkipReason.TOO_LARGE: "it is larger than index.max_file_bytes",
    SkipReason.UNREADABLE: "it does not exist or is not a readable regular file",
    SkipReason.SYMLINK_OUTSIDE: "it resolves outside the workspace",
}


# ``NAME=value`` / ``NAME: value`` anywhere in a line of command output (``redact_secrets`` only
# takes bare assignments at the start of a line, as source files write them).
_OUTPUT_PAIR = re.compile(
    r"(?P<key>(?<![A-Za-z0-9])[A-Za-z0-9_.-]*"
    r"(?:passw(?:or)?d|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key"
    r"|credentials?|auth)[A-Za-z0-9_]*[\"']?)(?P<op>[ \t]*[=:][ \t]*[\"']?)"
    r"(?P<value>[^\s'\"`,;(){}\[\]<>]{6,})",
    re.I,
)


def _no_buffers() -> Mapping[str, str]:
    return {}


class ReadableFiles:
    """Reads workspace files for models and clients; never writes."""

    def __init__(
        self, root: Path, settings: IndexSettings, buffers: BuffersFn | None = None
    ) -> None:
        self.root = root
        self.settings = settings
        self._buffers = buffers or _no_buffers
        self.known = KnownSecrets()  # the workspace's secret values, in memory only

    def buffers(self) -> Mapping[str, str]:
        """The engine's unsaved editor text by workspace path, now (a snapshot)."""
        return self._buffers()

    def location(self, path: str) -> str:
        """Workspace-relative POSIX path of a working-tree file (never inside ``.git``); raises
        WorkspaceError. Says nothing about whether its content may be read: see :meth:`path`."""
        rel = relative_to_workspace(self.root, path)
        if ".git" in PurePosixPath(rel).parts:
            raise WorkspaceError(f"{path!r} is inside .git", "ask for files of the working tree")
        return rel

    def path(self, path: str) -> str:
        """Workspace-relative POSIX path of a file whose text a model or client may read, after
        every check (:meth:`location`, secrets refused); raises WorkspaceError."""
        rel = self.location(path)
        if is_secret_path(path) or is_secret_path(rel):
            raise WorkspaceError(
                f"refusing to read {path!r}: {_REFUSALS[SkipReason.SECRET]}",
                "ask for a template (.env.example) or the code that reads the setting instead",
            )
        return rel

    def is_secret(self, rel: str) -> bool:
        """Whether ``rel`` names a file that holds secrets as a whole (never shown)."""
        return is_secret_path(rel)

    def redact(self, text: str) -> str:
        """``text`` as a model may see it (secret values replaced when redaction is on, the
        workspace's known secret values too, wherever they stand)."""
        if not self.settings.redact_secrets:
            return text
        found: list[tuple[str, str]] = []
        text = redact_secrets(text, found)[0]
        self.known.remember(found)
        return self.known.scrub(text)

    def redact_output(self, text: str) -> str:
        """Command output (tests, linters, agents) as a model or client may see it: :meth:`redact`
        plus values of secret-named ``NAME=value`` pairs anywhere in a line."""
        if not self.settings.redact_secrets or not text:
            return text
        text = _OUTPUT_PAIR.sub(lambda m: m["key"] + m["op"] + REDACTED, self.redact(text))
        return self.known.scrub(text)

    def scrub_known(self, value: Any) -> Any:
        """``value`` (text or JSON-like data) with the workspace's known secret values replaced:
        the last pass of what is persisted (the run store) and replied."""
        return self.known.scrub_value(value) if self.settings.redact_secrets else value

    def learn_secrets(self) -> int:
        """Remember the secret values of the workspace's files changed since the last call
        (blocking: call off the loop, e.g. before a run executes anything)."""
        return self.known.refresh(self.root, self.settings)

    def read(self, path: str, buffers: Mapping[str, str] | None = None) -> tuple[str, str]:
        """``(relative path, text)``: the unsaved buffer first (``buffers``, else the engine's),
        else the file; secrets redacted. Raises :class:`WorkspaceError` naming the reason."""
        rel = self.path(path)
        buffer = (self._buffers() if buffers is None else buffers).get(rel)
        if buffer is not None:
            return rel, self.redact(buffer)
        replaced: list[tuple[str, str]] = []
        found = read_indexable_text(self.root, rel, self.settings, replaced)
        if isinstance(found, SkipReason):
            reason = _REFUSALS.get(found, found.value)
            raise WorkspaceError(
                f"cannot read {rel!r}: {reason}", "check the path with search_files"
            )
        self.known.remember(replaced)
        return rel, self.scrub_known(found[0])

    def text_or_none(self, rel: str, buffers: Mapping[str, str] | None = None) -> str | None:
        """:meth:`read` for callers that skip what cannot be read (``None`` instead of raising)."""
        try:
            return self.read(rel, buffers)[1]
        except WorkspaceError:
            return None
