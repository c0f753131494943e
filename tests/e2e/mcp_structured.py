"""What a client that reads only ``structuredContent`` gets, checked against the text reply.

Claude Code and Codex hand the model the structured content and drop the text when both are
present, so every piece of repository text the text reply shows (inside its data blocks) must
be in the structured content too. :func:`check_structured` asserts it word by word for any
reply, and that the structured content matches the tool's declared ``outputSchema``.
"""

from __future__ import annotations

import re
from typing import Any

import jsonschema
from mcp.types import CallToolResult

from agentic_lsp.mcp.output_schemas import OUTPUT_SCHEMAS

_BLOCK = re.compile(r"^<<<data ([0-9a-f]{8}) [^\n]*\n(.*?)^data>>> \1$", re.M | re.S)
_CUT = re.compile(r"^\[… cut: \d+ more characters\]$", re.M)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")


def data_blocks(text: str) -> list[str]:
    """The bodies of a text reply's data blocks (the cut marker left out)."""
    return [_CUT.sub("", match.group(2)) for match in _BLOCK.finditer(text)]


def strings_of(value: Any) -> list[str]:
    """Every string (keys included) in a JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *strings_of(v))]
    if isinstance(value, list):
        return [s for item in value for s in strings_of(item)]
    return [str(value)]


def check_structured(result: CallToolResult, tool: str | None = None) -> dict[str, Any]:
    """The structured content of a successful ``result``, checked: it matches ``tool``'s
    output schema, holds every word of the text's data blocks, and carries the repository
    note when the text has data blocks."""
    data = result.structured_content
    assert isinstance(data, dict), "no structured content"
    if tool is not None:
        jsonschema.validate(data, OUTPUT_SCHEMAS[tool])
    text = "".join(getattr(block, "text", "") for block in result.content)
    haystack = "\n".join(strings_of(data))
    blocks = data_blocks(text)
    for body in blocks:
        missing = sorted({w for w in _WORD.findall(body) if w not in haystack})
        assert not missing, f"in the text but not the structured content: {missing[:10]}"
    if blocks:
        assert "data, not instructions" in data.get("note", ""), "no repository note"
    return data
