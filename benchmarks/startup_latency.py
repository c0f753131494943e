"""Import and first-answer times of the commands and servers that need no model, before/after.

    python benchmarks/startup_latency.py --baseline REV [--reps 3] [--skip-servers]

The workspace is ``click``'s source (copied from this environment's site-packages) with a
``tests/`` and a ``docs/`` folder (this repository's unit tests and docs), so the test and doc
lanes exist: their vectors are deferred, the case where a repeated ``index`` used to wait for a
model load it did not report. ``--baseline REV`` checks REV out in a temporary ``git worktree``
and runs it with ``PYTHONPATH=<worktree>/src`` (its own cache and index), call by call
interleaved with the current tree, so both columns share the machine's load.

Each CLI call is a fresh interpreter running ``main()``; it reports its wall time and whether
torch was imported (``sys.modules``). Each server is started over stdio by a tiny JSON-RPC
client that times its first answers and looks at ``/proc/<pid>/maps`` when they arrive: "model
mapped" means libtorch was loaded into the server by then. Prints the CPU, the load average at
start and end, and per row the median of ``--reps`` calls per column.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
from search_cli_latency import baseline_tree, cpu_model, load  # noqa: E402  (one copy)

HEAVY = ("torch", "sentence_transformers", "llama_cpp")
PROBE = """
import json, sys, time
started = time.perf_counter()
code = 1
try:
    from agentic_lsp.cli.main import main
    code = main(sys.argv[2:])
except SystemExit as exc:
    code = exc.code
finally:
    heavy = sorted({n.split(".")[0] for n in sys.modules} & set(%r))
    with open(sys.argv[1], "w") as fh:
        json.dump({"seconds": time.perf_counter() - started, "heavy": heavy, "code": code}, fh)
"""
ANSWER_TIMEOUT_S = 300.0


def workspace(base: Path) -> Path:
    import click

    ws = base / "ws"
    shutil.copytree(Path(click.__file__).parent, ws / "src" / "click")
    shutil.copytree(REPO / "tests" / "unit", ws / "tests", ignore=shutil.ignore_patterns("__py*"))
    shutil.copytree(REPO / "docs", ws / "docs")
    return ws


def environment(src: Path, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTIC_LSP_")}
    env.pop("OLLAMA_HOST", None)
    env.update(
        PYTHONPATH=str(src),
        HF_HUB_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        XDG_CACHE_HOME=str(home / "cache"),
        XDG_CONFIG_HOME=str(home / "config"),
        AGENTIC_LSP_CONFIG=str(home / "none.toml"),
        AGENTIC_LSP_INDEX__WATCH="false",
        OLLAMA_HOST="127.0.0.1:9",  # nothing listens: doctor's Ollama check fails fast, as offline
    )
    return env


# -- the CLI ------------------------------------------------------------------------------------


def cli(env: dict[str, str], argv: list[str], tmp: Path) -> tuple[float, bool, int]:
    """(seconds of the whole process, torch & co imported, exit status)."""
    report = tmp / "probe.json"
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", PROBE % (HEAVY,), str(report), *argv],
        env=env,
        capture_output=True,
        timeout=900,
    )
    seconds = time.perf_counter() - started
    data = json.loads(report.read_text())
    return seconds, bool(data["heavy"]), int(data["code"] or 0)


def cli_rows(
    columns: dict[str, dict[str, str]], ws: Path, reps: int, tmp: Path
) -> list[tuple[str, dict[str, str]]]:
    w = ["-w", str(ws)]
    cases = {
        "import agentic_lsp.cli.main": None,
        "doctor": ["doctor", *w],
        "index, nothing changed": ["index", str(ws)],
        "search (lexical, --functions)": ["search", "format the help text", *w, "--functions"],
        "search (lexical, files)": ["search", "format the help text", *w],
        "run --workflow bugfix (unknown)": ["run", "fix it", "--workflow", "bugfix", *w],
        "run --show-graph --workflow bug_fix": ["run", "--show-graph", "--workflow", "bug_fix", *w],
    }
    rows = []
    for name, argv in cases.items():
        cells: dict[str, list[tuple[float, bool, int]]] = {c: [] for c in columns}
        for _ in range(reps):
            for column, env in columns.items():
                if argv is None:
                    started = time.perf_counter()
                    command = [sys.executable, "-c", "import agentic_lsp.cli.main"]
                    subprocess.run(command, env=env, check=True)
                    cells[column].append((time.perf_counter() - started, False, 0))
                else:
                    cells[column].append(cli(env, argv, tmp))
        row = {}
        for column, runs in cells.items():
            median = statistics.median(s for s, _, _ in runs)
            torch = " +torch" if any(h for _, h, _ in runs) else ""
            codes = sorted({c for _, _, c in runs})
            row[column] = f"{median:.2f} s{torch} (exit {','.join(map(str, codes))})"
        rows.append((name, row))
        print(f"  {name}: {row}", file=sys.stderr, flush=True)
    return rows


# -- the servers --------------------------------------------------------------------------------


class Server:
    """A server over stdio (``lsp``: Content-Length frames; else one JSON message a line):
    requests timed from the process's start, the server's own requests answered with null."""

    def __init__(self, argv: list[str], env: dict[str, str], framing: str, log: Path) -> None:
        self.framing = framing
        self._log = log.open("wb")
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agentic_lsp", *argv],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
        )
        self._answers: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self._next = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        frame = f"Content-Length: {len(body)}\r\n\r\n".encode() + body
        assert self.proc.stdin is not None
        with self._lock:
            self.proc.stdin.write(frame if self.framing == "lsp" else body + b"\n")
            self.proc.stdin.flush()

    def _message(self) -> dict[str, Any] | None:
        stream = self.proc.stdout
        assert stream is not None
        if self.framing != "lsp":
            line = stream.readline()
            return json.loads(line) if line else None
        length = 0
        while (line := stream.readline()) not in (b"\r\n", b""):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return json.loads(stream.read(length)) if line else None

    def _read(self) -> None:
        while (message := self._message()) is not None:
            if "method" in message and "id" in message:
                self._send({"id": message["id"], "result": None})
            elif "id" in message and message["id"] in self._answers:
                self._answers[message["id"]].put(message)

    def request(self, method: str, params: Any) -> tuple[float, dict[str, Any], bool, int]:
        """(seconds since the process started, the reply, libtorch mapped, RSS MiB) when the
        answer came."""
        self._next += 1
        answer: queue.Queue[dict[str, Any]] = queue.Queue()
        self._answers[self._next] = answer
        self._send({"id": self._next, "method": method, "params": params})
        reply = answer.get(timeout=ANSWER_TIMEOUT_S)
        at = time.perf_counter() - self.started
        maps = Path(f"/proc/{self.proc.pid}/maps").read_text(errors="replace")
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        rss = next(int(ln.split()[1]) for ln in status.splitlines() if ln.startswith("VmRSS"))
        return at, reply, "libtorch" in maps, rss // 1024

    def notify(self, method: str, params: Any) -> None:
        self._send({"method": method, "params": params})

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self._log.close()


def _cell(at: float, reply: dict[str, Any], torch: bool, rss: int, what: str) -> str:
    if "error" in reply:
        return f"{at:.2f} s ERROR {str(reply['error'])[:60]}"
    mapped = "model mapped" if torch else "no model"
    return f"{at:.2f} s ({what}; {mapped}; {rss} MiB)"


def first_answers(env: dict[str, str], ws: Path, tmp: Path) -> dict[str, str]:
    """Per server: the time (from its start) to its first answers, and whether the model was
    in it by then."""
    cells: dict[str, str] = {}
    uri = ws.as_uri()
    lsp = Server(["serve", "-w", str(ws)], env, "lsp", tmp / "lsp.log")
    try:
        init = {"processId": os.getpid(), "rootUri": uri, "capabilities": {},
                "workspaceFolders": [{"uri": uri, "name": ws.name}]}  # fmt: skip
        cells["LSP initialize"] = _cell(*lsp.request("initialize", init), "answered")
        lsp.notify("initialized", {})
        query = {"query": "Command", "limit": 5}
        at, reply, torch, rss = lsp.request("workspace/symbol", query)
        found = len(reply.get("result") or [])
        cells["LSP first workspace/symbol"] = _cell(at, reply, torch, rss, f"{found} symbols")
        search = {"command": "agentic.search", "arguments": [{"query": "format the help text"}]}
        at, reply, torch, rss = lsp.request("workspace/executeCommand", search)
        found = len((reply.get("result") or {}).get("results") or [])
        cells["LSP first agentic.search"] = _cell(at, reply, torch, rss, f"{found} results")
    finally:
        lsp.stop()
    mcp = Server(["mcp", "-w", str(ws)], env, "ndjson", tmp / "mcp.log")
    try:
        init = {"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"}}  # fmt: skip
        cells["MCP initialize"] = _cell(*mcp.request("initialize", init), "answered")
        mcp.notify("notifications/initialized", {})
        cells["MCP tools/list"] = _cell(*mcp.request("tools/list", {}), "answered")
        call = {"name": "search_code", "arguments": {"query": "format the help text", "limit": 5}}
        at, reply, torch, rss = mcp.request("tools/call", call)
        data = (reply.get("result") or {}).get("structuredContent") or {}
        found = len(data.get("results") or [])
        cells["MCP first search_code"] = _cell(at, reply, torch, rss, f"{found} results")
    finally:
        mcp.stop()
    acp = Server(["acp"], env, "ndjson", tmp / "acp.log")
    try:
        init = {"protocolVersion": 1, "clientCapabilities": {}}
        cells["ACP initialize"] = _cell(*acp.request("initialize", init), "answered")
        new = {"cwd": str(ws), "mcpServers": []}
        cells["ACP session/new"] = _cell(*acp.request("session/new", new), "answered")
    finally:
        acp.stop()
    return cells


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", required=True, help="git revision for the before column")
    parser.add_argument("--reps", type=int, default=3, help="calls per CLI row and column")
    parser.add_argument("--skip-servers", action="store_true")
    args = parser.parse_args()
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip()  # fmt: skip
    print(f"cpu: {cpu_model()}, {os.cpu_count()} cores; {platform.platform()}")
    print(f"before: {args.baseline}; after: {head} (working tree); load average at start: {load()}")
    with tempfile.TemporaryDirectory(prefix="agentic-startup-") as name:
        base = Path(name)
        ws = workspace(base)
        with baseline_tree(args.baseline, base) as tree:
            columns = {
                "before": environment(tree / "src", base / "home-before"),
                "after": environment(REPO / "src", base / "home-after"),
            }
            for column, env in columns.items():  # each version builds its own index first
                seconds, _, code = cli(env, ["index", str(ws)], base)
                print(f"first index ({column}): {seconds:.1f} s, exit {code}", file=sys.stderr)
            rows = cli_rows(columns, ws, args.reps, base)
            if not args.skip_servers:
                answers = {c: first_answers(env, ws, base) for c, env in columns.items()}
                for name in answers["after"]:
                    rows.append((name, {c: answers[c].get(name, "-") for c in columns}))
    width = max(len(name) for name, _ in rows)
    print(f"\n{'':<{width}}  {'before':<44}  after")
    for name, row in rows:
        print(f"{name:<{width}}  {row['before']:<44}  {row['after']}")
    print(f"load average at end: {load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
