"""``agentic-lsp run`` as a user meets it: progress on stderr, the diff on stdout, the changeset
left pending (and accepted later with --accept) or applied with --yes; --show-graph."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pygit2
import pytest
import yaml

from agentic_lsp.cli.main import main
from agentic_lsp.config import user_config_path
from agentic_lsp.trust import set_trusted, trust_store_path

FIXTURES = Path(__file__).parents[1] / "fixtures" / "workflows"
FIX_TOTAL = (
    "shop/cart.py\n<<<<<<< SEARCH\n    return sum(item.price * item.quantity for item in items)\n"
    "=======\n    return round(sum(item.price * item.quantity for item in items), 2)\n"
    ">>>>>>> REPLACE\n"
)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    shutil.copytree(FIXTURES / "shop_project", root)
    shutil.copytree(FIXTURES / "routing", root / ".agentic-lsp" / "workflows")
    return root


def configure(root: Path, steps: list[dict[str, str]]) -> None:
    script = root.parent / "script.yaml"
    script.write_text(yaml.safe_dump({"steps": steps}))
    (root / ".agentic-lsp.toml").write_text(
        f'cache_dir = "{root.parent / "cache"}"\n'
        f'[llm]\nprovider = "scripted"\nscript_path = "{script}"\n'
        "[index]\nwatch = false\n[changes]\ncommit_on_accept = false\n"
    )
    set_trusted(trust_store_path(user_config_path()), root)  # the user trusts their repository


def test_show_graph_prints_the_workflow_as_mermaid(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--show-graph", "--workflow", "bug_fix", "-w", str(workspace)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("---") and "graph TD;" in out
    assert "fix -. &nbsp;retry&nbsp; .-> adaptive_retrieval;" in out


def test_run_prints_the_diff_and_leaves_the_changeset_pending_until_accept(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    configure(workspace, [{"role": "code", "reply": FIX_TOTAL}])
    cart = workspace / "shop" / "cart.py"
    before = cart.read_text()
    task = "round cart totals to cents"
    assert main(["run", task, "--workflow", "t_code_once", "-w", str(workspace)]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("diff --git a/shop/cart.py b/shop/cart.py")
    assert "+    return round(sum(item.price * item.quantity for item in items), 2)" in captured.out
    err = captured.err
    assert "[SCRIPTED: a test double, not a real model]" in err
    assert "> edit (attempt 1 of 1)" in err and "edit -> DONE (success)" in err
    assert "run succeeded" in err
    match = re.search(r"accept it with `agentic-lsp changesets accept (\w+) -w", err)
    assert match, err
    assert f"`agentic-lsp changesets show {match.group(1)} -w {workspace}`" in err
    assert cart.read_text() == before
    assert main(["run", "--accept", match.group(1), "-w", str(workspace)]) == 0  # still works
    assert "round(sum(" in cart.read_text()
    assert f"accepted changeset {match.group(1)}: wrote shop/cart.py" in capsys.readouterr().err


def test_yes_applies_and_a_failed_run_exits_non_zero(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    configure(workspace, [{"role": "code", "reply": FIX_TOTAL}])
    args = ["--workflow", "t_code_once", "-w", str(workspace)]
    assert main(["run", "round totals", "--yes", "--show-graph", *args]) == 0
    assert "round(sum(" in (workspace / "shop" / "cart.py").read_text()
    captured = capsys.readouterr()
    assert "accepted changeset" in captured.err
    graph, diff = captured.out.split("diff --git", 1)
    assert "graph TD;" in graph and "edit -. &nbsp;success&nbsp; .-> DONE;" in graph
    assert "+    return round(sum(" in diff
    configure(workspace, [{"role": "code", "reply": "I cannot do that."}])  # read per run
    assert main(["run", "round totals again", *args]) == 1
    err = capsys.readouterr().err
    assert "run aborted" in err and "no usable edit blocks" in err


def test_missing_task_is_a_clear_error(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "-w", str(workspace)]) == 2
    err = capsys.readouterr().err
    assert "no task given" in err and "Traceback" not in err


def test_a_gated_run_without_a_terminal_is_left_waiting_and_says_how_to_answer(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(FIXTURES / "steering" / "t_gated.yaml", workspace / ".agentic-lsp" / "workflows")
    configure(workspace, [{"role": "code", "reply": FIX_TOTAL}])
    assert main(["run", "round the totals", "--workflow", "t_gated", "-w", str(workspace)]) == 0
    captured = capsys.readouterr()
    assert "+    return round(" in captured.out  # the change under review
    assert "? edit waits for your review" in captured.err
    assert "waits for your review of edit; it is kept" in captured.err
    assert "run succeeded" not in captured.err


def test_a_plan_gate_names_the_plan_files_to_edit(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = "## Approach\nRound it.\n\n# Tickets\n\n## T1: Round the total\n- files: shop/cart.py\n"
    configure(
        workspace,
        [
            {"role": "analysis", "match": "Understand the code", "reply": "It sums prices."},
            {"role": "analysis", "match": "Plan and tickets", "reply": plan},
        ],
    )
    pygit2.init_repository(str(workspace))
    assert (
        main(["run", "round the totals", "--workflow", "plan_and_implement", "-w", str(workspace)])
        == 0
    )
    err = capsys.readouterr().err
    for name in ("plan.md", "tickets.md"):
        assert re.search(rf"the plan: .*/\.agentic-lsp/runs/\w+/{name} \(edit it", err), err
    assert "waits for your review of planning; it is kept" in err
