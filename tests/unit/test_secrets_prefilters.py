"""The cheap checks that let redaction skip a rule's full regex never skip a text the rule would
change: redacting with them gives the same text and count as running every rule everywhere.

Texts are real files (this project's sources and tests, whose fixtures hold fake secrets) and
generated ones dense in what the rules look for: random base64 runs of exactly the length a
candidate needs, at the start, the end and beside non-ASCII characters, and credentials in
URLs, each beside near misses.
"""

from __future__ import annotations

import base64
import random
from pathlib import Path

import pytest

from agentic_lsp.index.discovery import secret_prefilters as prefilters
from agentic_lsp.index.discovery.secret_prefilters import may_hold_candidate
from agentic_lsp.index.discovery.secrets import redact_secrets

ROOT = Path(__file__).resolve().parents[2]


def _unfiltered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prefilters, "may_hold_candidate", lambda text: True)
    monkeypatch.setattr(prefilters, "may_hold_url_credentials", lambda text: True)


def _generated(seed: int) -> list[str]:
    rng = random.Random(seed)
    alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

    def token(n: int) -> str:
        raw = base64.b64encode(rng.randbytes(n)).decode().rstrip("=")
        return raw[:n] if len(raw) >= n else raw + "".join(rng.choices(alnum, k=n - len(raw)))

    pieces = [
        lambda: token(32),
        lambda: token(31),
        lambda: token(33) + "==",
        lambda: "é" + token(32) + "ü",
        lambda: "\ud800" + token(32),
        lambda: f"https://user:{token(14)}@host.example/x",
        lambda: f"postgres://first.last-1:{token(12)}+x@db.internal",
        lambda: f"https://host.example/{token(32)}",
        lambda: f"mailto:user@{token(8)}.org ://x:y@",
        lambda: "://" + rng.choice(["a:b", "a:@", ":b@", "a b:c@", "a:b c@"]),
        lambda: rng.choice([" ", "\n", ".", "-", "_", "/", "+", "=", '"', "'", ":", "@"]),
        lambda: "".join(rng.choices(alnum + "_-/+", k=rng.randint(1, 40))),
    ]
    return ["".join(rng.choice(pieces)() for _ in range(rng.randint(1, 12))) for _ in range(400)]


def _real_texts() -> list[str]:
    paths = sorted((ROOT / "src").rglob("*.py")) + sorted((ROOT / "tests").rglob("*.py"))
    return [p.read_text("utf-8") for p in paths]


def test_prefilters_change_no_redaction(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = _generated(7) + _generated(11) + _real_texts()
    filtered = [redact_secrets(text) for text in texts]
    assert sum(count for _, count in filtered) > 100  # the texts do hold secrets to redact
    _unfiltered(monkeypatch)
    assert [redact_secrets(text) for text in texts] == filtered


def test_candidate_check_needs_a_run_of_32() -> None:
    run = "A1b2C3d4" * 4
    assert may_hold_candidate(run)
    assert may_hold_candidate(f"é{run}ü")
    assert may_hold_candidate(f"x = '{run[:16]}_{run[:15]}'")  # "_" is part of a run
    assert not may_hold_candidate(run[:31])
    assert not may_hold_candidate(f"{run[:16]}.{run[:16]}")  # "." is not
    assert not may_hold_candidate(f"{run[:16]}é{run[:16]}")
    assert not may_hold_candidate("")
