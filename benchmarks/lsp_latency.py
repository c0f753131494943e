"""LSP request latency while a cold index runs (target: p99 < 50 ms on a 5k-file workspace).

Usage: python benchmarks/lsp_latency.py [--files 5000] [--path DIR] [--seconds 60]

Generates a workspace of ``--files`` Python modules (classes, functions, docstrings, imports
between modules) unless ``--path`` names one, starts the real server (``python -m agentic_lsp
serve``) over stdio with a fresh cache dir, and from the moment ``initialized`` is sent issues
editor-like requests back to back, one at a time: documentSymbol, hover, definition, references
and workspace/symbol on open documents, plus ``agentic.indexStatus``. Latency is measured from
writing the request frame to reading its response. Measuring stops when the cold index finishes
(``index_done`` event) or after ``--seconds``; a table of percentiles per method is printed,
with the index phases seen while measuring.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

TARGET_MS = 50.0


def generate(root: Path, files: int, seed: int = 7) -> list[str]:
    """``files`` modules in 50 packages; each imports a neighbour and calls its function."""
    rng = random.Random(seed)
    paths = []
    for i in range(files):
        package = f"pkg{i % 50}"
        rel = f"{package}/module_{i}.py"
        other = (i * 7 + 3) % files
        words = " ".join(rng.choice(["parse", "index", "cache", "token", "store", "query"])
                         for _ in range(6))  # fmt: skip
        text = (
            f'"""Module {i}: {words}."""\n\n'
            f"from pkg{other % 50}.module_{other} import helper_{other}\n\n\n"
            f"class Service{i}:\n"
            f'    """Serves {words}."""\n\n'
            f"    def handle_{i}(self, request):\n"
            f"        return helper_{other}(request) + self.extra_{i}()\n\n"
            f"    def extra_{i}(self):\n"
            f"        return {i}\n\n\n"
            f"def helper_{i}(value):\n"
            f'    """Return value plus {i}."""\n'
            f"    return value + {i}\n\n\n"
            f"def shared_name(x):\n"
            f"    return helper_{i}(x)\n"
        )
        (root / package).mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
        paths.append(rel)
    return paths


class Server:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.events: list[dict[str, Any]] = []
        self.pending: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self._next = 0
        self.reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        while True:
            length = None
            while True:
                line = await stdout.readline()
                if not line:
                    return
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
                if line == b"\r\n" and length is not None:
                    break
            message = json.loads(await stdout.readexactly(length))
            if "method" in message and "id" in message:  # server request: say yes
                await self._write({"jsonrpc": "2.0", "id": message["id"], "result": None})
            elif "method" in message:
                if message["method"] == "agentic/event":
                    self.events.append(message["params"])
            elif message.get("id") in self.pending:
                self.pending.pop(message["id"]).set_result(message)

    async def _write(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        await self.process.stdin.drain()

    async def request(self, method: str, params: Any) -> tuple[float, dict[str, Any]]:
        self._next += 1
        future = asyncio.get_running_loop().create_future()
        self.pending[self._next] = future
        start = time.perf_counter()
        await self._write({"jsonrpc": "2.0", "id": self._next, "method": method,
                           "params": params})  # fmt: skip
        reply = await asyncio.wait_for(future, 120)
        return (time.perf_counter() - start) * 1000, reply

    async def notify(self, method: str, params: Any) -> None:
        await self._write({"jsonrpc": "2.0", "method": method, "params": params})


def _uri(path: Path) -> str:
    return path.resolve().as_uri()


async def measure(root: Path, paths: list[str], seconds: float) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix="lsp-bench-"))
    env = dict(os.environ, XDG_CACHE_HOME=str(home / "cache"), HF_HUB_OFFLINE="1",
               XDG_CONFIG_HOME=str(home / "config"), TOKENIZERS_PARALLELISM="false")  # fmt: skip
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agentic_lsp", "--log-level", "WARNING", "serve",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL, env=env,
    )  # fmt: skip
    server = Server(process)
    caps = {"window": {"workDoneProgress": True}}
    init_ms, _ = await server.request("initialize", {
        "processId": os.getpid(), "rootUri": _uri(root), "capabilities": caps,
        "initializationOptions": {"cache_dir": str(home / "index")}})  # fmt: skip
    await server.notify("initialized", {})
    started = time.perf_counter()
    rng = random.Random(1)
    docs = rng.sample(paths, 20)
    for rel in docs:
        text = (root / rel).read_text()
        item = {"uri": _uri(root / rel), "languageId": "python", "version": 1, "text": text}
        await server.notify("textDocument/didOpen", {"textDocument": item})
    latencies: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, int] = defaultdict(int)
    phases: list[str] = []
    queries = ["helper", "Service12", "hndl", "shared_name", "extra_4", "srv"]
    step = 0
    while time.perf_counter() - started < seconds:
        if any(e["kind"] == "index_done" for e in server.events):
            break
        rel = docs[step % len(docs)]
        doc = {"uri": _uri(root / rel)}
        on_helper = {"textDocument": doc, "position": {"line": 8, "character": 17}}
        requests = [
            ("textDocument/documentSymbol", {"textDocument": doc}),
            ("textDocument/hover", on_helper),
            ("textDocument/definition", on_helper),
            ("workspace/symbol", {"query": queries[step % len(queries)]}),
            ("workspace/executeCommand", {"command": "agentic.indexStatus", "arguments": [{}]}),
            ("textDocument/references", {**on_helper, "context": {"includeDeclaration": True}}),
        ]
        for method, params in requests:
            ms, reply = await server.request(method, params)
            name = "agentic.indexStatus" if method.endswith("executeCommand") else method
            latencies[name].append(ms)
            if "error" in reply:
                errors[name] += 1
            if name == "agentic.indexStatus":
                state = reply["result"]["roots"][0]
                phase = (state.get("progress") or {}).get("phase") or state["state"]
                if not phases or phases[-1] != phase:
                    phases.append(phase)
        step += 1
    elapsed = time.perf_counter() - started
    done = next((e for e in server.events if e["kind"] == "index_done"), None)
    await server.request("shutdown", None)
    await server.notify("exit", None)
    await asyncio.wait_for(process.wait(), 60)
    return {"latencies": latencies, "errors": errors, "phases": phases, "elapsed": elapsed,
            "init_ms": init_ms, "index_done": done}  # fmt: skip


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def report(result: dict[str, Any], files: int) -> None:
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}")  # fmt: skip
    print(f"workspace: {files} files; initialize answered in {result['init_ms']:.0f} ms")
    before, after = result["load"]
    print(f"load average (1 min) before/after: {before:.1f} / {after:.1f}; other processes "
          "competing for the cores inflate every figure")  # fmt: skip
    done = result["index_done"]
    how = "finished" if done else "still running"
    print(f"measured {result['elapsed']:.1f} s of the cold index ({how}); "
          f"phases seen: {' → '.join(result['phases'])}")  # fmt: skip
    if done:
        timings = done["data"]["timings"]
        print("index timings: " + ", ".join(f"{k} {v:.1f}s" for k, v in timings.items()))
    header = (
        f"{'method':32} {'n':>5} {'p50':>8} {'p90':>8} {'p99':>8} {'max':>8}  p99<{TARGET_MS:.0f}ms"
    )
    print(header)
    print("-" * len(header))
    everything: list[float] = []
    for method, values in sorted(result["latencies"].items()):
        everything += values
        p99 = percentile(values, 99)
        ok = "yes" if p99 < TARGET_MS else "NO"
        errors = result["errors"].get(method, 0)
        note = f"  ({errors} errors)" if errors else ""
        cells = (statistics.median(values), percentile(values, 90), p99, max(values))
        print(f"{method:32} {len(values):>5} " + " ".join(f"{c:>8.1f}" for c in cells)
              + f"  {ok}{note}")  # fmt: skip
    cells = (statistics.median(everything), percentile(everything, 90),
             percentile(everything, 99), max(everything))  # fmt: skip
    print(f"{'all requests':32} {len(everything):>5} " + " ".join(f"{c:>8.1f}" for c in cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--path", type=Path, help="use this workspace instead of generating one")
    parser.add_argument("--seconds", type=float, default=60.0, help="stop measuring after this")
    args = parser.parse_args()
    if args.path:
        root = args.path.resolve()
        paths = [p.relative_to(root).as_posix() for p in root.rglob("*.py")]
    else:
        root = Path(tempfile.mkdtemp(prefix="lsp-bench-ws-"))
        paths = generate(root, args.files)
    load_before = os.getloadavg()[0]
    result = asyncio.run(measure(root, paths, args.seconds))
    result["load"] = (load_before, os.getloadavg()[0])
    report(result, len(paths))


if __name__ == "__main__":
    main()
