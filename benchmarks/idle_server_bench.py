"""What an idle server holds before its first dense query, before and after a change.

    python benchmarks/idle_server_bench.py                        # Django sdist (pip download)
    python benchmarks/idle_server_bench.py TREE --baseline REV    # both sides, same run

The tree is indexed once into a cache under ``--work`` (kept for the next run): lexical,
symbols and every file's vector (the lanes a server embeds in the background included), with
functions left waiting. Each side (REV in a temporary ``git worktree``, and this checkout) gets
its own copy and starts once unmeasured. Then the sides take turns, ``--rounds`` times each:
``agentic-lsp serve`` over stdio, ``initialize`` (answered) then ``initialized``, as an editor
does, and the resident memory of the server and its children is sampled every second for
``--seconds``; the last sample is reported (total, anonymous, file-backed).

Functions are not embedded in the background here (``index.background_function_embeddings``
off): a server would otherwise load the embedding model at once to embed them, and this
measures the server before any model is loaded. A side that loaded one anyway says so.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.cache_copy import copy_cache
from benchmarks.index_bench import cpu_model, django_tree
from benchmarks.index_bench_run import process_tree
from benchmarks.restart_bench import REPO, baseline_sources

SETTINGS = {"AGENTIC_LSP_INDEX__BACKGROUND_FUNCTION_EMBEDDINGS": "false", "HF_HUB_OFFLINE": "1"}
MODEL_LOADED = "embedding model"  # the server's log line when it loads one


def prepare(root: Path, cache: Path) -> None:
    """Index ``root`` into ``cache`` in this process: every file's vector, functions waiting."""
    from benchmarks.index_bench_run import engine_for

    from agentic_lsp.logs import configure_logging

    configure_logging("WARNING")
    os.environ.update(SETTINGS)
    engine = engine_for(root, cache)
    summary = engine.sync_blocking(embed=True, background=True)
    while engine.status().background:  # the deferred lanes' file vectors
        time.sleep(1.0)
    engine.indexer.close()
    print(f"{summary.files} files indexed", file=sys.stderr)


def sample(pid: int) -> tuple[int, int, int]:
    """Resident KiB of ``pid`` and its descendants: total, anonymous, file-backed."""
    total = anon = file = 0
    for member in process_tree(pid):
        try:
            with open(f"/proc/{member}/status", encoding="ascii") as status:
                for line in status:
                    key, _, value = line.partition(":")
                    if key in ("VmRSS", "RssAnon", "RssFile"):
                        kib = int(value.split()[0])
                        total += kib if key == "VmRSS" else 0
                        anon += kib if key == "RssAnon" else 0
                        file += kib if key == "RssFile" else 0
        except OSError:
            continue
    return total, anon, file


def _send(stream: IO[bytes], message: dict[str, Any]) -> None:
    body = json.dumps(message).encode()
    stream.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    stream.flush()


def _receive(stream: IO[bytes]) -> dict[str, Any]:
    length = 0
    while True:
        line = stream.readline()
        if not line:
            raise SystemExit("the server closed its output before answering initialize")
        if line in (b"\r\n", b"\n"):
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    message: dict[str, Any] = json.loads(stream.read(length))
    return message


def serve_idle(src: Path, root: Path, cache: Path, seconds: float) -> dict[str, Any]:
    """Start ``agentic-lsp serve`` with the package under ``src``; sample it while it idles."""
    env = {**os.environ, **SETTINGS, "AGENTIC_LSP_CACHE_DIR": str(cache)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode written once, as installed (restart_bench)
    env["PYTHONPATH"] = f"{src}{os.pathsep}{REPO}"
    with tempfile.TemporaryFile() as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "agentic_lsp", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            cwd=root,
            env=env,
        )
        assert server.stdin is not None and server.stdout is not None
        try:
            uri = root.as_uri()
            params = {"processId": os.getpid(), "rootUri": uri, "capabilities": {},
                      "workspaceFolders": [{"uri": uri, "name": root.name}]}  # fmt: skip
            request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
            _send(server.stdin, request)
            while _receive(server.stdout).get("id") != 1:
                pass
            _send(server.stdin, {"jsonrpc": "2.0", "method": "initialized", "params": {}})
            started = time.monotonic()
            samples = []
            while time.monotonic() - started < seconds:
                time.sleep(1.0)
                samples.append(sample(server.pid))
        finally:
            server.kill()
            server.wait()
        log.seek(0)
        text = log.read().decode(errors="replace")
    total, anon, file = samples[-1]
    return {"total": total, "anon": anon, "file": file, "peak": max(s[0] for s in samples),
            "model": MODEL_LOADED in text}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("tree", type=Path, nargs="?", help="default: the Django sdist")
    parser.add_argument("--baseline", metavar="REV", help="compare with REV (same run)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "idle-bench")
    parser.add_argument("--prepare", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    tree = (args.tree or django_tree()).resolve()
    if args.prepare:
        prepare(tree, args.prepare)
        return
    indexed = args.work / "indexed"
    if not indexed.exists():
        print(f"indexing {tree} once (files embedded) ...", file=sys.stderr, flush=True)
        env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{REPO}"}
        building = args.work / "indexing"
        subprocess.run([sys.executable, __file__, str(tree), "--prepare", str(building)],
                       env=env, check=True)  # fmt: skip
        building.rename(indexed)
    sides: list[tuple[str, Path]] = [("current", REPO / "src")]
    with baseline_sources(args.baseline) as baseline:
        if baseline is not None:
            sides.insert(0, (args.baseline, baseline))
        caches = {}
        for label, src in sides:
            caches[label] = args.work / f"side-{len(caches)}"
            shutil.rmtree(caches[label], ignore_errors=True)
            copy_cache(indexed, caches[label])
            serve_idle(src, tree, caches[label], 10.0)  # a first start, unmeasured
        load_start = os.getloadavg()
        runs: dict[str, list[dict[str, Any]]] = {label: [] for label, _ in sides}
        for _ in range(args.rounds):
            for label, src in sides:
                runs[label].append(serve_idle(src, tree, caches[label], args.seconds))
        load_end = os.getloadavg()
    report(tree, runs, args.seconds, load_start, load_end)


def report(tree: Path, runs: dict[str, list[dict[str, Any]]], seconds: float,
           load_start: tuple[float, ...], load_end: tuple[float, ...]) -> None:  # fmt: skip
    labels = list(runs)
    print(f"\nidle server: {tree.name}, `agentic-lsp serve` sampled for {seconds:.0f} s after "
          f"initialize; medians of {len(runs[labels[0]])} starts (each in brackets)")  # fmt: skip
    print(f"machine: {cpu_model()}, {os.cpu_count()} cores, python {sys.version.split()[0]}; "
          f"load average {load_start[0]:.1f} at start, {load_end[0]:.1f} at end\n")  # fmt: skip
    print("| resident memory | " + " | ".join(labels) + " |")
    print("|---" * (len(labels) + 1) + "|")
    for key, name in (("total", "process and children, at the end"), ("anon", "anonymous"),
                      ("file", "file-backed"), ("peak", "highest sample")):  # fmt: skip
        cells = []
        for label in labels:
            values = [r[key] / 1024 for r in runs[label]]
            listed = ", ".join(f"{v:.0f}" for v in values)
            cells.append(f"{statistics.median(values):.0f} ({listed})")
        print(f"| {name} | " + " | ".join(cells) + " |")
    models = {label: sum(r["model"] for r in runs[label]) for label in labels}
    print("| starts that loaded a model | " + " | ".join(str(models[x]) for x in labels) + " |")


if __name__ == "__main__":
    main()
