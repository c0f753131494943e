"""Vector store benchmark: upsert, dense / filtered / sparse search latency, edge reopen time.

Usage: python benchmarks/store_bench.py [--n 20000] [--dim 384] [--queries 200]

Points are random unit vectors plus BM25 sparse vectors over a Zipf-distributed vocabulary,
spread over n/20 files and 4 languages. "qdrant" is qdrant-client's in-process ``:memory:``
mode (numpy brute force), not a Qdrant server: it shows the client path, not server speed.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from agentic_lsp.index.lexical import encode_query, encode_sparse
from agentic_lsp.index.storage.opening import open_store
from agentic_lsp.index.storage.vector_store import Point, VectorStore, Where

LANGUAGES = ("python", "typescript", "go", "rust")


def make_points(n: int, dim: int, rng: np.random.Generator) -> list[Point]:
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    vocab_ids = rng.zipf(1.3, size=(n, 40)) % 50_000
    points = []
    for i in range(n):
        path = f"src/pkg{i % 50}/mod{i // 20}.py"
        payload = {
            "path": path,
            "language": LANGUAGES[i % 4],
            "kind": "function",
            "content_hash": f"{i:016x}",
            "qualname": f"f{i}",
            "start_line": 1,
            "end_line": 20,
        }
        terms = [f"t{t}" for t in vocab_ids[i]] + [f"ident{i}"]
        points.append(
            Point(
                f"{path}::f{i}",
                payload,
                dense=vectors[i].tolist(),
                sparse=encode_sparse(terms, avg_len=41),
            )
        )
    return points


def percentiles(fn: Callable[[int], object], runs: int) -> tuple[float, float]:
    times = []
    for i in range(runs):
        start = time.perf_counter()
        fn(i)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return statistics.median(times), times[int(0.95 * (len(times) - 1))]


def bench(
    store: VectorStore, points: list[Point], dim: int, queries: int, rng: np.random.Generator
) -> dict[str, str]:
    start = time.perf_counter()
    store.upsert("functions", points)
    store.flush()
    upsert_s = time.perf_counter() - start
    assert store.count("functions") == len(points)
    qv = rng.standard_normal((queries, dim)).astype(np.float32)
    qv /= np.linalg.norm(qv, axis=1, keepdims=True)
    all_paths = sorted({p.payload["path"] for p in points})
    paths = [list(rng.choice(all_paths, size=5, replace=False)) for _ in range(queries)]
    sparse_q = [
        encode_query(
            [
                f"t{rng.zipf(1.3) % 50_000}",
                f"t{rng.zipf(1.3) % 50_000}",
                f"ident{rng.integers(len(points))}",
            ]
        )
        for _ in range(queries)
    ]
    dense = percentiles(lambda i: store.search_dense("functions", qv[i].tolist(), 20), queries)
    filtered = percentiles(
        lambda i: store.search_dense(
            "functions", qv[i].tolist(), 20, Where(paths=paths[i], languages=["python", "go"])
        ),
        queries,
    )
    sparse = percentiles(lambda i: store.search_sparse("functions", sparse_q[i], 20), queries)
    probe = Where(paths=paths[0], languages=["python", "go"])
    assert store.search_dense("functions", qv[0].tolist(), 20, probe), "filter matched nothing"
    return {
        "upsert": f"{upsert_s:.2f} s ({len(points) / upsert_s:,.0f}/s)",
        "dense p50/p95": f"{dense[0]:.2f} / {dense[1]:.2f} ms",
        "filtered p50/p95": f"{filtered[0]:.2f} / {filtered[1]:.2f} ms",
        "sparse p50/p95": f"{sparse[0]:.2f} / {sparse[1]:.2f} ms",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    points = make_points(args.n, args.dim, rng)
    rows: dict[str, dict[str, str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "store"
        opened = open_store("edge", path=root, dim=args.dim, model_id="bench")
        rows["edge"] = bench(opened.store, points, args.dim, args.queries, rng)
        opened.store.close()
        start = time.perf_counter()
        reopened = open_store("edge", path=root, dim=args.dim, model_id="bench")
        rows["edge"]["reopen"] = f"{time.perf_counter() - start:.2f} s"
        assert reopened.recovered_from is None
        assert reopened.store.count("functions") == args.n
        reopened.store.close()
    opened = open_store("qdrant", url=":memory:", dim=args.dim, model_id="bench")
    rows["qdrant :memory:"] = bench(opened.store, points, args.dim, args.queries, rng)
    rows["qdrant :memory:"]["reopen"] = "n/a"
    opened.store.close()
    cols = ["upsert", "dense p50/p95", "filtered p50/p95", "sparse p50/p95", "reopen"]
    print(f"n={args.n} dim={args.dim} queries={args.queries} limit=20")
    print("| backend | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for name, row in rows.items():
        print(f"| {name} | " + " | ".join(row[c] for c in cols) + " |")


if __name__ == "__main__":
    main()
