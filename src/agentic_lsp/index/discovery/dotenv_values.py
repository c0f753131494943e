"""The values assigned in dotenv-style secret files (``.env``, ``.env.local``, ``prod.env``): read
only so that :class:`~agentic_lsp.index.discovery.known_secrets.KnownSecrets` can scrub them where
they reappear (a failing test that loads ``DB_PASSWORD`` from ``.env`` and prints it). The files
themselves stay secret: never indexed, never shown, their text never leaves this module's caller.

A file is read under the rules of the rest of discovery: it must resolve inside the workspace
(a ``.env`` linking outside it, or into ``.git``, is not read), be a regular file no larger than
``index.max_file_bytes``, and not be binary. Its ``KEY=VALUE`` lines (``export KEY=VALUE``,
``KEY: VALUE``, quoted values, ``#`` comments) give the candidate values; one is learned when
:func:`learnable` says so:

* never a reference or a placeholder (``${OTHER}``, ``<your key>``, ``true``, ``changeme``), nor a
  value shorter than the caller's minimum;
* under a secret-named key (``DB_PASSWORD``, ``STRIPE_TOKEN``, ``SIGNING_KEY``, ``SENTRY_DSN``):
  any other value;
* under any other key, only what does not look like configuration: not a single word
  (``production``, ``postgres``), a number, an address or version (``127.0.0.1``, ``1.2.3``), a
  host name (``db.internal:5432``), a path, a URL (a URL's password is still found by the
  redaction rules the caller runs over the whole text) or text with spaces.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from agentic_lsp.config import IndexSettings
from agentic_lsp.errors import WorkspaceError
from agentic_lsp.index.discovery.secrets import is_secret_path
from agentic_lsp.workspace import resolve_in_workspace

HEAD_BYTES = 8192
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)

_LINE = re.compile(
    r"^[ \t]*(?:export[ \t]+)?(?P<key>[A-Za-z_][A-Za-z0-9_.-]*)[ \t]*[=:][ \t]*(?P<rest>.*)$"
)
_UNQUOTED_COMMENT = re.compile(r"(?:^|[ \t])#")
_SECRET_KEY = re.compile(
    r"passw|pwd|secret|token|api[_-]?key|apikey|private[_-]?key|credential|signing|salt|dsn"
    r"|_key$|^key$",
    re.I,
)
_REFERENCE = re.compile(r"^(?:\$\{[^}]*\}|\$[A-Za-z_]\w*|<[^>]*>|\{\{.*\}\}|\[[^\]]*\])$")
_NOT_SECRET = frozenset(
    {"true", "false", "yes", "no", "on", "off", "null", "none", "nil", "undefined", "localhost",
     "changeme", "change-me", "change_me", "example", "placeholder", "redacted", "secret",
     "password", "token", "dummy", "default", "[redacted]"}
)  # fmt: skip
_WORD = re.compile(r"^[A-Za-z]+(?:[-_.][A-Za-z]+)*$")
_NUMBERS = re.compile(r"^[\d.,:+-]+$")
_HOST = re.compile(r"^(?:[a-z0-9-]+(?:\.[a-z0-9-]+)+(?::\d+)?|[a-z0-9-]+:\d+)$")
_PATH = re.compile(r"^(?:/|\./|\.\./|~/)")


def is_dotenv_file(rel_path: str) -> bool:
    """Whether ``rel_path`` is a secret file of ``KEY=VALUE`` lines (``.env``, ``.env.prod``,
    ``prod.env``; not a template such as ``.env.example``, which is no secret file)."""
    name = rel_path.replace("\\", "/").rsplit("/", 1)[-1].lower()
    dotenv = name == ".env" or name.startswith(".env.") or name.endswith(".env")
    return dotenv and is_secret_path(rel_path)


def read_dotenv_file(root: Path, rel_path: str, settings: IndexSettings) -> str | None:
    """The text of the secret file ``rel_path``, for learning its values only (never to be
    shown); ``None`` when the rules of discovery (module docstring) forbid reading it."""
    try:
        path = resolve_in_workspace(root, rel_path)
    except WorkspaceError:
        return None  # a link out of the workspace
    inside = os.path.relpath(path, os.path.realpath(root)).replace(os.sep, "/")
    if ".git" in inside.split("/"):
        return None
    try:
        with open(os.open(path, _READ_FLAGS), "rb") as fh:
            info = os.fstat(fh.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size > settings.max_file_bytes:
                return None
            data = fh.read(settings.max_file_bytes + 1)
    except OSError:
        return None
    if len(data) > settings.max_file_bytes or b"\x00" in data[:HEAD_BYTES]:
        return None
    return data.decode("utf-8", errors="replace")


def assignments(text: str) -> list[tuple[str, str]]:
    """The ``(key, value)`` pairs of dotenv ``text``, values unquoted and without comments."""
    pairs: list[tuple[str, str]] = []
    for line in text.splitlines():
        match = _LINE.match(line)
        if match is None:
            continue
        rest = match["rest"].strip()
        if rest[:1] in ("'", '"', "`"):
            end = rest.find(rest[0], 1)
            value = rest[1:end] if end > 0 else rest[1:]
        else:
            value = _UNQUOTED_COMMENT.split(rest, maxsplit=1)[0].strip()
        pairs.append((match["key"], value))
    return pairs


def learnable(key: str, value: str, min_chars: int) -> bool:
    """Whether ``value``, assigned to ``key`` in a secret file, is remembered as a secret."""
    if len(value) < min_chars or value.lower() in _NOT_SECRET or _REFERENCE.match(value):
        return False
    if _SECRET_KEY.search(key):
        return True
    return not (
        any(c.isspace() for c in value)
        or "://" in value
        or _WORD.match(value)
        or _NUMBERS.match(value)
        or _HOST.match(value)
        or _PATH.match(value)
    )


def dotenv_values(text: str, min_chars: int) -> set[str]:
    """The values of dotenv ``text`` that :func:`learnable` keeps."""
    return {value for key, value in assignments(text) if learnable(key, value, min_chars)}
