"""The shared pre-check for outside JSON: depth and size refused before decoding, cheaply, with
brackets inside strings ignored; the id of a refused request still found."""

from __future__ import annotations

import json
import time

import pytest

from agentic_lsp import json_limits
from agentic_lsp.json_limits import MAX_DEPTH, JsonLimitExceeded


def _nest(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 2_000, 100_000])
def test_deeper_than_the_limit_is_refused_before_decoding(depth: int) -> None:
    text = '{"id": 1, "params": ' + _nest(depth) + "}"
    with pytest.raises(JsonLimitExceeded, match=f"nested {depth + 1} levels"):
        json_limits.loads(text)


def test_the_limit_itself_decodes() -> None:
    assert json_limits.loads(_nest(MAX_DEPTH)) == json.loads(_nest(MAX_DEPTH))


def test_brackets_in_strings_do_not_count_and_escapes_are_honoured() -> None:
    text = json.dumps({"s": "[" * 5_000 + '\\"[{', "t": ["]]]\\"]})
    assert json_limits.depth(text) == 2
    assert json_limits.loads(text)["s"].startswith("[[[")
    assert json_limits.depth('"unterminated [[[[') == 0


def test_unbalanced_opening_is_as_deep_as_it_opens() -> None:
    assert json_limits.problem("[" * 1_000) is not None
    assert json_limits.problem(b"[" * 1_000) is not None


def test_size_limit() -> None:
    assert (
        json_limits.problem(b"[1]", max_bytes=2) == "JSON text of 3 bytes is over the 2-byte limit"
    )
    assert json_limits.problem("[\u00e9]", max_bytes=3) is not None  # counted in UTF-8 bytes
    assert json_limits.problem("[1]", max_bytes=3) is None


def test_a_megabyte_of_brackets_is_checked_quickly() -> None:
    worst = b"[" * 500_000 + b"]" * 500_000
    strings = json.dumps(["[" * 10] * 50_000).encode()
    started = time.perf_counter()
    assert json_limits.problem(worst) is not None
    assert json_limits.problem(strings) is None
    assert time.perf_counter() - started < 1.0


def test_request_id_of_a_refused_message() -> None:
    assert json_limits.request_id('{"jsonrpc": "2.0", "id": 7, "params": ' + _nest(999) + "}") == 7
    late = '{"params": {"id": 3, "x": ' + _nest(500) + '}, "id": "abc"}'
    assert json_limits.request_id(late) == "abc"  # a nested "id" is not the request's
    assert json_limits.request_id('{"method": "x", "params": ' + _nest(500) + "}") is None
    assert json_limits.request_id('{"id": 1.5}') is None
    assert json_limits.request_id("[" * 1_000) is None
