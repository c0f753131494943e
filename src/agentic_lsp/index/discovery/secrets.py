"""Keep secrets out of the index and out of every prompt.

Two layers:

* :func:`is_secret_path` names files that are secret as a whole (``.env``, private keys,
  credential stores, terraform state). Discovery skips them with ``SkipReason.SECRET`` and
  :func:`~agentic_lsp.index.discovery.walk.read_indexable_text` refuses them.
* :func:`redact_secrets` replaces secret *values* inside ordinary files with ``[REDACTED]``:
  private-key blocks, well-known token formats, credentials in URLs, values assigned to
  password/secret/token/api-key names, and long high-entropy strings.

Guarantees: the number of lines never changes (line numbers in the index stay right); names are
kept and only values are replaced; running it twice redacts nothing more. Deliberately *not*
redacted: UUIDs (identifiers, not secrets), hex digests next to a hash word (``sha256``,
``commit``, ``integrity``, ``@`` pins, …), URLs without a password, paths, placeholders such as
``<token>``, ``${TOKEN}``, ``{{ secrets.X }}``, ``changeme``, and assigned strings containing
spaces (messages, not secrets). Passphrases with spaces are the known false negative.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from agentic_lsp.index.discovery import secret_prefilters as prefilters
from agentic_lsp.index.discovery.entropy import looks_random

REDACTED = "[REDACTED]"

# ---------------------------------------------------------------------------- secret files

_SECRET_NAMES = frozenset(
    {
        ".env",
        ".envrc",
        ".npmrc",
        ".yarnrc.yml",
        ".pypirc",
        ".netrc",
        "_netrc",
        ".git-credentials",
        ".htpasswd",
        ".pgpass",
        ".s3cfg",
        ".boto",
        ".vault_pass",
        "secrets.yaml",
        "secrets.yml",
        "secrets.json",
        "secrets.toml",
    }
)
_SECRET_SUFFIXES = (
    ".env",
    ".pem",
    ".key",
    ".p12",
    ".pfx",
    ".p8",
    ".jks",
    ".keystore",
    ".kdbx",
    ".ppk",
    ".tfvars",
    ".tfstate",
    ".tfstate.backup",
)
_SSH_KEY_PREFIXES = ("id_rsa", "id_dsa", "id_ecdsa", "id_ed25519")
_TEMPLATE_SUFFIXES = (".example", ".sample", ".template", ".dist", ".defaults", ".tmpl")
_SECRET_PATH_TAILS = (
    (".aws", "credentials"),
    (".docker", "config.json"),
    (".kube", "config"),
)
_SECRET_DIRS = frozenset({".ssh", ".gnupg"})


def is_secret_path(rel_path: str) -> bool:
    """True when the file at ``rel_path`` holds secrets as a whole and must never be read.

    Matching is by name, case-insensitive. Templates (``.env.example``, ``.env.sample``,
    ``.env.template``, ``secrets.yaml.example``) and public keys (``id_rsa.pub``) are allowed.
    """
    path = rel_path.replace("\\", "/").lower().strip("/")
    name = path[path.rfind("/") + 1 :]
    if name.endswith(_TEMPLATE_SUFFIXES) or name.endswith(".pub"):
        return False
    if name in _SECRET_NAMES or name.startswith(".env.") or name.endswith(_SECRET_SUFFIXES):
        return True
    if name.startswith(_SSH_KEY_PREFIXES):
        return True
    if name.endswith(".json") and (
        name.startswith(("credentials", "client_secret"))
        or "service-account" in name
        or "service_account" in name
    ):
        return True
    if "/." not in "/" + path:  # the remaining rules are about hidden folders
        return False
    parts = path.split("/")
    if any(tuple(parts[-2:]) == tail for tail in _SECRET_PATH_TAILS):
        return True
    return any(part in _SECRET_DIRS for part in parts[:-1])


# ---------------------------------------------------------------------------- redaction

_PEM_BLOCK = re.compile(
    r"(?P<begin>-----BEGIN (?P<label>[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?)-----)"
    r"(?P<body>[A-Za-z0-9+/=\s:,.\\-]*?)"  # base64, armor headers, JSON-escaped \n
    r"(?P<end>-----END (?P=label)-----)"
)

_AWS_KEY_PREFIXES = (
    *("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA"),
    *("AIPA", "ANPA", "ANVA", "AROA", "APKA", "ASCA"),
)
# (literals one of which must occur, pattern): the literal check skips most files cheaply. It is
# one search of the literals as alternatives: twelve ``in`` tests for the AWS prefixes took 20×
# as long as one search for them (0.25 s against 0.013 s over Django's 35 MB).
_TOKEN_RULES: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...] = tuple(
    (re.compile("|".join(map(re.escape, literals))), re.compile(pattern))
    for literals, pattern in (
        (
            _AWS_KEY_PREFIXES,
            r"\b(?:" + "|".join(_AWS_KEY_PREFIXES) + r")[A-Z0-9]{16}\b",
        ),
        (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"\bgh[pousr]_[A-Za-z0-9]{36,255}\b"),
        (("github_pat_",), r"\bgithub_pat_[A-Za-z0-9_]{22,255}\b"),
        (("glpat-",), r"\bglpat-[A-Za-z0-9_-]{20,}"),
        (("xox",), r"\bxox[abposre]-[A-Za-z0-9-]{10,}"),
        (("hooks.slack.com",), r"(?<=hooks\.slack\.com/services/)[A-Za-z0-9/]{20,}"),
        (("k_live_", "k_test_"), r"\b[sr]k_(?:live|test)_[A-Za-z0-9]{16,}\b"),
        (("whsec_",), r"\bwhsec_[A-Za-z0-9]{24,}\b"),
        (("AIza",), r"\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"),
        (("eyJ",), r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
        (("sk-ant-",), r"\bsk-ant-[A-Za-z0-9]+-[A-Za-z0-9_-]{32,}"),
        (("sk-",), r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{32,}"),
        (("T3BlbkFJ",), r"\bsk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}\b"),
        (("npm_",), r"\bnpm_[A-Za-z0-9]{36}\b"),
        (("pypi-",), r"\bpypi-AgE[A-Za-z0-9_-]{50,}"),
        (("hf_",), r"\bhf_[A-Za-z0-9]{30,}\b"),
        (("SG.",), r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b"),
    )
)

_URL_CREDENTIALS = re.compile(
    r"\b(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@\"'<>]+:)(?P<value>[^\s@/\"'<>]+)@"
)
_AUTH_HEADER = re.compile(
    r"\b(?P<head>(?:Bearer|Basic|Token)\s+)(?P<value>[A-Za-z0-9._~+/-]{16,}=*)"
)

_KEY_WORDS = (
    r"(?:passw(?:or)?d|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key"
    r"|client[_-]?secret|secret[_-]?key|auth[_-]?key|signing[_-]?key|encryption[_-]?key"
    r"|master[_-]?key|session[_-]?key|credentials?|connection[_-]?string)"
)
# Cheap pre-check on lower-cased text: a secret-ish name right before an assignment operator.
_KEY_HINT = re.compile(r"(?:passw(?:or)?d|secret|token|key|credentials?|string)[\"']?\s*(?::|=)")
_QUOTED_ASSIGNMENT = re.compile(
    r"(?P<kw>" + _KEY_WORDS + r")(?![A-Za-z0-9_])"
    r"[\"']?\s*(?:(?::\s*[A-Za-z_][\w.\[\]|, ]*?\s*)?=(?!=)|:=|=>|:)\s*[bBrRuU]{0,2}"
    r"(?:\"(?P<v1>[^\"\n]*)\"|'(?P<v2>[^'\n]*)'|`(?P<v3>[^`\n]*)`)",
    re.I,
)
_BARE_ASSIGNMENT = re.compile(
    r"^[ \t]*(?:-[ \t]+)?(?:export[ \t]+)?"
    r"(?P<key>[A-Za-z0-9_.-]*(?P<kw>" + _KEY_WORDS + r"))[\"']?"
    r"(?P<op>[ \t]*[:=][ \t]*)"
    r"(?P<value>[^\s'\"`#;,(){}\[\]<>]+)[ \t\r]*(?:#.*)?$",
    re.I,
)

_PLACEHOLDER = re.compile(
    r"^(?:<[^>]*>|\[[^\]]*\]|\{\{.*\}\}|\$\{.*\}|\$\(.*\)|\$[A-Za-z_]\w*"
    r"|\{[\w.]*\}|[*xX.#_-]+|changeme|change[_-]me|(?:your|my)[_-].*|redacted|dummy|example"
    r"|pass|passw(?:or)?d|pwd|secret|token|value|placeholder|test|foo|bar|baz"
    r"|#[0-9a-fA-F]{3,8}|\|[^|]*\|"
    r"|null|none|nil|true|false|yes|no|on|off|undefined|~)$"
    r"|\.\.\.|…|<[^>]*>|EXAMPLE",
    re.I,
)
_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")
_FORMAT_SPEC = re.compile(r"%(?:\(\w+\))?[sdr]|\{\w*\}")
# snake_case, __dunder__, PascalCase and camelCase words: names and messages, not secrets
_NAME_SHAPED = re.compile(
    r"^(?:_+[a-z]+_+|[a-z]{2,}(?:_[a-z]{2,})+|(?:[A-Z][a-z]{2,}){2,}|[a-z]{2,}(?:[A-Z][a-z]{2,})+)$"
)
_NUMBER_LIKE = re.compile(r"^[\d.+-]+$")
_PATH_LIKE = re.compile(r"^(?:/|\./|\.\./|~/|[A-Za-z]:\\)|^[\w.-]+(?:/[\w.-]+)+\.\w{1,5}$")
# standard base64 of 24+ bytes (an AWS secret key): may start with "/", yet is no path
_BASE64_RUN = re.compile(r"^[A-Za-z0-9+/]{32,}={0,2}$")
_TYPE_WORDS = frozenset(
    {"str", "string", "int", "bool", "boolean", "number", "bytes", "any", "unknown", "object"}
)
_PASCAL_WORD = re.compile(r"^(?:[A-Z][a-z]{2,})+$")
_NAME_VOWEL_SHARE = 0.3  # English words are ~40% vowels, random letters ~19%
_CODE_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z_]*(?:\.[A-Za-z_]\w*)*$")
_NAME_WITH_DASHES = re.compile(r"^[A-Za-z_][A-Za-z_-]*$")
_DOTTED_NAME = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")
_ENV_KEY = re.compile(r"^[A-Z][A-Z0-9_]*$")

_CANDIDATE = re.compile(r"(?<![A-Za-z0-9+/_.-])[A-Za-z0-9+/_-]{32,}={0,3}(?![A-Za-z0-9+/=_-])")
_HASH_WORDS = re.compile(
    r"sha-?\d*|md5|blake2|hash|digest|checksum|integrity|commit|revision|\brev\b|etag|\boid\b"
    r"|fingerprint|_id\b|\bid\b|fromhex|unhexlify",
    re.I,
)
_DIGEST_PREFIX = re.compile(r"(?:[@#]|%40|/(?:tree|blob|commit)/|base64,|sha\d+[-:=])$", re.I)
_DIGEST_TOKEN = re.compile(r"sha\d+-", re.I)  # subresource integrity: sha512-<base64>
_FILE_SUFFIX = re.compile(r"\.[A-Za-z]\w{0,4}\b|\(")  # a file extension, or a call
_RUN_BEFORE = re.compile(r"[^\s\"'`(<\[]*$")
_CONTEXT_CHARS = 120


def redact_secrets(text: str, found: list[tuple[str, str]] | None = None) -> tuple[str, int]:
    """Return ``text`` with secret values replaced by ``[REDACTED]``, and how many were; each
    replacement is appended to ``found`` as ``(matched text, its replacement)`` when given.

    The result has exactly as many lines as ``text``. Cost is about one regex pass per rule;
    the rules whose literal prefix is absent from the text are skipped.
    """
    if not text:
        return text, 0
    count = 0

    def counted(replace: Callable[[re.Match[str]], str | None]) -> Callable[[re.Match[str]], str]:
        def sub(match: re.Match[str]) -> str:
            nonlocal count
            new = replace(match)
            if new is None:
                return match.group(0)
            count += 1
            if found is not None:
                found.append((match.group(0), new))
            return new

        return sub

    if "PRIVATE KEY" in text:
        text = _PEM_BLOCK.sub(counted(_redact_pem), text)
    if prefilters.may_hold_url_credentials(text):
        text = _URL_CREDENTIALS.sub(counted(_redact_group("value")), text)
    for literals, pattern in _TOKEN_RULES:
        if literals.search(text):
            text = pattern.sub(counted(lambda m: REDACTED), text)
    if "Bearer" in text or "Basic" in text or "Token" in text:
        text = _AUTH_HEADER.sub(counted(_redact_auth_header), text)
    text = _redact_assignments(text, counted(_redact_quoted), counted(_redact_bare))
    if prefilters.may_hold_candidate(text):
        text = _CANDIDATE.sub(counted(_redact_high_entropy(text)), text)
    return text, count


def _redact_assignments(
    text: str, quoted: Callable[[re.Match[str]], str], bare: Callable[[re.Match[str]], str]
) -> str:
    """Run the assignment rules on the lines that mention a secret-ish name, only."""
    lower = text.lower()
    if len(lower) != len(text):  # a few Unicode letters change length when lower-cased
        lower = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    pieces: list[str] = []
    done = 0
    for hint in _KEY_HINT.finditer(lower):
        if hint.start() < done:
            continue
        start = text.rfind("\n", 0, hint.start()) + 1
        end = text.find("\n", hint.end())
        end = len(text) if end < 0 else end
        line = _QUOTED_ASSIGNMENT.sub(quoted, text[start:end])
        line = _BARE_ASSIGNMENT.sub(bare, line)
        pieces.append(text[done:start])
        pieces.append(line)
        done = end
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


def _redact_pem(match: re.Match[str]) -> str:
    body = match.group("body")
    newlines = body.count("\n")
    new_body = "\n" + REDACTED + "\n" * (newlines - 1) if newlines else REDACTED
    return match.group("begin") + new_body + match.group("end")


def _redact_group(group: str) -> Callable[[re.Match[str]], str | None]:
    def replace(match: re.Match[str]) -> str | None:
        value = match.group(group)
        if _is_benign_value(value):
            return None
        start, end = match.span(group)
        whole = match.group(0)
        base = match.start(0)
        return whole[: start - base] + REDACTED + whole[end - base :]

    return replace


def _redact_auth_header(match: re.Match[str]) -> str | None:
    value = match.group("value")
    digits_and_letters = any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
    long_mixed_case = (
        len(value) >= 20 and any(c.isupper() for c in value) and any(c.islower() for c in value)
    )
    if not (digits_and_letters or long_mixed_case):
        return None  # prose such as "Token dispatch/combine", not a credential
    return _redact_group("value")(match)


def _redact_quoted(match: re.Match[str]) -> str | None:
    group = next(g for g in ("v1", "v2", "v3") if match.group(g) is not None)
    value = match.group(group)
    if len(value) < 4 or any(c.isspace() for c in value) or _is_benign_value(value):
        return None
    if "{" in value or "\\" in value or "://" in value or _is_path(value):
        return None
    if "[" in value and "]" in value:  # a regular expression or a template
        return None
    if _names_itself(value, match.group("kw")):
        return None  # ``CHALLENGE_PASSWORD: "challengePassword"``: a name, not a secret
    return _redact_group(group)(match)


def _redact_bare(match: re.Match[str]) -> str | None:
    value = match.group("value")
    op = match.group("op")
    if len(value) < 4 or _is_benign_value(value) or value[0] in "!&*$%@":
        return None
    if "://" in value or _is_path(value):
        return None
    if _DOTTED_NAME.match(value) or _names_itself(value, match.group("kw")):
        return None  # ``token=response.token``, ``password: password``: code
    if op.strip() == ":":
        if value.lower() in _TYPE_WORDS or _PASCAL_WORD.match(value):
            return None
    elif _CODE_IDENTIFIER.match(value) and not _ENV_KEY.match(match.group("key")):
        return None  # ``token = other_name``: code; ``DB_PASSWORD=hunter`` is configuration
    return _redact_group("value")(match)


def _is_path(value: str) -> bool:
    """Path-shaped, and not a base64 run of mixed case and digits that merely starts with "/"."""
    if not _PATH_LIKE.match(value):
        return False
    mixed = any(c.isdigit() for c in value) and value.lower() != value != value.upper()
    return not (mixed and _BASE64_RUN.match(value))


def _names_itself(value: str, keyword: str) -> bool:
    """A letters-only value that contains the key's own word is a name or a placeholder."""
    squashed = keyword.lower().replace("_", "").replace("-", "")
    if _NAME_WITH_DASHES.match(value) is None:
        return False
    return squashed in value.lower().replace("_", "").replace("-", "")


def _is_benign_value(value: str) -> bool:
    return (
        REDACTED in value
        or _PLACEHOLDER.search(value) is not None
        or _ENV_NAME.match(value) is not None
        or (_NAME_SHAPED.match(value) is not None and _vowel_share(value) >= _NAME_VOWEL_SHARE)
        or _NUMBER_LIKE.match(value) is not None
        or _is_format_template(value)
    )


def _is_format_template(value: str) -> bool:
    """``"%s:%s"``, ``"%(user)s"``: only format fields and punctuation."""
    rest = _FORMAT_SPEC.sub("", value)
    return rest != value and not any(c.isalnum() for c in rest)


def _vowel_share(value: str) -> float:
    letters = [c for c in value if c.isalpha()]
    return sum(1 for c in letters if c in "aeiouAEIOU") / max(1, len(letters))


def _redact_high_entropy(text: str) -> Callable[[re.Match[str]], str | None]:
    def replace(match: re.Match[str]) -> str | None:
        token = match.group(0)
        if _DIGEST_TOKEN.match(token) or "EXAMPLE" in token or not looks_random(token):
            return None
        start = match.start()
        line_start = text.rfind("\n", 0, start) + 1
        run = _RUN_BEFORE.search(text, line_start, start)
        before = run.group(0) if run else ""
        url_tail = before[before.rfind("://") :] if "://" in before else ""
        if _DIGEST_PREFIX.search(before) or (url_tail and not any(c in url_tail for c in "?=&")):
            return None  # a pinned revision, a data URI, or a path inside a URL
        if _FILE_SUFFIX.match(text, match.end()):
            return None  # a file name or an include path: ``ATen/native/IndexMath.h``
        if _HASH_WORDS.search(text, max(0, start - _CONTEXT_CHARS), start):
            return None
        return REDACTED

    return replace
