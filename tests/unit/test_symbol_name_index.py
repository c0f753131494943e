"""The symbol table's name index answers exactly what a scan of every symbol answers."""

from __future__ import annotations

import gc
import random
import re
import sys
import threading

import pytest

from agentic_lsp.index.models import Symbol
from agentic_lsp.index.parsing.parser import parse_file
from agentic_lsp.index.results import SymbolRef
from agentic_lsp.index.retrieval import symbol_store
from agentic_lsp.index.retrieval.exact_names import ExactNames, NameRows, name_hash
from agentic_lsp.index.retrieval.fuzzy import fuzzy_score
from agentic_lsp.index.retrieval.fuzzy_base import KeyRows
from agentic_lsp.index.retrieval.symbols import SymbolTable, _rank

WORDS = ["parse", "index", "cache", "Token", "store", "query", "handle", "_private", "Srv"]


def _module(rng: random.Random, i: int) -> str:
    a, b = rng.choice(WORDS), rng.choice(WORDS)
    return (
        f"class {a.capitalize()}{b}{i % 7}:\n"
        f"    def {a}_{b}(self):\n        return 1\n\n"
        f"    def handle(self):\n        return 2\n\n\n"
        f"def {b}{a}_{i % 11}(x):\n    return x\n\n\n"
        f"def shared_name(x):\n    return x\n"
    )


def _table(files: int, seed: int = 3) -> tuple[SymbolTable, list[str]]:
    rng = random.Random(seed)
    table = SymbolTable()
    paths = []
    for i in range(files):
        path = f"pkg{i % 5}/mod_{i}.py"
        table.replace_file(path, parse_file(path, "python", _module(rng, i)).symbols, [])
        paths.append(path)
    return table, paths


def fuzzy_scan(table: SymbolTable, query: str, limit: int) -> list[tuple[float, SymbolRef]]:
    """What :meth:`SymbolTable.fuzzy` must answer, by testing every symbol (no name index)."""
    if not query:
        return []
    lowered, size = query.lower(), len(query)
    subsequence = re.compile(".*?".join(re.escape(ch) for ch in lowered))
    items = [(p, s) for p in table.paths() for s in table.symbols_in(p)]
    prefixed: list[SymbolRef] = []
    others: list[SymbolRef] = []
    for path, symbol in items:
        if not subsequence.search(symbol.qualname.lower()):
            continue
        ref = SymbolRef(path, symbol)
        if symbol.name[:size].lower() == lowered or symbol.qualname[:size].lower() == lowered:
            prefixed.append(ref)
        else:
            others.append(ref)
    candidates = prefixed if len(prefixed) >= limit else prefixed + others
    scored = []
    for ref in candidates:
        name, qualname = ref.symbol.name, ref.symbol.qualname
        score = max(fuzzy_score(query, name), 0.95 * fuzzy_score(query, qualname))
        if score > 0:
            scored.append((score, ref))
    scored.sort(key=_rank)
    return scored[:limit]


QUERIES = ["h", "handle", "HANDLE", "hndl", "srv", "Srv", "shared_name", "pc", "tok", "x",
           "Parse.", "cache_", "zzz", "_", ".", "parseindex_1", "Handle", "e"]  # fmt: skip


def _same(table: SymbolTable) -> None:
    for query in QUERIES:
        for limit in (1, 5, 50, 1000):
            assert table.fuzzy(query, limit) == fuzzy_scan(table, query, limit), (query, limit)


def test_name_index_equals_a_scan_of_every_symbol() -> None:
    table, _ = _table(120)
    _same(table)


def test_name_index_follows_replaced_and_removed_files() -> None:
    table, paths = _table(80)
    rng = random.Random(11)
    for path in paths[::3]:
        table.replace_file(path, parse_file(path, "python", _module(rng, 999)).symbols, [])
    for path in paths[1::4]:
        table.remove_file(path)
    table.replace_file(
        "new.py", parse_file("new.py", "python", "def hndl_new():\n  pass\n").symbols, []
    )
    _same(table)
    assert table.fuzzy("hndl_new", 5)[0][1].path == "new.py"
    table.remove_file("new.py")
    assert all(ref.path != "new.py" for _, ref in table.fuzzy("hndl_new", 50))
    _same(table)


def test_the_table_holds_no_symbols_but_its_recent_files_after_lookups() -> None:
    """Names index paths, files stay packed: 10^6 symbols held as objects cost ~650 MB."""

    def live() -> int:
        gc.collect()
        return sum(isinstance(o, Symbol) for o in gc.get_objects())

    before = live()  # other tests' symbols, still referenced somewhere
    table, paths = _table(SymbolTable.RECENT * 3)
    for query in QUERIES:
        assert table.fuzzy(query, 1000) == fuzzy_scan(table, query, 1000)
    assert len(table.find("handle")) == len(paths)  # one method per module
    for path in paths:
        assert table.symbols_in(path)
    held = live() - before
    assert 0 < held <= SymbolTable.RECENT * 5  # five symbols a module, RECENT modules kept
    assert table.count() == len(paths) * 5


def test_queries_with_regex_characters_are_literal() -> None:
    table = SymbolTable()
    table.replace_file("a.py", parse_file("a.py", "python", "def a_b():\n  pass\n").symbols, [])
    for query in ["a.b", "a*", "[a", "a]", "^a", "a$", "a\\", "a-b", "(a)"]:
        assert table.fuzzy(query, 10) == fuzzy_scan(table, query, 10), query


def test_batch_scores_equal_one_by_one_scores() -> None:
    """The vectorised scorer gives fuzzy_score's floats exactly, ASCII or not."""
    from agentic_lsp.index.retrieval.fuzzy import fuzzy_score, fuzzy_scores

    names = ["parseHttpRequest", "parse_http", "Parse", "p", "größe_parse", "HTTPParser",
             "a.b-c_d", "xParse", "", "pa\x00rse", "Service12.handle_12", "PARSE"]  # fmt: skip
    for query in ["p", "parse", "PaRsE", "phr", "größe", "zz", "a.b", "ps", "Parse12"]:
        expected = [fuzzy_score(query, n) for n in names]
        assert fuzzy_scores(query, names).tolist() == expected, query
        ascii_only = [n for n in names if n.isascii() and n and "\x00" not in n]
        assert fuzzy_scores(query, ascii_only).tolist() == [
            fuzzy_score(query, n) for n in ascii_only
        ], query


def test_churn_leaves_no_duplicates_and_a_bounded_text() -> None:
    """Files replaced over and over (a key dies and comes back on a new line, searches in
    between): answers stay equal to the scan, no key is reported twice, dead lines are
    rebuilt away."""
    table, paths = _table(120)
    rng = random.Random(5)
    for step in range(60):
        path = rng.choice(paths)
        if step % 7 == 3:
            table.remove_file(path)
        else:  # often the same names again: a key dies and comes back on a new line
            source = _module(random.Random(step % 4), 999)
            table.replace_file(path, parse_file(path, "python", source).symbols, [])
        for query in ("handle", "srv", "x", "shared_name"):
            got = table.fuzzy(query, 1000)
            assert got == fuzzy_scan(table, query, 1000), (step, query)
            refs = [(ref.path, ref.symbol.start_line, ref.symbol.qualname) for _, ref in got]
            assert len(refs) == len(set(refs)), (step, query)
    names = table._names
    names._refresh()
    live = len(names._refs)
    assert len(names._keys) <= live + live // 3 + 1
    assert names._text.count("\n") == len(names._keys)


def _loaded(source: SymbolTable, saved: str | bool) -> SymbolTable:
    """A table filled as a restart fills it: :meth:`SymbolTable.load`, name indexes pending
    but for those ``saved``: ``"names"`` (exact), ``"both"`` (exact and fuzzy) or none."""
    symbols, imports, rows, keys = source.export()
    saved = "names" if saved is True else saved or "none"
    table = SymbolTable()
    table.load(
        list(symbols),
        symbols,
        imports,
        names=rows if saved in ("names", "both") else None,
        keys=keys if saved == "both" else None,
    )
    return table


def _answers(table: SymbolTable) -> list[object]:
    out: list[object] = [table.fuzzy(q, 20) for q in QUERIES]
    out += [table.find(n) for n in ("handle", "shared_name", "Srv", "hndl_new", "missing")]
    out.append(table.definitions("shared_name", from_path="pkg1/mod_1.py"))
    return out


@pytest.mark.parametrize("names", ["none", "names", "both"])
def test_a_loaded_table_answers_before_its_name_indexes_are_warmed(names: str) -> None:
    built, _ = _table(90)
    loaded = _loaded(built, names)
    assert _answers(loaded) == _answers(built)  # the first lookup indexes what is pending
    _same(loaded)


@pytest.mark.parametrize("names", ["none", "names", "both"])
def test_files_replaced_or_removed_before_warming_are_indexed_as_they_are_now(names: str) -> None:
    built, paths = _table(90)
    loaded = _loaded(built, names)
    rng = random.Random(5)
    for path in paths[::4]:
        symbols = parse_file(path, "python", _module(rng, 555)).symbols
        built.replace_file(path, symbols, [])
        loaded.replace_file(path, symbols, [])
    for path in paths[2::5]:
        built.remove_file(path)
        loaded.remove_file(path)
    new = parse_file("new.py", "python", "def hndl_new():\n  pass\n").symbols
    built.replace_file("new.py", new, [])
    loaded.replace_file("new.py", new, [])
    loaded.warm()
    assert _answers(loaded) == _answers(built)
    _same(loaded)
    assert loaded.count() == built.count()


@pytest.mark.parametrize("names", ["none", "names", "both"])
def test_warming_beside_lookups_gives_the_same_answers(names: str) -> None:
    built, _ = _table(150)
    loaded = _loaded(built, names)
    loaded.WARM_BATCH = 7  # type: ignore[misc]  # many holds of the lock
    warming = threading.Thread(target=loaded.warm)
    warming.start()
    answers = _answers(loaded)
    warming.join()
    assert answers == _answers(built)
    assert _answers(loaded) == answers


@pytest.mark.parametrize("names", ["none", "names", "both"])
def test_warming_in_background_runs_one_thread_that_indexes_every_loaded_file(names: str) -> None:
    built, _ = _table(60)
    loaded = _loaded(built, names)
    loaded.WARM_BATCH = 5  # type: ignore[misc]
    loaded.warm_in_background()
    loaded.warm_in_background()  # already warming: no second thread
    warming = [t for t in threading.enumerate() if t.name == "agentic-symbols"]
    assert len(warming) <= 1
    for thread in warming:
        thread.join(timeout=30)
    assert not loaded._to_index and not loaded._unindexed  # indexed without any lookup
    assert _answers(loaded) == _answers(built)
    loaded.warm_in_background()  # nothing left: no thread
    assert not [t for t in threading.enumerate() if t.name == "agentic-symbols"]


def test_an_export_prepares_the_folded_base_and_rows_read_back_make_theirs_once() -> None:
    """The fold of an export makes the new base's line masks (not the first search after
    it); rows read from a snapshot's bytes make theirs at their first search."""
    built, _ = _table(60)
    symbols, imports, rows, keys = built.export()
    assert keys is not None and keys.prepared
    read = KeyRows.read(memoryview(b"".join(keys.sections())), keys.header(), keys.paths)
    loaded = SymbolTable()
    loaded.load(list(symbols), symbols, imports, names=rows, keys=read)
    assert not read.prepared
    assert _answers(loaded) == _answers(built)
    assert read.prepared


def test_definitions_read_only_the_files_a_limit_returns_and_rank_as_a_full_sort() -> None:
    table, _ = _table(60)
    imports = ["pkg1.mod_1", "pkg3/mod_13"]
    app = parse_file("app.py", "python", _module(random.Random(5), 0)).symbols
    table.replace_file("app.py", app, imports)
    imported = " ".join(imports).replace("/", ".")

    def rank(ref) -> tuple[int, str, int]:  # the ranking, as a whole sort of every definition
        module = ref.path.rsplit(".", 1)[0].replace("/", ".")
        stem = module.rsplit(".", 1)[-1]
        tier = (
            0
            if ref.path == "app.py"
            else 1
            if module in imported or f".{stem}" in f".{imported}"
            else 2
        )
        return (tier, ref.path, ref.symbol.start_line)

    for name in ("handle", "shared_name", "Handle", "absent"):
        every = sorted(table.find(name), key=rank)
        assert table.definitions(name, "app.py") == every
        for limit in (0, 1, 2, 5):
            some = table.definitions(name, "app.py", limit=limit)
            own = [r for r in every if r.path == "app.py"]
            assert some[: len(own)] == own
            assert some[len(own) : len(own) + limit] == every[len(own) : len(own) + limit]
            assert len(some) <= len(own) + limit  # one definition a file here
    first = table.definitions("handle", "app.py", limit=2)
    assert [r.path for r in first[1:]] == ["pkg1/mod_1.py", "pkg3/mod_13.py"]  # imported first


def test_exact_lookups_from_saved_names_index_nothing_and_follow_changes() -> None:
    built, paths = _table(80)
    loaded = _loaded(built, "names")
    assert loaded._loaded_in_base
    exact = [loaded.find(n) for n in ("handle", "HANDLE", "shared_name", "Srv", "missing")]
    exact.append(loaded.definitions("handle", paths[3], limit=4))
    assert loaded._unindexed == set(paths)  # answered without indexing a file
    assert exact[:-1] == [
        built.find(n) for n in ("handle", "HANDLE", "shared_name", "Srv", "missing")
    ]
    assert exact[-1] == built.definitions("handle", paths[3], limit=4)
    rng = random.Random(9)
    for table in (built, loaded):  # replaced, removed and new files: the base rows go stale
        for path in paths[::3]:
            table.replace_file(path, parse_file(path, "python", _module(rng, 7)).symbols, [])
        for path in paths[1::4]:
            table.remove_file(path)
        table.replace_file(
            "x.py", parse_file("x.py", "python", "def shared_name():\n  pass\n").symbols, []
        )
        rng = random.Random(9)
    assert _answers(loaded) == _answers(built)
    defining: dict[str, set[str]] = {}
    for path in built.paths():
        for symbol in built.symbols_in(path):
            defining.setdefault(symbol.name.lower(), set()).add(path)
    for name in [*defining, "missing"]:  # exactly the files defining it now: none stale
        for table in (built, loaded):
            assert sorted(table._exact.paths(name)) == sorted(defining.get(name, ())), name
    saved = _loaded(loaded, "names")  # folded into a new base: the same answers
    assert len(loaded._exact._overlay) == 0
    for name in [*defining, "missing"]:
        assert sorted(saved._exact.paths(name)) == sorted(defining.get(name, ())), name
    assert _answers(saved) == _answers(loaded) == _answers(built)


def test_name_rows_round_trip_and_reject_what_they_cannot_be() -> None:
    exact = ExactNames()
    for i in range(50):
        exact.add(f"f{i}.py", {"handle", f"name{i % 7}"})
    order = [f"f{i}.py" for i in range(50)]
    rows = exact.compacted(order)
    again = NameRows.from_buffer(rows.to_bytes(), len(rows), rows.paths)
    assert again.hashes.tolist() == rows.hashes.tolist() == sorted(rows.hashes.tolist())
    assert again.files.tolist() == rows.files.tolist()
    odd = NameRows.from_buffer(memoryview(b"x" + rows.to_bytes())[1:], len(rows), rows.paths)
    assert odd.hashes.flags.aligned and odd.files.flags.aligned  # searched without a copy
    assert odd.hashes.tolist() == rows.hashes.tolist()
    exact.adopt(again)
    assert sorted(exact.paths("handle")) == sorted(order)
    assert sorted(exact.paths("name3")) == sorted(f"f{i}.py" for i in range(3, 50, 7))
    assert exact.paths("absent") == []
    data = rows.to_bytes()
    with pytest.raises(ValueError):
        NameRows.from_buffer(data[:-1], len(rows), rows.paths)  # short
    with pytest.raises(ValueError):
        NameRows.from_buffer(data, len(rows), rows.paths[:3])  # a file out of range
    backwards = NameRows(rows.hashes[::-1].copy(), rows.files, rows.paths).to_bytes()
    with pytest.raises(ValueError):
        NameRows.from_buffer(backwards, len(rows), rows.paths)
    # saved with the snapshot: the same in every process and version (PYTHONHASHSEED aside)
    assert name_hash("handle") == 10877634519683161052


def test_find_with_a_limit_is_the_prefix_of_every_match_case_sensitive_first() -> None:
    table, _ = _table(70)
    odd = parse_file(
        "odd.py", "python", "def HANDLE():\n  pass\n\nclass Srv:\n  def Handle(self):\n    pass\n"
    )
    table.replace_file("a_first.py", odd.symbols, [])  # sorts first: other cases before it
    for name in ("handle", "HANDLE", "Handle", "shared_name", "Srv.Handle", "absent"):
        every = table.find(name)
        for limit in (0, 1, 2, 3, 5, 1000):
            assert table.find(name, limit) == every[:limit], (name, limit)
            assert table.definitions(name, None, limit) == every[:limit]


def test_the_warm_steps_aside_while_a_lookup_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(symbol_store, "YIELD_CAP_S", 10.0)  # no timing in the test: it waits
    built, _ = _table(200)
    loaded = _loaded(built, "names")
    loaded.WARM_BATCH = 1  # type: ignore[misc]
    entered, release = threading.Event(), threading.Event()
    original = loaded._named

    def slow_named(path: str, name: str, ignore_case: bool = False, **kw: bool) -> list[Symbol]:
        entered.set()
        release.wait(5)
        return original(path, name, ignore_case, **kw)

    loaded._named = slow_named  # type: ignore[method-assign]
    finding = threading.Thread(target=loaded.find, args=("shared_name",))
    finding.start()
    assert entered.wait(5)
    before = len(loaded._unindexed)
    warming = threading.Thread(target=loaded.warm)
    warming.start()
    try:
        warming.join(0.3)  # the warm waits (up to its cap) while the lookup runs
        assert len(loaded._unindexed) == before
    finally:
        release.set()
    finding.join(5)
    warming.join(30)
    assert not loaded._unindexed


def test_names_folded_while_a_file_changes_are_folded_again_under_the_lock() -> None:
    table, _ = _table(30)
    table.export()  # a base
    fold = table._exact.compacted
    late = parse_file("late.py", "python", "def arrived_late():\n  pass\n").symbols

    def writer_meanwhile(order: list[str], index: dict[str, int] | None = None) -> NameRows:
        folded = fold(order, index)
        if "late.py" not in table._by_path:  # the first fold, outside the lock
            table.replace_file("late.py", late, [])
        return folded

    table._exact.compacted = writer_meanwhile  # type: ignore[method-assign]
    symbols, _, names, keys = table.export()
    assert names is not None and tuple(names.paths) == tuple(symbols)
    assert keys is not None and tuple(keys.paths) == tuple(symbols)  # folded again too
    assert "late.py" in symbols
    loaded = SymbolTable()
    loaded.load(list(symbols), symbols, {}, names=names)
    assert [r.path for r in loaded.find("arrived_late")] == ["late.py"]
    assert loaded._unindexed == set(symbols)  # from the saved names, nothing indexed
    with_keys = SymbolTable()
    with_keys.load(list(symbols), symbols, {}, names=names, keys=keys)
    assert not with_keys._unindexed  # nothing to warm: the fuzzy base has every key
    assert [ref.path for _, ref in with_keys.fuzzy("arrived_late")] == ["late.py"]


def test_a_saved_fuzzy_base_answers_like_a_scan_through_edits_and_folds() -> None:
    built, paths = _table(90)
    loaded = _loaded(built, "both")
    assert not loaded._unindexed and not loaded._to_index  # nothing to warm
    assert len(loaded._names.refs) == 0  # every key in the base
    _same(loaded)
    rng = random.Random(21)
    for round_ in range(3):
        for path in paths[round_::5]:
            symbols = parse_file(path, "python", _module(rng, 100 + round_)).symbols
            loaded.replace_file(path, symbols, [])
        for path in paths[round_ + 1 :: 9]:
            loaded.remove_file(path)
        loaded.replace_file(
            f"n{round_}.py", parse_file("n.py", "python", "def hndl_z():\n  pass\n").symbols, []
        )
        _same(loaded)  # base lines whose files went stale are left out
        again = _loaded(loaded, "both")  # folded: the same answers, from a new base
        _same(again)
        assert len(loaded._names.refs) == 0 and not loaded._exact.stale
        loaded = again


def test_a_fuzzy_base_not_folded_keeps_the_names_base_it_reads_stale_files_from() -> None:
    """Files keep changing through every fold outside the lock: the fuzzy names are not
    folded under it (a lookup would wait), so the exact names must not be adopted either: the
    fuzzy base reads the exact names' stale files, and a replaced file would count twice."""
    table, paths = _table(40)
    table.export()  # both bases
    assert len(table._keys) and not len(table._names.refs)
    rng = random.Random(5)
    fold = table._exact.compacted
    outside = iter(range(3))  # the three tries outside the lock; then the refold under it

    def writer_meanwhile(order: list[str], index: dict[str, int] | None = None) -> NameRows:
        folded = fold(order, index)
        if next(outside, None) is not None:
            path = rng.choice(paths)
            table.replace_file(path, parse_file(path, "python", _module(rng, 7)).symbols, [])
        return folded

    table._exact.compacted = writer_meanwhile  # type: ignore[method-assign]
    symbols, _, names, keys = table.export()
    assert keys is None  # never folded under the lock
    assert names is not None and tuple(names.paths) == tuple(symbols)  # saved all the same
    _same(table)
    loaded = SymbolTable()
    loaded.load(list(symbols), symbols, {}, names=names)
    _same(loaded)


def _named_symbols(rng: random.Random, i: int) -> list[Symbol]:
    """Symbols a parser would not give: any case, names that are not their qualname's last
    part, dots inside names, non-ASCII (the Kelvin sign lowercases to an ASCII "k")."""
    parts = ["get", "Get_item", "GETTER", "kelvin", "\u212aelvin", "gét", "g.et", "getitem", "g"]
    out = []
    for j in range(6):
        name = rng.choice(parts) + rng.choice(["", "_x", "Item", str(j)])
        qualname = rng.choice([name, f"Cls{i % 3}.{name}", f"{rng.choice(parts)}.{name}", "Other"])
        out.append(Symbol(name, qualname, "function", j + 1, j + 1, j + 1, 0, "", "", None))
    return out


@pytest.mark.parametrize("saved", ["both", "none"])
@pytest.mark.parametrize("with_i_dot", [False, True])
def test_prefix_scores_from_lengths_equal_scores_of_the_names(
    with_i_dot: bool, saved: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Broad queries score their prefix matches from lengths (the saved base's from its line
    lengths, without decoding the keys; the overlay's from the names): the same answers as a
    scan, whatever the names (with an "İ", whose lowercase is longer, the base's are decoded
    instead)."""
    rng = random.Random(8)
    table = SymbolTable()
    for i in range(60):
        table.replace_file(f"m{i}.py", _named_symbols(rng, i), [])
    if with_i_dot:
        table.replace_file("i.py", [Symbol("get\u0130", "get\u0130", "function", 1, 1, 1, 0,
                                           "", "", None)], [])  # fmt: skip
    loaded = _loaded(table, saved)
    queries = ["g", "get", "GET", "get_", "k", "kelvin", "g.e", "getitem", "cls", "o", "x"]
    decoded = 0
    keys_of = type(loaded._keys).keys_of

    def counting(rows: object, lines: object) -> object:
        nonlocal decoded
        decoded += 1
        return keys_of(rows, lines)  # type: ignore[arg-type]

    monkeypatch.setattr(type(loaded._keys), "keys_of", counting)
    for query in queries:
        for limit in (1, 3, 10, 50, 1000):
            assert loaded.fuzzy(query, limit) == fuzzy_scan(loaded, query, limit), (query, limit)
    lookups = len(queries) * 5
    if saved == "none":
        assert not len(loaded._keys)  # every key in the overlay
    elif with_i_dot:
        assert decoded == lookups  # every lookup decoded its matches
    else:
        assert decoded < lookups / 2  # most were answered from the lengths
    loaded.replace_file("m1.py", _named_symbols(rng, 99), [])  # an overlay beside the base
    loaded.remove_file("m2.py")
    for query in queries:
        for limit in (1, 3, 50):
            assert loaded.fuzzy(query, limit) == fuzzy_scan(loaded, query, limit), (query, limit)


def test_only_one_character_lowercases_to_a_different_length() -> None:
    """What scoring prefix matches from lengths relies on (a key holding it is decoded)."""
    assert [c for c in range(sys.maxunicode + 1) if len(chr(c).lower()) != 1] == [0x130]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_broad_queries_from_the_lines_heads_answer_as_a_scan_without_scanning_the_text(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A query with at least ``limit`` prefix matches in the base is answered from every
    line's first bytes (no regex over the whole text): the same answers as a scan of every
    symbol, for names of any case, non-ASCII (the Kelvin sign), names that are not their
    qualname's last part, queries longer than a head, and after edits (stale base lines)."""
    rng = random.Random(seed)
    table = SymbolTable()
    for i in range(80):
        table.replace_file(f"m{i}.py", _named_symbols(rng, i), [])
    loaded = _loaded(table, "both")
    whole_scans = 0
    matching = type(loaded._keys).matching

    def counting(rows: object, lowered: str, *args: object, **kwargs: object) -> object:
        nonlocal whole_scans
        whole_scans += kwargs.get("within") is None
        return matching(rows, lowered, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(type(loaded._keys), "matching", counting)
    queries = ["g", "G", "get", "gEt_", "k", "kel", "kelvin_x", "getitem_x", "getteritem",
               "cls1.getitem", "other", "g.e", "o", "\u212a", "x"]  # fmt: skip
    for query in queries:
        for limit in (1, 5, 20, 100):
            assert loaded.fuzzy(query, limit) == fuzzy_scan(loaded, query, limit), (query, limit)
    assert whole_scans < len(queries) * 4 / 2  # most were answered from the heads
    for path in [f"m{i}.py" for i in range(0, 80, 3)]:
        loaded.replace_file(path, _named_symbols(rng, 500), [])
    loaded.remove_file("m1.py")
    for query in queries:
        for limit in (1, 5, 20):
            assert loaded.fuzzy(query, limit) == fuzzy_scan(loaded, query, limit), (query, limit)
