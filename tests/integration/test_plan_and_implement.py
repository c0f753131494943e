"""The shipped ``plan_and_implement`` workflow end to end on a real git repository, through the
real LangGraph graph, with the scripted model (a test double at the LLM boundary, labelled):
discovery and plan artefacts written; the plan edited by a person at its gate and the edited
tickets run; three tickets, two of them at the same time, each in its own git worktree; a
conflict between two tickets resolved in the merge step; the merged changeset; the user's
uncommitted work byte-identical throughout; no worktree or branch left behind."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pygit2
import pytest
from scripted_service import prompts, service_for

from agentic_lsp.config import load_settings
from agentic_lsp.engine import Engine
from agentic_lsp.errors import AgenticError
from agentic_lsp.workflows.artefacts import RunArtefacts

TEST_COMMAND = f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {sys.executable} -m pytest -q -p no:cacheprovider"
CART = '''"""Shopping cart arithmetic."""


def total(prices: list[float]) -> float:
    """Sum of the prices."""
    return sum(prices)
'''
LABELS = '''"""Labels shown next to prices."""


def price_label(amount: float) -> str:
    return f"{amount:.2f}"


def currency() -> str:
    return "EUR"
'''
TESTS = """from shop.cart import total
from shop.labels import price_label


def test_total():
    assert total([1.0, 2.0]) == 3.0


def test_label_starts_with_the_amount():
    assert price_label(1234.5).replace(",", "").startswith("1234.50")
"""
README = "# shop\n"
DIRTY_README = "# shop\n\nMy notes, not committed.\n"
UNTRACKED = "scratch work\n"

DISCOVERY = "## How it works\n`shop/cart.py:4` sums prices; `shop/labels.py:4` formats them."
PLAN = """## Approach
Round the total, and show the currency and thousands separators in labels.

# Tickets

## T1: Round the cart total
- files: shop/cart.py
- depends on: none
- acceptance: tests/test_shop.py

## T2: Show the currency in labels
- files: shop/labels.py
- depends on: none

## T3: Thousands separators in labels
- files: shop/labels.py
- depends on: T1
"""
T1 = (
    "shop/cart.py\n<<<<<<< SEARCH\n    return sum(prices)\n=======\n"
    "    return round(sum(prices), 2)\n>>>>>>> REPLACE\n"
)
T2 = (
    'shop/labels.py\n<<<<<<< SEARCH\n    return f"{amount:.2f}"\n=======\n'
    '    return f"{amount:.2f} {currency()}"\n>>>>>>> REPLACE\n'
)
T3 = (
    'shop/labels.py\n<<<<<<< SEARCH\n    return f"{amount:.2f}"\n=======\n'
    '    return f"{amount:,.2f}"\n>>>>>>> REPLACE\n'
)
RESOLVED = LABELS.replace('return f"{amount:.2f}"', 'return f"{amount:,.2f} {currency()}"')
EDITED_GOAL = "Thousands separators in labels, as the user asked"


def _commit_all(repo: pygit2.Repository, message: str) -> None:
    repo.index.add_all()
    repo.index.write()
    tree = repo.index.write_tree()
    sig = pygit2.Signature("t", "t@example.com")
    parents = [] if repo.head_is_unborn else [repo.head.target]
    repo.create_commit("HEAD", sig, sig, message, tree, parents)


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file of the user's checkout, .git/index, HEAD and config included (not objects,
    refs and worktree entries: those are checked as branches and worktrees)."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not rel.startswith(
            (".git/objects", ".git/refs", ".git/logs", ".git/worktrees")
        ):
            if ".agentic-lsp/runs/" in f"/{rel}" or "__pycache__" in rel:
                continue
            out[rel] = path.read_bytes()
    return out


def make_repo(root: Path, git_root: Path | None = None) -> None:
    """The shop project with one commit, then the user's uncommitted work on top; the
    repository is ``git_root`` when given (the workspace is a folder inside it)."""
    (root / "shop").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "shop" / "__init__.py").write_text("")
    (root / "shop" / "cart.py").write_text(CART)
    (root / "shop" / "labels.py").write_text(LABELS)
    (root / "tests" / "test_shop.py").write_text(TESTS)
    (root / "README.md").write_text(README)
    repo = pygit2.init_repository(str(git_root or root))
    _commit_all(repo, "initial")
    (root / "README.md").write_text(DIRTY_README)  # the user's uncommitted work
    (root / "notes.txt").write_text(UNTRACKED)


def open_engine(root: Path, cache: Path) -> Engine:
    loaded = load_settings(root, environ={}, user_file=root / "absent.toml")
    loaded.settings.cache_dir = str(cache)
    loaded.settings.workflows.test_command = TEST_COMMAND
    engine = Engine(root, loaded)
    engine.open()
    engine.sync_blocking(embed=False)
    return engine


@pytest.fixture()
def engine(tmp_path: Path) -> Iterator[Engine]:
    make_repo(tmp_path / "shop")
    engine = open_engine(tmp_path / "shop", tmp_path / "cache")
    yield engine
    asyncio.run(engine.close())


def left_behind(root: Path) -> tuple[list[str], list[str]]:
    repo = pygit2.Repository(str(root))
    own = [r for r in repo.references if r.startswith("refs/heads/agentic-lsp/")]
    return own, list(repo.list_worktrees())


STEPS: list[dict[str, Any]] = [
    {"role": "analysis", "match": "Understand the code", "reply": DISCOVERY},
    {"role": "analysis", "match": "Plan and tickets", "reply": PLAN},
    # T1 and T2 are answered only after a pause: both are asked before either answers
    {"role": "code", "match": "Your ticket: T1 ", "reply": T1, "delay_s": 1.0},
    {"role": "code", "match": "Your ticket: T2 ", "reply": T2, "delay_s": 1.0},
    {"role": "code", "match": EDITED_GOAL, "reply": T3},
    {
        "role": "code",
        "match": "changed the same lines of shop/labels.py",
        "reply": f"```python\n{RESOLVED}```",
    },
]


async def test_plan_gate_edit_tickets_in_worktrees_conflict_merged(engine: Engine) -> None:
    await plan_flow(engine, engine.root)


async def test_a_workspace_inside_a_larger_repository(tmp_path: Path) -> None:
    """Worktrees hold the whole repository; the workspace's paths map into them."""
    (tmp_path / "mono" / "other").mkdir(parents=True)
    (tmp_path / "mono" / "other" / "keep.txt").write_text("another project\n")
    make_repo(tmp_path / "mono" / "shop", git_root=tmp_path / "mono")
    engine = open_engine(tmp_path / "mono" / "shop", tmp_path / "cache")
    try:
        await plan_flow(engine, tmp_path / "mono")
    finally:
        await engine.close()


async def plan_flow(engine: Engine, git_root: Path) -> None:
    root = engine.root
    before = snapshot(git_root)
    service, models = service_for(engine, STEPS)
    run_id = await service.start_run("Round totals and improve price labels", "plan_and_implement")
    report = await asyncio.wait_for(service.wait(run_id, until_input=True), 60)
    assert report.status == "waiting_input", report.error
    status = await service.status(run_id)
    assert status.stage == "planning" and status.pending is not None
    assert [Path(p).name for p in status.pending["artefacts"]] == ["plan.md", "tickets.md"]
    artefacts = RunArtefacts(root, run_id)
    assert "sums prices" in artefacts.read("discovery.md")
    assert "Round the total" in artefacts.read("plan.md")
    assert [t.id for t in artefacts.tickets().tickets] == ["T1", "T2", "T3"]
    ignored = (root / ".agentic-lsp" / "runs" / run_id / "plan.md").relative_to(git_root)
    assert pygit2.Repository(str(git_root)).path_is_ignored(ignored.as_posix())
    assert snapshot(git_root) == before

    # the person edits the plan at its gate: the run goes on with their version
    tickets = artefacts.path("tickets.md")
    tickets.write_text(tickets.read_text().replace("Thousands separators in labels", EDITED_GOAL))
    await service.respond(run_id, "approve")
    report = await asyncio.wait_for(service.wait(run_id), 120)
    assert report.status == "succeeded", report.error

    code = prompts(models["code"])
    assert any(EDITED_GOAL in p for p in code), "the edited ticket ran"
    assert any("Round the total, and show the currency" in p for p in code), "plan.md was read"
    log = "\n".join(str(e.data.get("message")) for e in report.events if e.kind == "log")
    started = [m.start() for m in re.finditer(r"ticket T[12]: started", log)]
    finished = [m.start() for m in re.finditer(r"ticket T[12]: done", log)]
    assert len(started) == 2 and len(finished) == 2 and max(started) < min(finished), log
    assert "merge: resolved the conflict of ticket T3 in shop/labels.py" in log

    changeset = engine.changes.get(report.changeset_id)
    files = {f.path: f.proposed for f in changeset.files}
    assert files["shop/labels.py"] == RESOLVED
    assert files["shop/cart.py"] == CART.replace(
        "return sum(prices)", "return round(sum(prices), 2)"
    )
    assert set(files) == {"shop/labels.py", "shop/cart.py"}
    authors = {f.path: f.author.agent for f in changeset.files}
    assert authors == {"shop/cart.py": "ticket T1", "shop/labels.py": "ticket T3"}
    assert snapshot(git_root) == before, "nothing written before accept"
    assert left_behind(git_root) == ([], [])
    assert not any((Path(engine.run_ports().cache_dir) / "worktrees").glob("*/*"))

    # reviewed hunk by hunk: the labels' one hunk first, then the cart's; each accept is one
    # commit of exactly that file, and the user's own uncommitted work stays as it was
    labels = changeset.file("shop/labels.py")
    assert [h.index for h in labels.hunks] == [0]
    engine.changes.accept_on_disk(
        report.changeset_id, paths=["shop/labels.py"], hunks=[0], commit=True
    )
    assert (root / "shop" / "labels.py").read_text() == RESOLVED
    assert (root / "shop" / "cart.py").read_text() == CART
    engine.changes.accept_on_disk(report.changeset_id, paths=["shop/cart.py"], commit=True)
    assert (root / "shop" / "cart.py").read_text() == files["shop/cart.py"]
    repo = pygit2.Repository(str(git_root))
    head = repo.head.peel(pygit2.Commit)
    assert [len(c.parents) for c in (head, head.parents[0])] == [1, 1]
    workspace = root.relative_to(git_root)
    assert repo.diff(head.parents[0], head).stats.files_changed == 1
    assert (workspace / "shop" / "cart.py").as_posix() in {
        d.delta.new_file.path for d in repo.diff(head.parents[0], head)
    }
    assert (root / "README.md").read_text() == DIRTY_README
    assert (root / "notes.txt").read_text() == UNTRACKED


KILLED_RUN = """
import asyncio, sys
from pathlib import Path
sys.path.insert(0, sys.argv[3])
import test_plan_and_implement as t

engine = t.open_engine(Path(sys.argv[1]), Path(sys.argv[2]))
steps = [dict(step) for step in t.STEPS]
steps[2]["delay_s"] = 60  # ticket T1 is still being worked on when the process is killed
service, _ = t.service_for(engine, steps)

async def main():
    run_id = await service.start_run("Round totals and improve price labels", "plan_and_implement")
    await service.wait(run_id, until_input=True)
    await service.respond(run_id, "approve")
    print(run_id, flush=True)
    await asyncio.sleep(120)

asyncio.run(main())
"""


async def test_worktrees_a_killed_process_left_are_removed_at_the_next_run(tmp_path: Path) -> None:
    root, cache = tmp_path / "shop", tmp_path / "cache"
    make_repo(root)
    before = snapshot(root)
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED_RUN, str(root), str(cache), str(Path(__file__).parent)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        run_id = (await asyncio.wait_for(asyncio.to_thread(child.stdout.readline), 120)).strip()
        assert run_id, "the run did not reach its tickets"
        deadline = time.monotonic() + 60
        while len(left_behind(root)[1]) < 2:
            assert time.monotonic() < deadline, f"no ticket worktrees: {left_behind(root)}"
            await asyncio.sleep(0.1)
    finally:
        child.kill()  # kill -9, mid-ticket
        child.wait()
    branches, worktrees = left_behind(root)
    assert worktrees and f"refs/heads/agentic-lsp/{run_id}/base" in branches
    (folder,) = cache.rglob(f"worktrees/{run_id}")  # in the workspace's cache folder
    assert snapshot(root) == before

    engine = open_engine(root, cache)  # the next start: a new run cleans up the dead one's
    try:
        service, _ = service_for(engine, STEPS)
        new_run = await service.start_run("Round totals", "plan_and_implement")
        await asyncio.wait_for(service.wait(new_run, until_input=True), 60)
        assert left_behind(root) == ([], [])
        assert not folder.exists()
        service.cancel(new_run)
    finally:
        await engine.close()
    assert snapshot(root) == before


async def test_pruning_a_ticket_prunes_its_dependants_and_merges_the_rest(engine: Engine) -> None:
    steps = [dict(step) for step in STEPS]
    steps[3]["delay_s"] = 30  # ticket T2 is still being worked on when it is pruned
    steps[4] = {"role": "code", "match": "Your ticket: T3 ", "reply": T3}
    plan = PLAN.replace(
        "- depends on: T1",
        "- depends on: T1\n\n## T4: Labels after T2\n- files: shop/labels.py\n- depends on: T2",
    )
    steps[1] = {**steps[1], "reply": plan}
    service, _ = service_for(engine, steps)
    run_id = await service.start_run("Round totals and improve price labels", "plan_and_implement")
    await asyncio.wait_for(service.wait(run_id, until_input=True), 60)
    with pytest.raises(AgenticError, match="has no ticket 'T9'"):
        await service.prune(run_id, "implement/T9")
    await service.respond(run_id, "approve")

    def t2_started() -> bool:
        events = service.get_report(run_id).events
        return any("ticket T2: started" in str(e.data.get("message")) for e in events)

    deadline = time.monotonic() + 60
    while not t2_started():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    await service.prune(run_id, "implement/T2")
    report = await asyncio.wait_for(service.wait(run_id), 60)
    assert report.status == "succeeded", report.error
    log = "\n".join(str(e.data.get("message")) for e in report.events if e.kind == "log")
    assert "ticket T2: pruned" in log
    assert "ticket T4: pruned: it depends on ticket T2, which was pruned" in log
    files = {f.path: f.proposed for f in engine.changes.get(report.changeset_id).files}
    assert files["shop/labels.py"] == LABELS.replace(
        'f"{amount:.2f}"', 'f"{amount:,.2f}"'
    )  # T3 only
    assert "shop/cart.py" in files
    assert left_behind(engine.root) == ([], [])


PROSE_PLAN = "## Approach\nRound the total first, then improve the labels in two steps."
DRAFTED = json.dumps(
    {
        "tickets": [
            {"id": "T1", "goal": "Round the cart total", "files": ["shop/cart.py"]},
            {
                "id": "T2",
                "goal": "Currency in labels",
                "files": ["shop/labels.py"],
                "depends_on": ["T1"],
            },
        ]
    }
)


@pytest.mark.parametrize(
    ("drafted", "expected"),
    [
        (DRAFTED, ["T1", "T2"]),
        (DRAFTED.replace('"files": ["shop/cart.py"]', '"depends_on": ["T2"]'), "cycle"),
    ],
)
async def test_a_plan_without_the_tickets_format_gets_its_tickets_as_json(
    engine: Engine, drafted: str, expected: Any
) -> None:
    steps = [  # (the split prompt holds the workflow's stage names too: its steps come first)
        *[{"role": "analysis", "match": "Split the plan into", "reply": drafted}] * 6,
        {"role": "analysis", "match": "Understand the code", "reply": DISCOVERY},
        *[{"role": "analysis", "match": "Plan and tickets", "reply": PROSE_PLAN}] * 3,
    ]
    service, _ = service_for(engine, steps)
    run_id = await service.start_run("Round totals and improve price labels", "plan_and_implement")
    report = await asyncio.wait_for(service.wait(run_id, until_input=True), 60)
    artefacts = RunArtefacts(engine.root, run_id)
    if isinstance(expected, list):
        assert report.status == "waiting_input", report.error
        assert [t.id for t in artefacts.tickets().tickets] == expected
        assert artefacts.tickets().ticket("T2").depends_on == ("T1",)
        assert artefacts.read("plan.md").startswith("## Approach")
    else:
        assert report.status == "aborted"
        assert "no '# Tickets' section" in report.error and expected in report.error
        assert not artefacts.exists("tickets.md")


async def test_a_workspace_without_git_is_told_why(tmp_path: Path) -> None:
    make_repo(tmp_path / "shop")
    shutil.rmtree(tmp_path / "shop" / ".git")
    engine = open_engine(tmp_path / "shop", tmp_path / "cache")
    try:
        service, _ = service_for(engine, STEPS)
        run_id = await service.start_run("Round totals", "plan_and_implement")
        await asyncio.wait_for(service.wait(run_id, until_input=True), 60)
        await service.respond(run_id, "approve")
        report = await asyncio.wait_for(service.wait(run_id), 60)
        assert report.status == "aborted"
        assert "is not in a git repository: tickets run in git worktrees" in report.error
    finally:
        await engine.close()


async def test_other_workflows_never_look_at_a_symlinked_agentic_lsp_folder(tmp_path: Path) -> None:
    """A repository may link .agentic-lsp elsewhere: only a workflow that writes artefacts
    refuses it (saying why); the others run as before."""
    make_repo(tmp_path / "shop")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "shop" / ".agentic-lsp").symlink_to(tmp_path / "elsewhere")
    engine = open_engine(tmp_path / "shop", tmp_path / "cache")
    try:
        service, _ = service_for(engine, [{"role": "analysis", "reply": "It sums the prices."}])
        run_id = await service.start_run("How is the total computed?", "explain")
        report = await asyncio.wait_for(service.wait(run_id), 60)
        assert report.status == "succeeded", report.error
        service, _ = service_for(engine, STEPS)
        run_id = await service.start_run("Round totals", "plan_and_implement")
        report = await asyncio.wait_for(service.wait(run_id, until_input=True), 60)
        assert report.status == "aborted" and "symlink" in report.error, report.error
        assert list((tmp_path / "elsewhere").iterdir()) == []
    finally:
        await engine.close()


UNRESOLVED = "<<<<<<< ours\nstill both\n=======\nand this\n>>>>>>> theirs\n"


@pytest.mark.parametrize("answer", ["edited", "revised"])
async def test_a_conflict_the_model_cannot_resolve_goes_to_a_person(
    engine: Engine, answer: str
) -> None:
    steps = [dict(step) for step in STEPS]
    steps[4] = {"role": "code", "match": "Your ticket: T3 ", "reply": T3}
    steps[5] = {"role": "code", "match": "changed the same lines of", "reply": UNRESOLVED}
    guidance = "keep the separators and the currency"
    steps.append({"role": "code", "match": guidance, "reply": f"```python\n{RESOLVED}```"})
    service, models = service_for(engine, steps)
    run_id = await service.start_run("Round totals and improve price labels", "plan_and_implement")
    await asyncio.wait_for(service.wait(run_id, until_input=True), 60)
    await service.respond(run_id, "approve")  # the plan
    report = await asyncio.wait_for(service.wait(run_id, until_input=True), 60)
    assert report.status == "waiting_input", report.error
    status = await service.status(run_id)
    assert status.stage == "implement" and status.pending is not None
    assert status.pending["files"] == ["shop/labels.py"]
    assert "<<<<<<<" in status.pending["diff"]
    (copy,) = [Path(p) for p in status.pending["artefacts"]]
    assert copy.name == "labels.py" and "<<<<<<<" in copy.read_text()
    assert not copy.is_relative_to(engine.root)  # the ticket's worktree, in the cache folder
    if answer == "edited":
        copy.write_text(RESOLVED)
        await service.respond(run_id, "approve")
    else:
        await service.respond(run_id, "revise", guidance)
    report = await asyncio.wait_for(service.wait(run_id), 60)
    assert report.status == "succeeded", report.error
    files = {f.path: f.proposed for f in engine.changes.get(report.changeset_id).files}
    assert files["shop/labels.py"] == RESOLVED
    tickets = [p for p in prompts(models["code"]) if "Your ticket: T" in p]
    assert len(tickets) == 3, "the tickets done before the run waited are not done again"
    merges = [p for p in prompts(models["code"]) if "changed the same lines of" in p]
    assert len(merges) == (1 if answer == "edited" else 2)  # the model is not asked again
    assert left_behind(engine.root) == ([], [])
