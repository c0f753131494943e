"""LSP request latency while typing and during a cold index, before/after in one run.

Usage: python benchmarks/lsp_latency.py [--files 5000] [--path DIR] [--seconds 60]
       [--scenario typing|growing|cold|both|all] [--baseline REV] [--profile DIR]

Generates a workspace of ``--files`` Python modules (classes, functions, docstrings, imports
between modules) unless ``--path`` names one, and starts the real server (``python -m agentic_lsp
serve``) over stdio with a fresh cache dir for every scenario. Latency is measured from writing
the request frame to reading its response.

* **typing**: right after ``initialized`` (the cold index is running), one document is opened
  and 1,000 incremental ``textDocument/didChange`` notifications are sent 5 ms apart, typing new
  functions into it character by character; every 10th change is followed by a
  ``textDocument/documentSymbol`` request that does not hold the typing up (an editor keeps
  sending changes while a request is out). After the storm one more documentSymbol checks the
  answer holds the last function typed. Target: p99 <= 100 ms.
* **growing**: the same storm, but each change appends a whole two-line function, so the buffer
  grows to over 1,000 symbols and every outline is bigger than the one before. Target: p99 <=
  200 ms on a quiet machine (<= 400 ms with the load held >= 4 on 2 cores).
* **cold**: from ``initialized``, editor-like requests back to back, one at a time:
  documentSymbol, hover, definition, references and workspace/symbol on open documents, plus
  ``agentic.indexStatus``, until the cold index finishes (``index_done``) or ``--seconds``.
  Target: every request p99 <= 50 ms.

``--baseline REV`` checks REV out in a temporary ``git worktree`` and runs every scenario with
the server started from it (``PYTHONPATH=<worktree>/src``) and then from this checkout, on the
same generated workspace, printing both columns and their ratio. ``--profile DIR`` records each
server with ``py-spy record`` (raw collapsed stacks in DIR) when py-spy is installed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

TARGET_MS = 50.0
TYPING_TARGET_MS = 100.0
GROWING_TARGET_MS = 200.0
REPO = Path(__file__).resolve().parent.parent


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

    async def send(self, method: str, params: Any) -> asyncio.Future[tuple[float, dict]]:
        """Write a request now; the future gives ``(ms, reply)`` once its response is read."""
        self._next += 1
        loop = asyncio.get_running_loop()
        future: asyncio.Future[dict[str, Any]] = loop.create_future()
        self.pending[self._next] = future
        start = time.perf_counter()
        await self._write({"jsonrpc": "2.0", "id": self._next, "method": method,
                           "params": params})  # fmt: skip

        async def timed() -> tuple[float, dict[str, Any]]:
            reply = await asyncio.wait_for(future, 120)
            return (time.perf_counter() - start) * 1000, reply

        return asyncio.ensure_future(timed())

    async def request(self, method: str, params: Any) -> tuple[float, dict[str, Any]]:
        return await (await self.send(method, params))

    async def notify(self, method: str, params: Any) -> None:
        await self._write({"jsonrpc": "2.0", "method": method, "params": params})


def _uri(path: Path) -> str:
    return path.resolve().as_uri()


@contextlib.asynccontextmanager
async def started(root: Path, src: Path, profile: Path | None):
    """The server from ``src`` (a checkout's ``src``), initialized, with a fresh cache dir."""
    home = Path(tempfile.mkdtemp(prefix="lsp-bench-"))
    env = dict(os.environ, XDG_CACHE_HOME=str(home / "cache"), HF_HUB_OFFLINE="1",
               XDG_CONFIG_HOME=str(home / "config"), TOKENIZERS_PARALLELISM="false",
               PYTHONPATH=str(src))  # fmt: skip
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agentic_lsp", "--log-level", "WARNING", "serve",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL, env=env, cwd=str(home),
    )  # fmt: skip
    spy = None
    spy_bin = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if profile is not None and Path(spy_bin).exists():
        spy = subprocess.Popen(
            [spy_bin, "record", "--pid", str(process.pid), "--format", "raw", "--threads",
             "--rate", "200", "--output", str(profile), "--nonblocking",
             *os.environ.get("LSP_BENCH_PYSPY", "").split()],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
    server = Server(process)
    caps = {"window": {"workDoneProgress": True}}
    init_ms, _ = await server.request("initialize", {
        "processId": os.getpid(), "rootUri": _uri(root), "capabilities": caps,
        "initializationOptions": {"cache_dir": str(home / "index")}})  # fmt: skip
    await server.notify("initialized", {})
    try:
        yield server, init_ms
    finally:
        if process.returncode is None:
            with contextlib.suppress(Exception):
                await server.request("shutdown", None)
                await server.notify("exit", None)
            try:
                await asyncio.wait_for(process.wait(), 60)
            except TimeoutError:
                process.kill()
        if spy is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                spy.wait(30)
        shutil.rmtree(home, ignore_errors=True)


async def measure_cold(
    root: Path, paths: list[str], seconds: float, src: Path, profile: Path | None
) -> dict[str, Any]:
    async with started(root, src, profile) as (server, init_ms):
        begun = time.perf_counter()
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
        while time.perf_counter() - begun < seconds:
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
                ("workspace/executeCommand",
                 {"command": "agentic.indexStatus", "arguments": [{}]}),
                ("textDocument/references",
                 {**on_helper, "context": {"includeDeclaration": True}}),
            ]  # fmt: skip
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
        elapsed = time.perf_counter() - begun
        done = next((e for e in server.events if e["kind"] == "index_done"), None)
    return {"latencies": latencies, "errors": errors, "phases": phases, "elapsed": elapsed,
            "init_ms": init_ms, "index_done": done}  # fmt: skip


def typed_text(count: int) -> str:
    """At least ``count`` characters of new functions, typed one character per change."""
    chunks, k = [], 0
    while sum(map(len, chunks)) < count:
        chunks.append(f"\n\ndef typed_{k}(value):\n    total = value + {k}\n    return total\n")
        k += 1
    return "".join(chunks)[:count]


def _positions(text: str, chunks: Iterable[str]) -> Iterator[tuple[int, int, str]]:
    """``(line, character, chunk)`` of each chunk appended in turn at the end of ``text``."""
    lines = text.split("\n")
    line, col = len(lines) - 1, len(lines[-1])
    for chunk in chunks:
        yield line, col, chunk
        breaks = chunk.count("\n")
        line, col = (
            (line + breaks, len(chunk) - chunk.rfind("\n") - 1)
            if breaks
            else (line, col + len(chunk))
        )


def grown_functions(count: int) -> list[str]:
    """``count`` changes, each a whole two-line function appended to the buffer."""
    return [f"\n\ndef grown_{k}(value):\n    return value + {k}\n" for k in range(count)]


async def measure_typing(
    root: Path, paths: list[str], src: Path, profile: Path | None,
    changes: int = 1000, interval: float = 0.005, every: int = 10, grow: bool = False,
) -> dict[str, Any]:  # fmt: skip
    async with started(root, src, profile) as (server, init_ms):
        rel = paths[len(paths) // 2]
        uri = _uri(root / rel)
        text = (root / rel).read_text()
        item = {"uri": uri, "languageId": "python", "version": 1, "text": text}
        await server.notify("textDocument/didOpen", {"textDocument": item})
        chunks = grown_functions(changes) if grow else list(typed_text(changes))
        typed = "".join(chunks)
        out: list[asyncio.Future[tuple[float, dict]]] = []
        begun = time.perf_counter()
        for n, (line, col, ch) in enumerate(_positions(text, chunks), start=1):
            delay = begun + n * interval - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            here = {"line": line, "character": col}
            change = {"range": {"start": here, "end": here}, "text": ch}
            await server.notify("textDocument/didChange", {
                "textDocument": {"uri": uri, "version": n + 1},
                "contentChanges": [change]})  # fmt: skip
            if n % every == 0:
                out.append(await server.send("textDocument/documentSymbol",
                                             {"textDocument": {"uri": uri}}))  # fmt: skip
        sent_s = time.perf_counter() - begun
        replies = await asyncio.gather(*out)
        _, last = await server.request("textDocument/documentSymbol",
                                       {"textDocument": {"uri": uri}})  # fmt: skip
        names = {s.get("name") for s in last.get("result") or []}
        if grow:
            expected: str | None = f"grown_{changes - 1}"
        else:
            complete = (text + typed).count("    return total\n") - 1
            expected = f"typed_{complete}" if complete >= 0 else None
        phase = next((e["data"].get("phase") for e in reversed(server.events)
                      if e["kind"] == "index_state"), None)  # fmt: skip
    key = "documentSymbol (growing)" if grow else "documentSymbol (typing)"
    latencies = {key: [ms for ms, _ in replies]}
    errors = {key: sum("error" in r for _, r in replies)}
    return {"symbols": len(last.get("result") or []), "latencies": latencies, "errors": errors,
            "init_ms": init_ms, "sent_s": sent_s,
            "latest_ok": expected is None or expected in names, "expected": expected,
            "phase": phase}  # fmt: skip


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _cells(values: list[float]) -> tuple[float, ...]:
    return (statistics.median(values), percentile(values, 95), percentile(values, 99))


def report_table(title: str, runs: dict[str, dict[str, Any]], target: float) -> None:
    """One table: a row per method, p50/p95/p99 per run (baseline, current), the ratio."""
    labels = list(runs)
    print(f"\n## {title}")
    for label, result in runs.items():
        load = result["load"]
        extra = ""
        if "index_done" in result:
            how = "finished" if result["index_done"] else "still running"
            extra = (f"; measured {result['elapsed']:.1f} s of the cold index ({how}), phases "
                     f"{' → '.join(result['phases'])}")  # fmt: skip
        if "sent_s" in result:
            verdict = "holds" if result["latest_ok"] else "LACKS"
            values = next(iter(result["latencies"].values()))
            slowest = sorted(range(len(values)), key=lambda i: -values[i])[:5]
            extra = (f"; 1,000 changes sent in {result['sent_s']:.1f} s; outline at the end: "
                     f"{result['symbols']} symbols; index phase at the end: "
                     f"{result['phase']}; the answer after the storm {verdict} "
                     f"{result['expected']}")  # fmt: skip
            extra += "; slowest requests (#n: ms): " + ", ".join(
                f"#{i + 1}: {values[i]:.0f}" for i in sorted(slowest)
            )
        print(f"- {label}: load average {load[0]:.2f} → {load[1]:.2f}; "
              f"initialize {result['init_ms']:.0f} ms{extra}")  # fmt: skip
    head = f"| {'method':30} | {'n':>9} |"
    for label in labels:
        head += f" {label + ' p50':>16} | {'p95':>8} | {'p99':>8} |"
    if len(labels) == 2:
        head += " p99 ratio |"
    head += f" p99 ≤ {target:.0f} ms |"
    print(head)
    print("|" + "|".join("-" * (len(c)) for c in head.split("|")[1:-1]) + "|")
    methods = sorted({m for r in runs.values() for m in r["latencies"]})
    for method in methods:
        counts = "/".join(str(len(r["latencies"].get(method, []))) for r in runs.values())
        row = f"| {method:30} | {counts:>9} |"
        p99s = []
        for result in runs.values():
            values = result["latencies"].get(method)
            if not values:
                row += f" {'–':>16} | {'–':>8} | {'–':>8} |"
                p99s.append(float("nan"))
                continue
            p50, p95, p99 = _cells(values)
            errors = result["errors"].get(method, 0)
            mark = f" ({errors} err)" if errors else ""
            row += f" {p50:>16.1f} | {p95:>8.1f} | {p99:>8.1f}{mark} |"
            p99s.append(p99)
        if len(labels) == 2:
            ratio = p99s[0] / p99s[1] if p99s[1] else float("inf")
            row += f" {ratio:>8.1f}x |"
        row += f" {'yes' if p99s[-1] <= target else 'NO':>11} |"
        print(row)


@contextlib.contextmanager
def checkout(rev: str) -> Iterator[Path]:
    """A temporary detached ``git worktree`` of ``rev``; removed afterwards."""
    where = Path(tempfile.mkdtemp(prefix="lsp-bench-rev-")) / "tree"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "--quiet", str(where),
                    rev], check=True)  # fmt: skip
    try:
        yield where
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(where)],
                       check=False)  # fmt: skip
        shutil.rmtree(where.parent, ignore_errors=True)


def run_scenario(
    name: str, root: Path, paths: list[str], src: Path, args: argparse.Namespace, label: str
) -> dict[str, Any]:
    profile = args.profile / f"{name}-{label}.txt" if args.profile else None
    before = os.getloadavg()[0]
    if name in ("typing", "growing"):
        result = asyncio.run(measure_typing(root, paths, src, profile, grow=name == "growing"))
    else:
        result = asyncio.run(measure_cold(root, paths, args.seconds, src, profile))
    result["load"] = (before, os.getloadavg()[0])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--path", type=Path, help="use this workspace instead of generating one")
    parser.add_argument("--seconds", type=float, default=60.0, help="cold: stop measuring after")
    parser.add_argument(
        "--scenario",
        choices=["typing", "growing", "cold", "both", "all"],
        default="both",
        help="both: typing and cold; all: every scenario",
    )
    parser.add_argument("--baseline", metavar="REV", help="also measure the server at REV")
    parser.add_argument("--profile", type=Path, metavar="DIR", help="py-spy raw stacks here")
    args = parser.parse_args()
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    if args.path:
        root = args.path.resolve()
        paths = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py"))
    else:
        root = Path(tempfile.mkdtemp(prefix="lsp-bench-ws-"))
        paths = generate(root, args.files)
    scenarios = {"both": ["typing", "cold"], "all": ["typing", "growing", "cold"]}.get(
        args.scenario, [args.scenario]
    )
    print(f"machine: {cpu_model()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"load average at start {os.getloadavg()[0]:.2f}")  # fmt: skip
    print(f"workspace: {len(paths)} files; other processes competing for the cores inflate "
          "every figure, so compare columns of the same run")  # fmt: skip
    results: dict[str, dict[str, dict[str, Any]]] = {s: {} for s in scenarios}
    with contextlib.ExitStack() as stack:
        sources = []
        if args.baseline:
            tree = stack.enter_context(checkout(args.baseline))
            sources.append((f"before {args.baseline}", tree / "src"))
        sources.append(("after" if args.baseline else "now", REPO / "src"))
        for scenario in scenarios:
            for label, src in sources:
                results[scenario][label] = run_scenario(scenario, root, paths, src, args,
                                                        label.split()[0])  # fmt: skip
    if "typing" in results:
        report_table("documentSymbol while typing (1,000 changes at 5 ms, a request every 10th)",
                     results["typing"], TYPING_TARGET_MS)  # fmt: skip
    if "growing" in results:
        report_table("documentSymbol while the file grows (1,000 functions appended at 5 ms, "
                     "a request every 10th)", results["growing"], GROWING_TARGET_MS)  # fmt: skip
    if "cold" in results:
        report_table("LSP requests during a cold index", results["cold"], TARGET_MS)
        for label, result in results["cold"].items():
            done = result["index_done"]
            if done:
                timings = done["data"]["timings"]
                print(f"- {label} index timings: "
                      + ", ".join(f"{k} {v:.1f}s" for k, v in timings.items()))  # fmt: skip
    print(f"\nload average at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
