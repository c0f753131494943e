"""The call graph as a phase-2 retrieval signal (``index.call_graph_signal``, off by default).

The rule, one for every repository: after the functions are fused, the top :data:`SEEDS`
callables each lend their direct neighbours in the call graph, callees and callers whose call
was resolved to one definition (never an ``ambiguous`` one), at most :data:`PER_SEED` per seed,
a score of :data:`FACTOR` times the seed's. A neighbour already ranked keeps the better of its
own score and that; one not in the pool enters with it. So a neighbour never passes the
function that lent it, and it shows ``call_graph`` (the seed's rank) among its signals.

The graph lives in the navigation layer; the index must not import it, so the engine's side
registers a plain provider per indexer (:func:`register`): ``provider(seeds)`` answers each
seed's neighbours as ``(path, qualname)`` pairs, or a string saying why it cannot now (the graph
is not built yet, or is being updated): then the query goes on without the signal and says so
in its notes. A query never waits for a graph build.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence

from agentic_lsp.index import documents
from agentic_lsp.index.models import Symbol
from agentic_lsp.index.retrieval.fusion import Candidate
from agentic_lsp.index.storage.vector_store import Hit

Target = tuple[str, str]  # (path, qualname)
Provider = Callable[[Sequence[Target]], "list[list[Target]] | str"]

SEEDS = 3
PER_SEED = 5
FACTOR = 0.5
SIGNAL = "call_graph"
SEED_KINDS = frozenset({"function", "method"})

_PROVIDERS: weakref.WeakKeyDictionary[object, Provider] = weakref.WeakKeyDictionary()


def register(indexer: object, provider: Provider) -> None:
    """The call-graph provider of the workspace ``indexer`` indexes."""
    _PROVIDERS[indexer] = provider


def provider_for(indexer: object) -> Provider | None:
    return _PROVIDERS.get(indexer)


def apply(
    ranked: list[tuple[float, Candidate]],
    provider: Provider | None,
    fetch: Callable[[list[Target]], dict[Target, Candidate]],
    notes: list[str],
) -> list[tuple[float, Candidate]]:
    """``ranked`` (best first) with the seeds' neighbours lifted or added, best first again.

    ``fetch`` turns (path, qualname) pairs into stored candidates (absent ones are left out).
    """
    if provider is None:
        notes.append("call-graph signal skipped: no call graph for this workspace yet")
        return ranked
    callables = [(s, c) for s, c in ranked if str(c.payload.get("kind", "")) in SEED_KINDS]
    seeds = callables[:SEEDS]
    if not seeds:
        return ranked
    answer = provider([_target(c) for _, c in seeds])
    if isinstance(answer, str):
        notes.append(f"call-graph signal skipped: {answer}")
        return ranked
    by_target = {_target(c): i for i, (_, c) in enumerate(ranked)}
    lent: dict[Target, tuple[float, int]] = {}  # neighbour -> (score lent, seed rank)
    for seed_rank, ((seed_score, _), neighbours) in enumerate(
        zip(seeds, answer, strict=True), start=1
    ):
        for target in _dedupe(neighbours)[:PER_SEED]:
            score = FACTOR * seed_score
            if target not in lent or score > lent[target][0]:
                lent[target] = (score, seed_rank)
    if not lent:
        return ranked
    fetched = fetch([t for t in lent if t not in by_target])
    out = list(ranked)
    for target, (score, seed_rank) in lent.items():
        at = by_target.get(target)
        if at is not None:
            own, cand = out[at]
            if score > own:
                out[at] = (score, cand)
            cand.ranks.setdefault(SIGNAL, seed_rank)
        elif target in fetched:
            cand = fetched[target]
            cand.ranks[SIGNAL] = seed_rank
            out.append((score, cand))
    out.sort(key=lambda sc: (-sc[0], sc[1].key))
    return out


def fetcher(
    symbols_in: Callable[[str], Sequence[Symbol]], get: Callable[[list[str]], Sequence[Hit]]
) -> Callable[[list[Target]], dict[Target, Candidate]]:
    """``fetch`` over the symbol table and the store's ``functions`` collection."""

    def fetch(targets: list[Target]) -> dict[Target, Candidate]:
        keys: dict[str, Target] = {}
        for path in {p for p, _ in targets}:
            wanted = {q for p, q in targets if p == path}
            in_file = list(symbols_in(path))
            for key, symbol in zip(documents.symbol_ids(path, in_file), in_file, strict=True):
                if symbol.qualname in wanted and (path, symbol.qualname) not in keys.values():
                    keys[key] = (path, symbol.qualname)
        found: dict[Target, Candidate] = {}
        for hit in get(list(keys)):
            if hit.key in keys:
                found[keys[hit.key]] = Candidate(hit.key, dict(hit.payload))
        return found

    return fetch


def _target(c: Candidate) -> Target:
    return (str(c.payload.get("path", "")), str(c.payload.get("qualname") or ""))


def _dedupe(targets: Sequence[Target]) -> list[Target]:
    return list(dict.fromkeys(targets))
