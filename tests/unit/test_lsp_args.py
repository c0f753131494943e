"""Command arguments as editors send them (Neovim turns an empty Lua table into [])."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from agentic_lsp.lsp.rpc import parse_args


class Args(BaseModel):
    limit: int = 5


def test_empty_list_is_an_empty_object() -> None:
    assert parse_args("agentic.x", Args, ([],), "{limit?: number}").limit == 5


def test_a_non_empty_list_is_still_refused() -> None:
    with pytest.raises(Exception, match="expects one object argument"):
        parse_args("agentic.x", Args, ([1],), "{limit?: number}")
