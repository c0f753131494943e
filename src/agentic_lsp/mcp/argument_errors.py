"""Argument errors a model can act on: what was wrong and one line saying how to fix it.

The SDK reports a bad call with pydantic's own dump (every error, its input, a documentation
URL); a model needs the argument's name, what is wrong with it, and the call to make instead.
Unknown arguments are refused here too (the SDK would drop them silently, so a misnamed
argument would look like a call that ignored the model's intent).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

# Arguments that an earlier release named differently: the fix line names the new one.
RENAMED = {("find_symbol", "query"): "name"}


def _signature(schema: Mapping[str, Any]) -> str:
    required = set(schema.get("required", []))
    names = [f"{n} (required)" if n in required else n for n in schema.get("properties", {})]
    return ", ".join(names) or "none"


def unknown_arguments(tool: str, arguments: Mapping[str, Any], schema: Mapping[str, Any]) -> str:
    """The message for arguments ``tool`` does not take, or ``""`` when there are none."""
    known = schema.get("properties", {})
    unknown = [name for name in arguments if name not in known]
    if not unknown:
        return ""
    name = unknown[0]
    renamed = RENAMED.get((tool, name))
    listed = ", ".join(f"`{n}`" for n in unknown)
    fix = (
        f"call {tool} again with `{renamed}` instead of `{name}`"
        if renamed
        else f"call {tool} again with only its arguments: {_signature(schema)}"
    )
    return f"{tool} has no argument {listed}.\nFix: {fix}."


def _constraint(error: Mapping[str, Any]) -> str:
    ctx = error.get("ctx") or {}
    kind = str(error.get("type", ""))
    bounds = {"greater_than_equal": "≥ {ge}", "less_than_equal": "≤ {le}",
              "greater_than": "> {gt}", "less_than": "< {lt}",
              "string_too_short": "at least {min_length} characters",
              "string_too_long": "at most {max_length} characters",
              "too_long": "at most {max_length} items",
              "string_pattern_mismatch": "matching {pattern}",
              "literal_error": "one of {expected}"}  # fmt: skip
    if kind in bounds:
        try:
            return bounds[kind].format(**ctx)
        except (KeyError, IndexError):
            pass
    if kind.endswith("_type") or kind.endswith("_parsing"):
        return f"a{'n' if kind[0] in 'aeiou' else ''} {kind.split('_')[0]}"
    return "a valid value"


def validation_message(tool: str, error: ValidationError, schema: Mapping[str, Any]) -> str:
    """``error`` (the SDK's argument validation) as a short message and one fix line."""
    problems: list[str] = []
    fix = ""
    for item in error.errors(include_url=False):
        name = ".".join(str(part) for part in item.get("loc", ())) or "arguments"
        if item.get("type") == "missing":
            problems.append(f"`{name}` is required")
            fix = fix or f"call {tool} again with `{name}`"
        else:
            problems.append(f"`{name}`: {item.get('msg', 'invalid')}")
            fix = fix or f"call {tool} again with `{name}` {_constraint(item)}"
    what = "; ".join(problems)
    return f"{tool}: invalid arguments: {what}.\nFix: {fix} (arguments: {_signature(schema)})."
