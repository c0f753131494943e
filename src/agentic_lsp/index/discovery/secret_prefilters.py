"""Exact prefilters for two redaction rules of :mod:`.secrets`: cheap checks for what every
match of a rule needs, so the rule's full regex runs only on the texts that may match (most
source files hold neither). A prefilter may say yes wrongly, never no."""

from __future__ import annotations

import re

# What every credential-bearing URL holds from its "://" on: a search that starts at a literal,
# so a file of plain URLs is passed over in one fast scan (the full rule tries every word).
_URL_CREDENTIALS_TAIL = re.compile(r"://[^\s:/@\"'<>]+:[^\s@/\"'<>]+@")

# A high-entropy candidate is a run of 32 or more of these characters: with them mapped to "a"
# and every other byte to a space, a substring search finds whether a text has such a run.
_CANDIDATE_BYTES = bytes(
    ord("a") if re.fullmatch(r"[A-Za-z0-9+/_-]", chr(b)) else ord(" ") for b in range(256)
)
CANDIDATE_RUN = 32


def may_hold_url_credentials(text: str) -> bool:
    """Whether ``text`` may hold ``scheme://user:secret@`` (the URL-credentials rule)."""
    return "://" in text and _URL_CREDENTIALS_TAIL.search(text) is not None


def may_hold_candidate(text: str) -> bool:
    """Whether ``text`` has a run of :data:`CANDIDATE_RUN` characters a high-entropy candidate
    is made of (non-ASCII characters encode to bytes outside the set)."""
    data = text.encode("utf-8", "surrogatepass").translate(_CANDIDATE_BYTES)
    return b"a" * CANDIDATE_RUN in data
