"""Symbols cross from parse workers to the server by pickle: every field comes back."""

from __future__ import annotations

import copy
import dataclasses
import pickle

from agentic_lsp.index.models import Symbol


def test_a_symbol_pickles_and_copies_with_every_field() -> None:
    symbol = Symbol("run", "Job.run", "method", 3, 9, 4, 8, "def run(self)", "Runs.", "Job")
    values = dataclasses.astuple(symbol)
    assert len(set(values)) == len(values)  # a field read into another's place would show
    for copied in (pickle.loads(pickle.dumps(symbol)), copy.copy(symbol), copy.deepcopy(symbol)):
        assert dataclasses.astuple(copied) == values
    assert (
        dataclasses.astuple(pickle.loads(pickle.dumps(dataclasses.replace(symbol, parent=None))))[
            -1
        ]
        is None
    )
