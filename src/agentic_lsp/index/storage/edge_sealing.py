"""Sealing a Qdrant Edge shard in a child process, and the shard configuration it needs.

``EdgeShard.optimize`` holds the GIL for as long as it runs (measured: no Python thread ran
for the 1.2-2.1 s it took to seal 30,000-60,000 function points), so an optimizer pass in the
server froze every editor request. The server instead closes the shard, and a short-lived
child (``python -m agentic_lsp.index.storage.edge_sealing SHARD_DIR DIM``) opens it, seals its
appendable segment and closes it again, at low priority and on one core, so the server's
threads and the other core stay free. The shard's write-ahead log makes every write durable
before the child starts; a child that fails or is killed leaves a shard that loads as before.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from agentic_lsp.index.storage.resident_pages import page_out
from agentic_lsp.index.storage.vector_store import DENSE, SPARSE

SEAL_TIMEOUT_S = 600.0
CHILD_NICE = 10
SHARD_MARK = "edge_config.json"  # what qdrant-edge writes into every shard it creates

# Cold: a sealed segment's keyword indexes (path, language, kind, content hash) are read from
# disk as filters touch them. Kept in RAM, they made reopening a 180,000-point shard take
# 0.50 s (holding the GIL) instead of 0.21 s; without indexes it took 0.10 s.
FIELD_INDEX = qe.KeywordIndexParams(memory=qe.Memory.Cold)


def edge_config(dim: int) -> qe.EdgeConfig:
    return qe.EdgeConfig(
        # Cold: a reopened shard maps its vectors and reads the pages a search touches, instead
        # of loading every function's slot (1.5 KB each, embedded or not) at start.
        vectors={
            DENSE: qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine, memory=qe.Memory.Cold)
        },
        # Cold: a sealed segment's inverted index stays on disk, its postings read as queries
        # touch them (half the RAM of a reopened shard; query p50 the same, 1.2 ms at 150k).
        sparse_vectors={
            SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf, memory=qe.Memory.Cold)
        },
        hnsw_config=qe.HnswIndexConfig(m=0, ef_construct=100, full_scan_threshold=10_000),
        # Seal whatever the appendable segment holds when asked (its size is ours to judge: see
        # edge_writes.SEAL_AFTER), never merge sealed segments.
        optimizers=qe.EdgeOptimizersConfig(max_segment_size=1_000, indexing_threshold=1),
    )


@dataclass
class InFlightSeal:
    """One shard being sealed by a child process, and the writes that wait for its reopen
    (store operations, in the order they were made, each with its write weight)."""

    name: str
    done: threading.Event = field(default_factory=threading.Event)
    deferred: list[tuple[str, Any, int]] = field(default_factory=list)
    weight: int = 0

    def defer(self, collection: str, operation: Any, weight: int) -> None:
        self.deferred.append((collection, operation, weight))
        self.weight += max(weight, 1)


def seal_shard(shard_dir: Path, dim: int) -> str | None:
    """Seal the closed shard at ``shard_dir`` in a child process; ``None`` on success, else
    why it failed (the shard is then as it was: every write is in its log)."""
    package_parent = str(Path(__file__).resolve().parents[3])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
    command = [sys.executable, "-m", __name__, str(shard_dir), str(dim)]
    try:
        done = subprocess.run(  # stdin: never the editor's LSP stream
            command,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=SEAL_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"the sealing process did not finish: {err}"
    if done.returncode != 0:
        lines = (done.stderr or "").strip().splitlines()
        return lines[-1] if lines else f"the sealing process exited with {done.returncode}"
    return None


def _background_priority() -> None:
    """Lower priority, one core: the server and the editor keep the rest of the machine."""
    try:
        os.nice(CHILD_NICE)
        cores = sorted(os.sched_getaffinity(0))
        if len(cores) > 1:
            os.sched_setaffinity(0, {cores[-1]})
    except (AttributeError, OSError):  # not on Linux: priority is a courtesy
        pass


def main(argv: list[str]) -> int:
    _background_priority()
    return seal_closed_shard(Path(argv[0]), int(argv[1]))


def seal_closed_shard(shard_dir: Path, dim: int) -> int:
    """The child's work: load the shard, seal its appendable segment, close it; an exit code."""
    if not (shard_dir / SHARD_MARK).is_file():  # loading with a config would create a shard
        print(f"cannot open {shard_dir.name}: not a shard", file=sys.stderr)
        return 1
    try:
        shard = qe.EdgeShard.load(str(shard_dir), edge_config(dim))
    except Exception as err:
        print(f"cannot open {shard_dir.name}: {err}", file=sys.stderr)
        return 1
    try:
        page_out(shard_dir)  # what the load read (its whole log, the sealed segments' pages)
        shard.optimize()
        shard.flush()
    except Exception as err:  # e.g. no disk space for the sealed copy
        print(f"{err}", file=sys.stderr)
        return 1
    finally:
        shard.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
