"""Build verified bug-fix tasks for the workflow evaluation from real repositories' fix history.

Usage:
    python benchmarks/build_workflow_tasks.py mine --repo pallets/click [--mirror PATH]
    python benchmarks/build_workflow_tasks.py build \
        [--seeds benchmarks/data_workflow/task_seeds.jsonl] \
        [--out benchmarks/data_workflow/tasks.jsonl] [--mirrors-dir DIR ...] \
        [--mirror owner/name=PATH ...] [--only ID ...] [--setup-venvs]

``mine`` lists candidate commits of one repository: non-merge commits of the default branch
whose message says they fix something, that change one or two non-test Python source files
(at most ``MAX_SOURCE_LINES`` changed lines) and add or change test files. Choosing seeds from
that list is a person's job (the task text must describe the bug without giving the fix away).

``build`` reads the seeds (one JSON object a line: ``repo``, ``fix_commit``, ``task_source``
("commit" or "changelog"), optional ``drop_lines`` and ``drop_paragraphs``: substrings of the
message's or changelog's lines / paragraphs to drop because they state the code change rather
than the bug), and for each one:

1. clones the repository from a local bare mirror (``--mirror owner/name=PATH``, else
   ``<mirrors-dir>/<owner>+<name>[/repo]`` for each ``--mirrors-dir``) into a scratch checkout;
2. splits the fix's diff (against its first parent) into the source part (``gold_patch``) and
   the test part (``test_patch``); documentation and changelog files belong to neither;
3. runs the touched test files at the parent with the test patch applied, and at the fix commit,
   in the repository's virtualenv (``~/.cache/agentic-lsp-bench/eval-venvs/<owner>+<name>``,
   created with ``--setup-venvs``), with ``PYTHONPATH`` at the checkout's ``src`` or root;
4. keeps the seed only if some test fails before and passes after: ``fail_to_pass`` are those,
   ``pass_to_pass`` the other tests of the touched files that pass at both. The fix commit is
   run twice and only tests passing both times under the same node id count (this leaves out
   flaky tests and parametrize ids built from the clock).

Outcomes are recorded by a tiny pytest plugin (per node id: passed, failed, skipped), not by
parsing pytest's output, so that they do not depend on the pytest version a repository needs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_SEEDS = HERE / "data_workflow" / "task_seeds.jsonl"
DEFAULT_OUT = HERE / "data_workflow" / "tasks.jsonl"
CACHE = Path("~/.cache/agentic-lsp-bench").expanduser()
DEFAULT_MIRRORS = CACHE / "mirrors"
VENVS = CACHE / "eval-venvs"
MAX_SOURCE_FILES = 2
MAX_SOURCE_LINES = 40
MAX_PER_REPO = 8  # seeds past a repository's eighth verified task are reserves, not built
TEST_TIMEOUT_S = 120
TEST_MEMORY_BYTES = 4 << 30  # a test that loops forever on a bug must not take the machine

# Test dependencies per repository (pip specs); the repository itself is never installed.
REPO_REQUIREMENTS: dict[str, list[str]] = {
    "pallets/click": ["pytest==8.3.4"],
    "pallets/jinja": ["pytest==8.3.4", "markupsafe==2.1.5", "trio==0.27.0"],
    "pallets/werkzeug": [
        "pytest==8.3.4",
        "markupsafe==2.1.5",
        "pytest-timeout==2.3.1",
        "pytest-xprocess==1.0.2",
        "ephemeral-port-reserve==1.1.4",
    ],
    "python-attrs/attrs": ["pytest==8.3.4", "hypothesis==6.119.4"],
    "marshmallow-code/marshmallow": ["pytest==8.3.4", "simplejson==3.19.3", "pytz==2024.2"],
    "Textualize/rich": ["pytest==8.3.4", "pygments==2.18.0", "markdown-it-py==3.0.0", "attrs"],
    "more-itertools/more-itertools": ["pytest==8.3.4"],
    "tkem/cachetools": ["pytest==8.3.4"],
    "python-humanize/humanize": ["pytest==8.3.4", "freezegun==1.5.1"],
    "andialbrecht/sqlparse": ["pytest==8.3.4"],
}

FIX_WORDS = re.compile(r"\b(fix(es|ed)?|bug|regression|crash(es|ed)?|incorrect(ly)?|wrong)\b", re.I)
TEST_PATH = re.compile(r"(^|/)(tests?|testing)/|(^|/)(test_[^/]*|[^/]*_test|conftest)\.py$", re.I)
CHANGELOG_PATH = re.compile(r"(^|/)(CHANGE(S|LOG)|HISTORY|NEWS|changelog\.d/)[^/]*", re.I)
NON_SOURCE = re.compile(
    r"(^|/)(docs?|examples?|benchmarks?|scripts?|\.github|changelog\.d)/"
    r"|(^|/)(setup|noxfile|conftest|conf)\.py$",
    re.I,
)
# Lines of a commit message that never belong in a task text.
TRAILER = re.compile(
    r"^\s*(co-authored-by|signed-off-by|reviewed-by|acked-by|cc|see-also|refs?)\s*:", re.I
)
REFERENCE_ONLY = re.compile(
    r"^\s*((fix(es|ed)?|close[sd]?|resolve[sd]?|see|refs?|related( to)?)\s*:?\s*)?"
    r"(([\w.-]+/[\w.-]+)?#\d+[\s,.;]*(and\s*)?)+\s*$",
    re.I,
)
URL = re.compile(r"https?://\S+")
_REF = (
    r"(?:(?::issue:|:pr:|:ghsa:|:user:|\{issue\}|\{pr\}|\{ghsa\}|\{user\})`[^`]*`"
    r"|#\d+|issue ?\d+)"
)
ISSUE_REF = re.compile(
    rf"\s*\((?:\s*(?:(?:fix(?:es)?|close[sd]?|see|and)\s+)?{_REF}[\s,;]*)+\)(?=\W|$)", re.I
)
BARE_REF = re.compile(rf"\s*{_REF}(?:\s*,\s*{_REF})*")
THANKS = re.compile(r"\s*Thanks\b[^.]*(\.|$)")
# Squash-merge bullets and trailers that record the process, not the bug.
PROCESS_LINE = re.compile(
    r"^\s*([*-]\s*)?("
    r"(add(ed)?|update[sd]?|improve[sd]?|fix(ed)?)\s+(a\s+|the\s+)?"
    r"(news fragment|changelog( entry| message)?|changes|tests?|docs?|coverage( to test)?|"
    r"versionchanged tag|pr links?)\b.*"
    r"|\[pre-commit\.ci\].*|for more information, see.*|lint.*|oops|address(ed)? comments"
    r"|revert \".*|this reverts commit \w+\.?|update [\w./-]+\.(md|rst)|-{3,}|\[\^\d+\]:?.*"
    r")\s*$",
    re.I,
)
MERGE_LINE = re.compile(r"^\s*(Merge (pull request|branch)\b|\(cherry picked from)", re.I)


# --------------------------------------------------------------------------- pure parts


def task_id(repo: str, sha: str) -> str:
    """``owner/name`` + commit → ``owner__name-<7-char sha>``."""
    owner, name = repo.split("/", 1)
    return f"{owner}__{name}-{sha[:7]}"


def is_test_path(path: str) -> bool:
    return bool(TEST_PATH.search(path))


def is_source_path(path: str) -> bool:
    """A Python file a fix could change: not a test, doc, example, build script or changelog."""
    return path.endswith(".py") and not is_test_path(path) and not NON_SOURCE.search(path)


def split_diff(diff: str) -> dict[str, str]:
    """Split ``git diff`` text into ``{path: the file's chunk}`` (path = the new path, or the old
    one for a deletion), keeping each chunk byte for byte so the parts still apply."""
    chunks: dict[str, str] = {}
    starts = [m.start() for m in re.finditer(r"^diff --git ", diff, re.M)]
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else len(diff)
        chunk = diff[start:end]
        path = None
        for line in chunk.splitlines():
            if line.startswith("+++ ") and line[4:] != "/dev/null":
                path = line[4:].removeprefix("b/")
                break
            if line.startswith("--- ") and line[4:] != "/dev/null":
                path = line[4:].removeprefix("a/")
        if path is None:  # binary or mode-only change: take the header's b/ path
            m = re.match(r"diff --git a/(\S+) b/(\S+)", chunk)
            path = m.group(2) if m else f"?{i}"
        chunks[path] = chunk
    return chunks


@dataclass
class DiffParts:
    source: dict[str, str] = field(default_factory=dict)
    tests: dict[str, str] = field(default_factory=dict)
    other: dict[str, str] = field(default_factory=dict)

    @property
    def gold_patch(self) -> str:
        return "".join(self.source[p] for p in sorted(self.source))

    @property
    def test_patch(self) -> str:
        return "".join(self.tests[p] for p in sorted(self.tests))


def classify_diff(diff: str) -> DiffParts:
    parts = DiffParts()
    for path, chunk in split_diff(diff).items():
        if is_test_path(path):
            parts.tests[path] = chunk
        elif is_source_path(path):
            parts.source[path] = chunk
        else:
            parts.other[path] = chunk
    return parts


def changed_lines(chunk: str) -> int:
    """Added plus removed lines of a file's diff chunk."""
    return sum(
        1
        for line in chunk.splitlines()
        if (line.startswith("+") and not line.startswith("+++"))
        or (line.startswith("-") and not line.startswith("---"))
    )


def _drop_code_blocks(lines: list[str]) -> list[str]:
    """Drop diff snippets: fenced blocks whose lines look like a diff, and unfenced lines that
    start with ``+``/``-`` directly followed by code. Other fenced blocks (an example call, an
    error message) describe the bug and are kept."""
    out: list[str] = []
    block: list[str] | None = None
    for line in lines:
        if line.strip().startswith("```"):
            if block is None:
                block = [line]
                continue
            block.append(line)
            body = block[1:-1]
            if not any(re.match(r"^(@@|diff --git|[+-](?![+-]))", b) for b in body):
                out.extend(block)
            block = None
            continue
        if block is not None:
            block.append(line)
            continue
        if re.match(r"^[+-](?![\s-])\S", line):
            continue
        out.append(line)
    return out + (block or [])


def drop_paragraphs(text: str, needles: list[str] | tuple[str, ...]) -> str:
    """Drop every blank-line-separated paragraph that contains one of ``needles``."""
    if not needles:
        return text
    paragraphs = re.split(r"\n\s*\n", text)
    return "\n\n".join(p for p in paragraphs if not any(n in p for n in needles))


def scrub_message(
    message: str,
    drop_lines: list[str] | tuple[str, ...] = (),
    drop_paras: list[str] | tuple[str, ...] = (),
) -> str:
    """Commit message → task text: drop trailers (co-author, sign-off), merge lines, lines that
    only reference issues, URLs, issue/PR numbers in parentheses, code blocks and diff snippets,
    squash-merge bullets that record the process ("Add news fragment"), and every line
    containing one of ``drop_lines`` or paragraph containing one of ``drop_paras`` (a person's
    call: text stating the code change rather than the bug)."""
    out: list[str] = []
    message = drop_paragraphs(message, drop_paras)
    subject = ISSUE_REF.sub("", message.strip().splitlines()[0]).strip() if message.strip() else ""
    for i, raw in enumerate(_drop_code_blocks(message.splitlines())):
        line = raw.rstrip()
        if any(d in line for d in drop_lines):
            continue
        if i > 0 and re.sub(r"^[*-]\s+", "", line.strip()) == subject:
            continue  # a squash-merge bullet repeating the subject
        if (
            TRAILER.match(line)
            or MERGE_LINE.match(line)
            or REFERENCE_ONLY.match(line)
            or PROCESS_LINE.match(line)
        ):
            continue
        line = ISSUE_REF.sub("", line)
        had_url = bool(URL.search(line))
        line = URL.sub("", line).rstrip(" :(")
        if raw.strip() and (not line.strip() or (had_url and len(line.split()) < 3)):
            continue  # a line that was only a URL or a reference
        if re.fullmatch(r"\s*\[[^\]]*\]:?\s*", line):  # a markdown link label left alone
            continue
        out.append(line)
    text = "\n".join(out)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return text


def changelog_entry(changelog_chunk: str, drop_lines: list[str] | tuple[str, ...] = ()) -> str:
    """The lines a commit added to a changelog, as text: bullet markers and issue/PR references
    removed, continuation lines joined to their entry."""
    entries: list[str] = []
    for line in changelog_chunk.splitlines():
        if not line.startswith("+") or line.startswith("+++"):
            continue
        body = line[1:]
        if not body.strip() or any(d in body for d in drop_lines):
            continue
        if entries and body[:1].isspace() and not re.match(r"^\s*[-*]\s+", body):
            entries[-1] += " " + body.strip()  # an indented continuation line
        else:
            entries.append(re.sub(r"^\s*[-*]\s+", "", body).strip())
    cleaned = []
    for entry in entries:
        entry = re.sub(r"`[^`<]*<https?://[^>]*>`_+", "", entry)  # an RST link to an issue
        entry = ISSUE_REF.sub("", entry)
        entry = BARE_REF.sub("", entry)
        entry = THANKS.sub("", entry)
        entry = URL.sub("", entry)
        entry = re.sub(r"\s+([,;]|\.(?!\.))(?=\s|$)", r"\1", entry)
        entry = re.sub(r"\s{2,}", " ", entry).strip().rstrip(",; ")
        if (
            entry
            and not re.fullmatch(
                r"[=~^*-]+|(Version|Release)\b.*|Unreleased.*"
                r"|[\w ]{0,20}(fixes|changes|features):?",
                entry,
                re.I,
            )
            and not re.match(r"^\d+(\.\d+)+\b.*(unreleased|\d{4}-\d\d-\d\d)", entry, re.I)
        ):
            cleaned.append(entry)
    return "\n".join(cleaned)


def is_fix_message(message: str) -> bool:
    return bool(FIX_WORDS.search(message))


# --------------------------------------------------------------------------- git helpers


def git(repo: Path, *args: str, check: bool = True) -> str:
    proc = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False
    )
    if check and proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {proc.stderr.strip()}")
    return proc.stdout


def find_mirror(repo: str, mirrors_dirs: list[Path], explicit: dict[str, Path]) -> Path:
    if repo in explicit:
        return explicit[repo]
    key = repo.replace("/", "+")
    for base in mirrors_dirs:
        for cand in (base / key / "repo", base / key, base / f"{key}.git"):
            if (cand / "HEAD").exists() or (cand / ".git").exists():
                return cand
    raise FileNotFoundError(f"no mirror of {repo} in {', '.join(map(str, mirrors_dirs))}")


def commit_diff(repo: Path, sha: str) -> str:
    return git(repo, "diff", "--no-color", "--no-ext-diff", "--binary", f"{sha}^1", sha)


def commit_message(repo: Path, sha: str) -> str:
    return git(repo, "log", "-1", "--format=%B", sha)


def default_branch(repo: Path) -> str:
    return git(repo, "symbolic-ref", "--short", "HEAD").strip()


# --------------------------------------------------------------------------- mining


def mine(repo_dir: Path, limit: int = 0) -> list[dict[str, Any]]:
    log = git(
        repo_dir,
        "log",
        "--no-merges",
        "--format=%x00%H%x01%cs%x01%s",
        "--numstat",
        default_branch(repo_dir),
    )
    found = []
    for record in log.split("\0")[1:]:
        head, _, numstat = record.partition("\n")
        sha, date, subject = head.split("\x01", 2)
        if not is_fix_message(subject):
            continue
        paths = [line.split("\t")[2] for line in numstat.splitlines() if line.count("\t") >= 2]
        src = [p for p in paths if is_source_path(p)]
        tests = [p for p in paths if is_test_path(p) and p.endswith(".py")]
        rest = [p for p in paths if p not in src and p not in tests]
        if not (1 <= len(src) <= MAX_SOURCE_FILES) or not tests:
            continue
        if any(not (CHANGELOG_PATH.search(p) or p.startswith(("docs/", "doc/"))) for p in rest):
            continue
        parts = classify_diff(commit_diff(repo_dir, sha))
        n = sum(changed_lines(c) for c in parts.source.values())
        if n > MAX_SOURCE_LINES:
            continue
        found.append(
            {
                "sha": sha,
                "date": date,
                "subject": subject,
                "source": sorted(parts.source),
                "source_lines": n,
                "tests": sorted(parts.tests),
                "changelog": any(CHANGELOG_PATH.search(p) for p in rest),
            }
        )
        if limit and len(found) >= limit:
            break
    return found


# --------------------------------------------------------------------------- verification

PLUGIN = """
import json, os
_OUT = {}
def pytest_runtest_logreport(report):
    prev = _OUT.get(report.nodeid, "passed")
    if report.failed:
        _OUT[report.nodeid] = "failed"
    elif report.skipped and prev != "failed":
        _OUT[report.nodeid] = "skipped"
    elif report.when == "call" and prev not in ("failed", "skipped"):
        _OUT[report.nodeid] = "passed"
    else:
        _OUT.setdefault(report.nodeid, prev)
def pytest_sessionfinish(session):
    with open(os.environ["WFT_OUTCOMES"], "w") as f:
        json.dump(_OUT, f)
"""


def venv_python(repo: str) -> Path:
    return VENVS / repo.replace("/", "+") / "bin" / "python"


def setup_venv(repo: str, requirements: list[str]) -> Path:
    py = venv_python(repo)
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(py.parent.parent)], check=True)
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", *requirements],
        check=True,
    )
    return py


def python_path_for(checkout: Path) -> str:
    return "src" if (checkout / "src").is_dir() else "."


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (TEST_MEMORY_BYTES, TEST_MEMORY_BYTES))


def run_tests(
    python: Path, checkout: Path, test_files: list[str], plugin_dir: Path
) -> dict[str, str]:
    out = plugin_dir / "outcomes.json"
    out.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYTEST", "VIRTUAL"))}
    rel = python_path_for(checkout)
    env["PYTHONPATH"] = os.pathsep.join([str(plugin_dir), str((checkout / rel).resolve())])
    env["WFT_OUTCOMES"] = str(out)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    cmd = [str(python), "-m", "pytest", "-p", "wft_outcomes", "-p", "no:cacheprovider", "-q"]
    try:
        proc = subprocess.run(
            [*cmd, *test_files],
            cwd=checkout,
            env=env,
            capture_output=True,
            text=True,
            timeout=TEST_TIMEOUT_S,
            check=False,
            preexec_fn=_limit_memory,
        )
    except subprocess.TimeoutExpired:
        return {"<no outcome>": f"timed out after {TEST_TIMEOUT_S}s"}
    if not out.exists():
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
        return {"<no outcome>": " | ".join(tail)}
    return json.loads(out.read_text())


def prepare_checkout(mirror: Path, repo: str, work_dir: Path) -> Path:
    dest = work_dir / repo.replace("/", "+")
    if not (dest / ".git").exists():
        dest.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["git", "clone", "-q", "--no-checkout", str(mirror), str(dest)],
            check=True,
        )
    return dest


def checkout_at(dest: Path, sha: str) -> None:
    git(dest, "checkout", "-q", "-f", "--detach", sha)
    git(dest, "clean", "-q", "-fdx")


def build_task(
    seed: dict[str, Any], mirror: Path, work_dir: Path, verbose: bool = False
) -> dict[str, Any]:
    repo = seed["repo"]
    sha = git(mirror, "rev-parse", seed["fix_commit"]).strip()
    parent = git(mirror, "rev-parse", f"{sha}^1").strip()
    diff = commit_diff(mirror, sha)
    parts = classify_diff(diff)
    if not parts.source or not parts.tests:
        raise ValueError("the fix has no source or no test change")
    drop = seed.get("drop_lines", [])
    if seed.get("task_source", "commit") == "changelog":
        logs = [c for p, c in parts.other.items() if CHANGELOG_PATH.search(p)]
        text = changelog_entry("".join(logs), drop)
    else:
        text = scrub_message(commit_message(mirror, sha), drop, seed.get("drop_paragraphs", []))
    if len(text) < 20:
        raise ValueError(f"task text too thin: {text!r}")
    test_files = sorted(
        p for p in parts.tests if p.endswith(".py") and Path(p).name.startswith("test")
    )
    if not test_files:
        raise ValueError("no test module among the changed test files")

    requirements = REPO_REQUIREMENTS[repo]
    python = venv_python(repo)
    if not python.exists():
        raise FileNotFoundError(f"no venv for {repo} (run with --setup-venvs)")
    dest = prepare_checkout(mirror, repo, work_dir)
    git(dest, "fetch", "-q", str(mirror), sha, check=False)
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        plugin_dir = Path(tmp)
        (plugin_dir / "wft_outcomes.py").write_text(PLUGIN)
        checkout_at(dest, parent)
        patch = plugin_dir / "test.patch"
        patch.write_text(parts.test_patch)
        git(dest, "apply", "--binary", str(patch))
        existing = [t for t in test_files if (dest / t).exists()]
        before = run_tests(python, dest, existing, plugin_dir)
        if "<no outcome>" in before:  # a crash or a hang, not a test outcome
            raise RuntimeError(f"pytest did not finish at the parent: {before['<no outcome>']}")
        py_rel = python_path_for(dest)
        checkout_at(dest, sha)
        after = run_tests(python, dest, existing, plugin_dir)
        # Twice at the fix: a test must pass both times under the same node id (parametrize
        # ids made from the clock or random values, and flaky tests, are left out).
        again = run_tests(python, dest, existing, plugin_dir)
    seconds = round(time.monotonic() - started, 1)
    if "<no outcome>" in after:
        raise RuntimeError(f"pytest did not run at the fix commit: {after['<no outcome>']}")
    stable = {n for n, o in after.items() if o == "passed" and again.get(n) == "passed"}
    # Failing before: failed or errored, or absent because its module did not import at the
    # parent. A test absent from a module that did run, or skipped, is neither kind.
    ran_before = {n.split("::", 1)[0] for n in before}
    f2p = sorted(
        n
        for n in stable
        if before.get(n) == "failed" or (n not in before and n.split("::", 1)[0] not in ran_before)
    )
    p2p = sorted(n for n in stable if before.get(n) == "passed")
    if not f2p:
        raise ValueError("no test fails before and passes after")
    if verbose:
        print(f"  {len(f2p)} fail->pass, {len(p2p)} pass->pass, {seconds}s", file=sys.stderr)
    return {
        "id": task_id(repo, sha),
        "repo": repo,
        "fix_commit": sha,
        "parent_commit": parent,
        "task": text,
        "task_source": seed.get("task_source", "commit"),
        "gold_files": sorted(parts.source),
        "gold_patch": parts.gold_patch,
        "test_patch": parts.test_patch,
        "fail_to_pass": f2p,
        "pass_to_pass": p2p,
        "python_path": py_rel,
        "test_requirements": requirements,
        "verified": {
            "fail_before": len(f2p),
            "pass_after": len(f2p) + len(p2p),
            "seconds": seconds,
        },
    }


def _parse_mirror_args(values: list[str]) -> dict[str, Path]:
    out = {}
    for v in values:
        name, _, path = v.partition("=")
        out[name] = Path(path).expanduser()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("mine", help="list candidate fix commits of one repository")
    m.add_argument("--repo", required=True)
    m.add_argument("--mirror", type=Path)
    m.add_argument("--mirrors-dir", type=Path, action="append", default=[])
    m.add_argument("--limit", type=int, default=0)
    b = sub.add_parser("build", help="verify the seeds and write tasks.jsonl")
    b.add_argument("--seeds", type=Path, default=DEFAULT_SEEDS)
    b.add_argument("--out", type=Path, default=DEFAULT_OUT)
    b.add_argument("--mirrors-dir", type=Path, action="append", default=[])
    b.add_argument("--mirror", action="append", default=[], help="owner/name=PATH")
    b.add_argument("--only", action="append", default=[], help="task id or repo to build")
    b.add_argument("--setup-venvs", action="store_true")
    b.add_argument(
        "--work-dir", type=Path, help="where checkouts go (default: a fresh temporary folder)"
    )
    b.add_argument("--keep-checkouts", action="store_true")
    b.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    mirrors_dirs = [*args.mirrors_dir, DEFAULT_MIRRORS]

    if args.cmd == "mine":
        mirror = args.mirror or find_mirror(args.repo, mirrors_dirs, {})
        for cand in mine(mirror, args.limit):
            print(json.dumps(cand))
        return 0

    explicit = _parse_mirror_args(args.mirror)
    seeds = [json.loads(s) for s in args.seeds.read_text().splitlines() if s.strip()]
    if args.only:
        seeds = [
            s
            for s in seeds
            if s["repo"] in args.only or task_id(s["repo"], s["fix_commit"]) in args.only
        ]
    if args.setup_venvs:
        for repo in sorted({s["repo"] for s in seeds}):
            setup_venv(repo, REPO_REQUIREMENTS[repo])
    tasks: list[dict[str, Any]] = []
    rejected: dict[str, str] = {}
    started = time.monotonic()
    work_dir = args.work_dir or Path(tempfile.mkdtemp(prefix="workflow-tasks-"))
    per_repo: dict[str, int] = {}
    for seed in seeds:
        tid = task_id(seed["repo"], seed["fix_commit"])
        if per_repo.get(seed["repo"], 0) >= MAX_PER_REPO:
            continue
        print(tid, file=sys.stderr)
        try:
            mirror = find_mirror(seed["repo"], mirrors_dirs, explicit)
            tasks.append(build_task(seed, mirror, work_dir, args.verbose))
            per_repo[seed["repo"]] = per_repo.get(seed["repo"], 0) + 1
        except Exception as exc:  # a seed that does not verify is reported and skipped
            rejected[tid] = f"{type(exc).__name__}: {exc}"
            print(f"  rejected: {rejected[tid]}", file=sys.stderr)
    if not args.keep_checkouts:
        shutil.rmtree(work_dir, ignore_errors=True)
    if args.only and args.out.exists():  # merge into the existing set
        kept = [json.loads(s) for s in args.out.read_text().splitlines() if s.strip()]
        chosen = set(args.only)
        tasks = [t for t in kept if t["repo"] not in chosen and t["id"] not in chosen] + tasks
    order = {task_id(s["repo"], s["fix_commit"]): i for i, s in enumerate(seeds)}
    tasks.sort(key=lambda t: (t["repo"], order.get(t["id"], 10**6), t["id"]))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w") as f:
        for t in tasks:
            f.write(json.dumps(t, ensure_ascii=False) + "\n")
    print(
        f"{len(tasks)} tasks written, {len(rejected)} rejected, {time.monotonic() - started:.0f}s",
        file=sys.stderr,
    )
    for tid, why in rejected.items():
        print(f"rejected {tid}: {why}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
