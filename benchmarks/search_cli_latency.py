"""Per-call wall time of ``agentic-lsp search`` run as a user runs it: a fresh process per call.

    python benchmarks/search_latency.py --cli [--baseline REV] [--calls 10] [--package click]

The workspace is an installed package's source (default ``click``) copied from this
environment's site-packages to a temporary folder. Three setups, files and ``--functions``:

(i)   an editor's server owns the workspace: ``python -m agentic_lsp serve`` started over stdio,
      initialized by a tiny LSP client, which waits for its first index and for the server to
      go idle (background embedding done) before the calls;
(ii)  no owner, warm index (each version indexed it first, embeddings included);
(iii) no owner, ``--wait-dense`` (the full fusion, as the command answered before the bridge).

``--baseline REV`` checks REV out in a temporary ``git worktree`` and runs the same calls with
``PYTHONPATH=<worktree>/src`` (its own index cache, except in (i), where it meets the server's
index as a user's call would), interleaved call by call with the current tree's, so both columns
share the machine's load. The baseline has no ``--wait-dense``: its
plain call is its full fusion, shown as the "before" of (ii) and (iii). Prints the CPU, the
load average at start and end and per setup, p50/p95 per column and the p50 ratio.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
QUERIES = [
    "parse command line options",
    "format the help text of a command",
    "prompt the user for a confirmation",
    "shell completion for bash",
    "convert a parameter value to an integer range",
    "open a file lazily for writing",
    "echo colored text to the terminal",
    "invoke a subcommand of a group",
    "read default values from environment variables",
    "render a progress bar",
]
SERVER_START_TIMEOUT_S = 600.0


def cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# -- the two trees ------------------------------------------------------------------------------


@contextlib.contextmanager
def baseline_tree(rev: str, base: Path) -> Iterator[Path]:
    """A temporary detached worktree of ``rev``; removed afterwards."""
    tree = base / "baseline"
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(tree), rev], check=True
    )
    try:
        yield tree
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)])


def environment(src: Path, home: Path, cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTIC_LSP_")}
    env.update(
        PYTHONPATH=str(src),
        HF_HUB_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        XDG_CACHE_HOME=str(home / "xdg-cache"),
        XDG_CONFIG_HOME=str(home / "xdg-config"),
        AGENTIC_LSP_CONFIG=str(home / "none.toml"),
        AGENTIC_LSP_CACHE_DIR=str(cache),
        AGENTIC_LSP_INDEX__WATCH="false",
    )
    return env


BRIDGED = "answered by the agentic-lsp server"


def cli_call(
    env: dict[str, str], ws: Path, query: str, *flags: str, expect: str = ""
) -> tuple[float, str]:
    """One ``agentic-lsp search`` process: (seconds, "" or a short failure); a call whose
    stderr lacks ``expect`` (say, it was to be answered by the server) counts as failed."""
    command = [sys.executable, "-m", "agentic_lsp", "search", query, "-w", str(ws), "--json"]
    started = time.perf_counter()
    done = subprocess.run([*command, *flags], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        return seconds, (done.stderr.strip().splitlines() or ["failed"])[0][:90]
    if expect not in done.stderr:
        return seconds, f"stderr lacks {expect!r}"
    return seconds, ""


# -- a tiny LSP client ----------------------------------------------------------------------------


class Editor:
    """``agentic-lsp serve`` over stdio: initialize, answer its requests, collect its events."""

    def __init__(self, env: dict[str, str], ws: Path, log: Path) -> None:
        self._log = log.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agentic_lsp", "serve", "-w", str(ws)],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
        )
        self.events: list[dict[str, Any]] = []
        self._next_id = 0
        self._writing = threading.Lock()  # the reader thread answers the server's requests
        threading.Thread(target=self._read, daemon=True).start()
        uri = ws.as_uri()
        self.request("initialize", {
            "processId": os.getpid(), "rootUri": uri, "capabilities": {},
            "workspaceFolders": [{"uri": uri, "name": ws.name}],
        })  # fmt: skip
        self.notify("initialized", {})

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert self.proc.stdin is not None
        with self._writing:
            self.proc.stdin.write(f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
            self.proc.stdin.flush()

    def request(self, method: str, params: Any) -> None:
        self._next_id += 1
        self._send({"id": f"bench-{self._next_id}", "method": method, "params": params})

    def notify(self, method: str, params: Any) -> None:
        self._send({"method": method, "params": params})

    def _read(self) -> None:
        stream = self.proc.stdout
        assert stream is not None
        while True:
            length = 0
            while (line := stream.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if not line:
                return
            message = json.loads(stream.read(length))
            if "method" in message and "id" in message:  # a request: answer it plainly
                self._send({"id": message["id"], "result": None})
            elif message.get("method") == "agentic/event":
                self.events.append(message["params"])

    def wait_ready(self) -> None:
        """Until the first index is done, the endpoint published and the server idle."""
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while not {"index_done", "mcp_endpoint"} <= {e.get("kind") for e in self.events}:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self._log.flush()
                tail = Path(self._log.name).read_text(errors="replace")[-3000:]
                kinds = [e.get("kind") for e in self.events]
                raise RuntimeError(f"the server did not get ready; events {kinds}; log:\n{tail}")
            time.sleep(0.1)
        self.wait_idle(deadline)

    def wait_idle(self, deadline: float) -> None:
        stat = Path(f"/proc/{self.proc.pid}/stat")
        if not stat.exists():
            return
        ticks = os.sysconf("SC_CLK_TCK")

        def cpu() -> float:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / ticks

        while time.monotonic() < deadline:
            before = cpu()
            time.sleep(2.0)
            if cpu() - before < 0.1:  # under 5% of a core for 2 s
                return

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.request("shutdown", None)
            self.notify("exit", None)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self._log.close()


# -- the scenario ---------------------------------------------------------------------------------


def measure(
    calls: int,
    columns: dict[str, tuple[dict[str, str], tuple[str, ...]]],
    ws: Path,
    flags: tuple[str, ...],
    bridged: bool = False,
) -> dict[str, tuple[list[float], list[str]]]:
    """``calls`` queries, each run once per column in turn (interleaved)."""
    timings: dict[str, tuple[list[float], list[str]]] = {c: ([], []) for c in columns}
    for query in (QUERIES * (calls // len(QUERIES) + 1))[:calls]:
        for column, (env, extra) in columns.items():
            expect = BRIDGED if bridged and column == "after" else ""
            seconds, failure = cli_call(env, ws, query, *flags, *extra, expect=expect)
            timings[column][0].append(seconds)
            if failure:
                timings[column][1].append(failure)
    return timings


def summary(values: list[float], failures: list[str]) -> tuple[str, str, float]:
    p50, p95 = statistics.median(values), pct(values, 0.95)
    mark = f" (failed {len(failures)}/{len(values)})" if failures else ""
    return f"{p50:.2f}{mark}", f"{p95:.2f}", p50


def run(rev: str | None, calls: int, package: str) -> int:
    module = __import__(package)
    source = Path(module.__file__).parent  # type: ignore[arg-type]
    print(f"cpu: {cpu_model()}, {os.cpu_count()} cores; platform {platform.platform()}")
    print(f"load average at start: {load()}")
    rows: list[tuple[str, str, str, str, str, str, str, str]] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="agentic-cli-latency-") as tmp:
        base = Path(tmp)
        ws = base / "ws" / package
        shutil.copytree(source, ws, ignore=shutil.ignore_patterns("__pycache__"))
        after_env = environment(REPO / "src", base / "home", base / "cache-after")
        with contextlib.ExitStack() as stack:
            before_env = None
            if rev:
                tree = stack.enter_context(baseline_tree(rev, base))
                before_env = environment(tree / "src", base / "home", base / "cache-before")
            for env in filter(None, (before_env, after_env)):
                subprocess.run(
                    [sys.executable, "-m", "agentic_lsp", "index", str(ws), "--json"],
                    env=env, check=True, capture_output=True,
                )  # fmt: skip
            files = sum(1 for p in ws.rglob("*.py"))
            print(f"workspace: {package} {getattr(module, '__version__', '')} ({files} .py files)")

            def columns(
                *after_flags: str, shared: bool = False
            ) -> dict[str, tuple[dict[str, str], tuple[str, ...]]]:
                """``shared``: the baseline uses the server's index (as a user's call would)."""
                both = {"after": (after_env, after_flags)}
                if before_env is not None:
                    env = {
                        **before_env,
                        "AGENTIC_LSP_CACHE_DIR": after_env["AGENTIC_LSP_CACHE_DIR"],
                    }
                    both = {"before": (env if shared else before_env, ()), **both}
                return both

            def record(setup: str, flags: tuple[str, ...], timed: dict[str, Any], at: str) -> None:
                kind = "functions" if flags else "files"
                after = summary(*timed["after"])
                before = summary(*timed["before"]) if "before" in timed else ("-", "-", 0.0)
                failed = "before" in timed and timed["before"][1]
                ratio = f"{before[2] / after[2]:.1f}x" if before[2] and not failed else "-"
                rows.append((setup, kind, before[0], before[1], after[0], after[1], ratio, at))
                for column, (_, failures) in timed.items():
                    if failures:
                        notes.append(f"{setup} {kind} {column}: {failures[0]}")

            # (i) an editor's server owns the workspace (the current tree's server)
            editor = Editor(after_env, ws, base / "serve.log")
            try:
                editor.wait_ready()
                for flags in ((), ("--functions",)):  # first call: the server may load a model
                    first, failure = cli_call(after_env, ws, "warm up", *flags, expect=BRIDGED)
                    what = " ".join(flags) or "files"
                    notes.append(f"(i) first call, {what}: {first:.2f}s, not counted {failure}")
                for flags in ((), ("--functions",)):
                    timed = measure(calls, columns(shared=True), ws, flags, bridged=True)
                    record("(i) editor's server owns it", flags, timed, load())
            finally:
                editor.stop()
            # (ii) no owner, warm index; (iii) no owner, --wait-dense
            local = (("(ii) no owner", ()), ("(iii) no owner, --wait-dense", ("--wait-dense",)))
            for setup, extra in local:
                for flags in ((), ("--functions",)):
                    timed = measure(calls, columns(*extra), ws, flags)
                    record(setup, flags, timed, load())
    print(f"calls per cell: {calls} (fresh process each), p50/p95 in seconds")
    print(
        "\n| setup | query | before p50 | before p95 | after p50 | after p95 | p50 ratio | load |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    for note in notes:
        print(f"note: {note}")
    print(f"load average at end: {load()}")
    return 0
