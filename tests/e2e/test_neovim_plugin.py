"""The Neovim plugin (editors/neovim) in a real headless Neovim against the real server.

Each test runs one Lua scenario (editors/neovim/tests/*_spec.lua) in ``nvim --headless`` with
the plugin on the runtimepath and nothing of the user's; the scenario drives the plugin through
its commands and waits on conditions, then reports JSON that the test checks together with the
files and the git history on disk. The server is ``python -m agentic_lsp serve`` of this venv
with the scripted model, isolated cache/config dirs and HF_HUB_OFFLINE=1.

Neovim comes from ``$AGENTIC_LSP_NVIM``, the folder scripts/install-neovim.sh installs into, or
PATH; the tests are skipped only when none of those has an nvim binary.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pygit2
import pytest
import yaml
from scripted_workflow import install_workflow, search_replace

from agentic_lsp.changes.changeset import ProposedEdit, build_changeset
from agentic_lsp.changes.repository import ChangesetRepository
from agentic_lsp.config import load_settings
from agentic_lsp.testing.ollama_server import SERVER_VERSION, OllamaTestServer
from agentic_lsp.workspace import workspace_cache_dir

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "editors" / "neovim"
MIN_VERSION = (0, 10)
RUN_TIMEOUT_S = 240  # below pytest-timeout (300 s), so a hang reports its output

CALC = '''\
"""Arithmetic helpers."""


def add_numbers(a, b):
    """Add two numbers."""
    return a + b
'''
SHAPES = '''\
"""Shapes and their areas."""

SQUARE = "square"


def square_area(side):
    return side * side


def describe(shape):
    return f"a {shape}"


def circle_area(radius):
    return 3.14159 * radius * radius


CIRCLE = "circle"
'''
SHAPES_FIRST = SHAPES.replace('SQUARE = "square"', 'SQUARE = "SQUARE"')
SHAPES_BOTH = SHAPES_FIRST.replace('CIRCLE = "circle"', 'CIRCLE = "CIRCLE"')
AREA = "def rectangle_area(width, height):\n    return width * height\n"
GREET = 'def greet(name):\n    return "hello " + name\n'
GREET_REFINED = 'def greet(name):\n    """Greet someone, warmly."""\n    return "hello " + name\n'


block = search_replace


# The script is read afresh for every run; the refine prompt holds the task and the feedback,
# so the feedback's step comes before the task's. A refine builds on the proposal it refines.
SCRIPT = [
    {
        "role": "code",
        "match": "Shout the shape names",
        "reply": block("src/shapes.py", 'SQUARE = "square"', 'SQUARE = "SQUARE"')
        + block("src/shapes.py", 'CIRCLE = "circle"', 'CIRCLE = "CIRCLE"'),
    },
    {
        "role": "code",
        "match": "Also welcome the person",
        "reply": block("src/greet.py", '    """Greet."""', '    """Greet someone, warmly."""'),
    },
    {
        "role": "code",
        "match": "Document greet",
        "reply": block("src/greet.py", "def greet(name):", 'def greet(name):\n    """Greet."""'),
    },
]


def _version(binary: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r"NVIM v(\d+)\.(\d+)", out.stdout)
    return (int(found[1]), int(found[2])) if found else None


def find_nvim() -> tuple[str | None, str]:
    """The nvim to test with, or None and why not."""
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    installed = os.environ.get("AGENTIC_LSP_NVIM_HOME") or f"{data_home}/agentic-lsp/neovim"
    candidates = [os.environ.get("AGENTIC_LSP_NVIM"), f"{installed}/bin/nvim", shutil.which("nvim")]
    seen: list[str] = []
    for candidate in candidates:
        if not candidate or not os.access(candidate, os.X_OK) or candidate in seen:
            continue
        seen.append(candidate)
        version = _version(candidate)
        if version is not None and version >= MIN_VERSION:
            return candidate, ""
    if not seen:
        return None, "no nvim binary found (run scripts/install-neovim.sh or set AGENTIC_LSP_NVIM)"
    return None, f"nvim at {', '.join(seen)} is older than 0.10 (run scripts/install-neovim.sh)"


NVIM, WHY_NOT = find_nvim()
pytestmark = pytest.mark.skipif(NVIM is None, reason=WHY_NOT)


def make_workspace(base: Path) -> Path:
    root = base / "repo"
    (root / "src").mkdir(parents=True)
    install_workflow(root, "nvim_edit", "Neovim")
    (root / "src" / "calc.py").write_text(CALC)
    (root / "src" / "shapes.py").write_text(SHAPES)
    (root / "src" / "greet.py").write_text(GREET)
    (root / "README.md").write_text("# Shapes\n\nAreas of shapes, and greetings.\n")
    repo = pygit2.init_repository(str(root), initial_head="main")
    repo.config["user.name"] = "Test"
    repo.config["user.email"] = "test@example.com"
    repo.index.add_all()
    repo.index.write()
    signature = pygit2.Signature("Test", "test@example.com")
    repo.create_commit("HEAD", signature, signature, "initial", repo.index.write_tree(), [])
    return root


def run_scenario(
    base: Path, scenario: str, root: Path, options: dict[str, Any], extra: dict[str, str]
) -> dict[str, Any]:
    assert NVIM is not None
    result = base / f"{scenario}.json"
    home = base / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTIC_LSP_", "NVIM"))}
    env.pop("OLLAMA_HOST", None)
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_DATA_HOME=str(home / "data"),
        XDG_STATE_HOME=str(home / "state"),
        XDG_CACHE_HOME=str(home / "cache"),
        AGENTIC_LSP_CACHE_DIR=str(base / "index"),
        AGENTIC_LSP_CONFIG=str(home / "config" / "none.toml"),
        HF_HUB_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        AGENTIC_NVIM_SCENARIO=str(PLUGIN / "tests" / f"{scenario}.lua"),
        AGENTIC_NVIM_RESULT=str(result),
        AGENTIC_NVIM_ROOT=str(root),
        AGENTIC_NVIM_SERVER=json.dumps([sys.executable, "-m", "agentic_lsp", "serve"]),
        AGENTIC_NVIM_OPTIONS=json.dumps(options),
        **extra,
    )
    init = PLUGIN / "tests" / "minimal_init.lua"
    argv = [NVIM, "--headless", "-n", "-i", "NONE", "-u", str(init)]
    try:
        proc = subprocess.run(
            argv, env=env, cwd=root, capture_output=True, text=True, timeout=RUN_TIMEOUT_S
        )
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"nvim did not finish in {RUN_TIMEOUT_S}s:\n{exc.stderr}") from exc
    lsp_log = home / "state" / "nvim" / "lsp.log"
    log_tail = lsp_log.read_text()[-6000:] if lsp_log.exists() else "(no lsp.log)"
    report = json.loads(result.read_text()) if result.exists() else {"ok": False}
    notes = "\n".join(n["message"] for n in report.get("notes", []))
    context = (
        f"nvim exit {proc.returncode}\nnotifications:\n{notes}\n"
        f"stderr:\n{proc.stderr[-6000:]}\nlsp.log:\n{log_tail}"
    )
    assert report.get("ok"), f"{report.get('error')}\n{context}"
    assert proc.returncode == 0, context
    assert "Error executing" not in proc.stderr, context  # a Lua error in a callback
    return report


def head_files(repo: pygit2.Repository, commit: pygit2.Commit) -> set[str]:
    diff = commit.parents[0].tree.diff_to_tree(commit.tree)
    return {d.new_file.path for d in diff.deltas} | {d.old_file.path for d in diff.deltas}


def test_review_cycle_in_neovim(tmp_path: Path) -> None:
    """Attach through vim.lsp.config, search, run, review in the diff tab, accept one hunk and
    reject the other, roll back, refine from the buffer's hint, accept by code action, status
    and :checkhealth."""
    root = make_workspace(tmp_path)
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"steps": SCRIPT}))
    options = {"llm": {"provider": "scripted", "script_path": str(script)},
               "index": {"watch": False}}  # fmt: skip
    expect = {"shapes": SHAPES, "shapes_first": SHAPES_FIRST, "shapes_both": SHAPES_BOTH,
              "greet": GREET, "greet_refined": GREET_REFINED}  # fmt: skip
    report = run_scenario(
        tmp_path, "review_spec", root, options, {"AGENTIC_NVIM_EXPECT": json.dumps(expect)}
    )
    values = report["values"]
    assert values["attach"]["mode"] == "native"
    assert values["attach"]["root"] == str(root)
    assert values["search"]["first"].endswith("src/calc.py:4")
    tokens = values["tokens"]  # the scripted model's usage: whitespace-word counts, never 0
    assert tokens["usage"]["calls"] >= 1, tokens
    assert tokens["usage"]["promptTokens"] > 0 and tokens["usage"]["completionTokens"] > 0, tokens
    counts = r"tokens: \d+ calls? · [\d.]+[kM]? prompt \+ [\d.]+[kM]? completion tokens"
    assert re.search(counts, tokens["line"]), tokens

    repo = pygit2.Repository(str(root))
    commits = list(repo.walk(repo.head.target))
    messages = [c.message for c in commits]
    first_id, refined_id = values["first_changeset"], values["refined_changeset"]
    assert len(commits) == 4, messages  # initial, accept, its rollback, the refined accept
    final, revert, accept = commits[:3]
    assert f"Agentic-Changeset: {first_id}" in accept.message, messages
    assert head_files(repo, accept) == {"src/shapes.py"}
    assert repo[accept.tree["src/shapes.py"].id].read_raw().decode() == SHAPES_FIRST
    assert revert.message.startswith('Revert "Shout the shape names"'), messages
    assert repo[revert.tree["src/shapes.py"].id].read_raw().decode() == SHAPES
    assert f"Agentic-Changeset: {refined_id}" in final.message, messages
    assert head_files(repo, final) == {"src/greet.py"}
    assert (root / "src" / "shapes.py").read_text() == SHAPES
    assert (root / "src" / "greet.py").read_text() == GREET_REFINED
    assert not repo.status(), repo.status()


FIXME = """\
def total(items):
    count = 0
    for item in itmes:
        count += item
    return count


def unused():
    pass
"""
UNDEFINED = '"itmes" is not defined'
TYPED = "+def greet(name: str):"
# Each step applies only to its prompt: the fix's only to one holding the selected lines under
# the editor's header and the diagnostic (0-based 2:16 in Neovim, line 3:17 in the prompt).
STEER_SCRIPT = [
    {"role": "code", "match": r"(?s)### src/fixme\.py:2-4 selection \(editor\)\n```\n"
     r"    count = 0\n    for item in itmes:\n        count \+= item\n```.*"
     r'- line 3:17 error \[Pyright reportUndefinedVariable\]: "itmes" is not defined',
     "reply": search_replace("src/fixme.py", "    for item in itmes:", "    for item in items:")},
    {"role": "code", "match": r"(?s)### src/fixme\.py:3-4 selection \(editor\).*Rename the loop",
     "reply": search_replace("src/fixme.py", "        count += item", "        count += 1")},
    {"role": "code", "match": "Type the greeting",
     "reply": search_replace("src/greet.py", "def greet(name):", "def greet(name: str):")},
]  # fmt: skip


def test_editor_context_and_steering_in_neovim(tmp_path: Path) -> None:
    """:'<,'>AgenticFix sends the selection and its diagnostic (the scripted step only matches
    a prompt holding both); a run waiting at a review gate shows in :AgenticRuns and its text
    graph (WAITING_INPUT) and is approved with :AgenticApprove to a changeset; steering a
    finished run (:AgenticMessage, :AgenticPrune, :AgenticApprove) is a clear error."""
    root = make_workspace(tmp_path)
    (root / "src" / "fixme.py").write_text(FIXME)
    install_workflow(root, "nvim_gated", "Neovim gate", review="human")
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"steps": STEER_SCRIPT}))
    options = {"cache_dir": str(tmp_path / "index"), "index": {"watch": False},
               "llm": {"provider": "scripted", "script_path": str(script)}}  # fmt: skip
    expect = {"message": UNDEFINED, "typed_line": TYPED}
    report = run_scenario(
        tmp_path, "steer_spec", root, options, {"AGENTIC_NVIM_EXPECT": json.dumps(expect)}
    )
    values = report["values"]
    assert values["fix"]["task"] == f"Fix: {UNDEFINED}"
    assert values["fix"]["workflow"] == "nvim_edit"
    assert "◆ code  WAITING_INPUT" in values["graph"]
    assert TYPED in values["graph"]
    errors = "\n".join(values["errors"])
    gated = values["gated"]["id"]
    assert f"run {gated} is succeeded: no model call will read a message" in errors
    assert f"run {gated} is succeeded: nothing is left to prune" in errors
    assert "stack traceback" not in errors

    settings = load_settings(root, init_options=options).settings
    repository = ChangesetRepository(workspace_cache_dir(root, settings) / "changesets")
    fixed = repository.get(values["fix"]["changeset"]).file("src/fixme.py")
    assert fixed.proposed == FIXME.replace("in itmes:", "in items:")
    typed = repository.get(values["gated"]["changeset"]).file("src/greet.py")
    assert typed.proposed == GREET.replace("greet(name)", "greet(name: str)")
    assert (root / "src" / "fixme.py").read_text() == FIXME  # nothing lands before an accept
    assert (root / "src" / "greet.py").read_text() == GREET


RETURNS_LINE = "+def greet(name: str) -> str:"
FSTRING_LINE = '+    return f"hello {name}"'
SHOUT_LINE = '+    return "HELLO " + name'
OPTIONAL = """\
name: nvim_optional
description: A code stage, then an optional polish stage.
retrieval: {llm_queries: false}
stages:
  - id: code
    name: Code
    type: code
    next_on_success: polish
  - id: polish
    name: Polish
    type: code
    required: false
    reasoning_guidance: Plan it when asked to polish.
    next_on_success: DONE
"""
PLAN = {"workflow": "nvim_optional", "reasoning": "asked to polish",
        "optional_stages": {"polish": {"include": True, "why": "asked to polish"}}}  # fmt: skip
TYPE_IT = search_replace("src/greet.py", "def greet(name):", "def greet(name: str):")
FSTRING = search_replace("src/greet.py", '    return "hello " + name', '    return f"hello {name}"')
# A revision's feedback is in the stage prompt under the reviewer's header; a message sent
# before it is the last user message of the next model call. Each revision's step matches only
# its own prompt, so a feedback or message that does not arrive leaves the stage without a reply.
STEER_LOOP_SCRIPT = [
    {"role": "code",
     "match": r"(?s)## A reviewer asked for a revision of this stage's work \(stage code, "
              r"attempt 1\)\n.*\n- annotate the return type too",
     "reply": search_replace("src/greet.py", "def greet(name: str):",
                             "def greet(name: str) -> str:")},
    {"role": "code",
     "match": r"(?ms)^Message from the user, sent while you were working\..*use an f-string",
     "reply": FSTRING},
    {"role": "code", "match": "Type the greeting", "reply": TYPE_IT},
    {"role": "orchestrator", "match": "Polish the greeting", "reply": json.dumps(PLAN)},
    {"role": "code", "match": "Polish the greeting", "reply": TYPE_IT},
    {"role": "code", "match": "Polish the greeting", "reply": FSTRING, "delay_s": 30},
    {"role": "code", "match": "Shout the greeting",
     "reply": search_replace("src/greet.py", '    return "hello " + name',
                             '    return "HELLO " + name')},
]  # fmt: skip


def test_revise_prune_and_restart_in_neovim(tmp_path: Path) -> None:
    """:AgenticRevise sends a gated stage back twice (the feedback, then a message sent before
    the revision, reach the next attempt's prompt), then :AgenticApprove; :AgenticPrune cancels
    a running optional stage the orchestrator planned (PRUNED, its edit not proposed); a run
    waiting at a gate outlives a restart of the server and is approved after it."""
    root = make_workspace(tmp_path)
    install_workflow(root, "nvim_gated", "Neovim gate", review="human")
    (root / ".agentic-lsp" / "workflows" / "nvim_optional.yaml").write_text(OPTIONAL)
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"steps": STEER_LOOP_SCRIPT}))
    options = {"cache_dir": str(tmp_path / "index"), "index": {"watch": False},
               "llm": {"provider": "scripted", "script_path": str(script)}}  # fmt: skip
    expect = {"typed_line": TYPED, "returns_line": RETURNS_LINE, "fstring_line": FSTRING_LINE,
              "shout_line": SHOUT_LINE, "feedback": "annotate the return type too",
              "message": "use an f-string", "feedback2": "format the greeting"}  # fmt: skip
    report = run_scenario(
        tmp_path, "steer_loop_spec", root, options, {"AGENTIC_NVIM_EXPECT": json.dumps(expect)}
    )
    values = report["values"]
    assert values["pruned"]["seconds"] < 20, values["pruned"]
    assert "polish PRUNED" in values["pruned"]["states"], values["pruned"]
    assert "polish COMPLETED" not in values["pruned"]["states"], values["pruned"]
    assert "⊘ polish  PRUNED" in values["pruned"]["graph"]

    settings = load_settings(root, init_options=options).settings
    repository = ChangesetRepository(workspace_cache_dir(root, settings) / "changesets")

    def proposed(name: str) -> str:
        changeset = repository.get(values[name]["changeset"])
        assert [f.path for f in changeset.files] == ["src/greet.py"], name
        return changeset.file("src/greet.py").proposed

    # both revisions built on the attempt before them
    assert proposed("revised") == 'def greet(name: str) -> str:\n    return f"hello {name}"\n'
    assert proposed("pruned") == GREET.replace("greet(name)", "greet(name: str)")  # no polish
    assert proposed("restarted") == GREET.replace('"hello "', '"HELLO "')
    assert (root / "src" / "greet.py").read_text() == GREET  # nothing lands before an accept


def propose(root: Path, options: dict[str, Any], edits: list[ProposedEdit], title: str) -> str:
    """Store a changeset where the server of ``root`` reads them (as another process would)."""
    settings = load_settings(root, init_options=options).settings
    repository = ChangesetRepository(workspace_cache_dir(root, settings) / "changesets")
    changeset = build_changeset(root, edits, run_id="run-nvim-test", title=title)
    repository.save(changeset)
    return changeset.id


def test_vim_lsp_start_fallback_and_ollama_health(tmp_path: Path) -> None:
    """The client started by vim.lsp.start (Neovim 0.10's path) only inside a project; a
    stored two-file changeset reviewed with the tab's keys (]f, gA, q), without commits, so the
    plugin saves the created buffer itself; the strict applyEdit handler; the health check
    against a real Ollama-protocol HTTP server."""
    root = make_workspace(tmp_path)
    outside = tmp_path / "loose"
    outside.mkdir()
    (outside / "note.py").write_text("x = 1\n")
    with OllamaTestServer(models=["qwen2.5-coder:7b"]) as ollama:
        options = {"cache_dir": str(tmp_path / "index"), "index": {"watch": False},
                   "llm": {"provider": "ollama", "ollama_host": ollama.url},
                   "changes": {"commit_on_accept": False}}  # fmt: skip
        edits = [ProposedEdit("src/calc.py", CALC.replace("a + b", "b + a")),
                 ProposedEdit("src/area.py", AREA)]  # fmt: skip
        changeset_id = propose(root, options, edits, "Add areas")
        extra = {"AGENTIC_NVIM_OUTSIDE": str(outside / "note.py"),
                 "AGENTIC_NVIM_OLLAMA": ollama.url, "AGENTIC_NVIM_CHANGESET": changeset_id,
                 "AGENTIC_NVIM_AREA": AREA}  # fmt: skip
        report = run_scenario(tmp_path, "fallback_spec", root, options, extra)
        assert ollama.requests_to("/api/version") and ollama.requests_to("/api/tags")
    health = report["values"]["health"]
    assert f"Ollama reachable at {ollama.url}, version {SERVER_VERSION}" in health
    assert "model qwen2.5-coder:7b present" in health
    assert (root / "src" / "area.py").read_text() == AREA
    assert (root / "src" / "calc.py").read_text() == CALC
    repo = pygit2.Repository(str(root))
    assert repo.head.peel(pygit2.Commit).message == "initial"  # commit_on_accept is off
    assert repo.status() == {"src/area.py": pygit2.enums.FileStatus.WT_NEW}


CONTROLS_SPEC = r"""
vim.opt.rtp:prepend(os.getenv('PLUGIN'))
local diff = require('agentic_lsp.diff')
local buf = vim.api.nvim_create_buf(false, true)
vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.json.decode(os.getenv('LINES')))
local n = diff.mark_controls(buf)
local ns = vim.api.nvim_get_namespaces().agentic_lsp_controls
local labels = {}
for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })) do
  table.insert(labels, { m[2], m[3], m[4].virt_text[1][1] })
end
local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
io.stdout:write(vim.json.encode({ count = n, labels = labels, text = text }) .. '\n')
"""


def test_review_shows_invisible_and_bidi_characters(tmp_path: Path) -> None:
    """A proposal hiding a bidi override or a zero-width character shows a visible
    ``<U+XXXX>`` label in the review buffers; the text itself stays byte-exact."""
    lines = ['access = "user\u202e \u2066// admin"', "plain line", "z\u200bw\ufeff"]
    spec = tmp_path / "controls.lua"
    spec.write_text(CONTROLS_SPEC)
    env = {**os.environ, "PLUGIN": str(PLUGIN), "LINES": json.dumps(lines)}
    assert NVIM is not None
    out = subprocess.run(
        [NVIM, "--headless", "--clean", "-l", str(spec)],
        capture_output=True, text=True, env=env, timeout=60, check=True,
    )  # fmt: skip
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["count"] == 4
    assert [label for _, _, label in report["labels"]] == [
        "<U+202E>", "<U+2066>", "<U+200B>", "<U+FEFF>",
    ]  # fmt: skip
    assert [row for row, _, _ in report["labels"]] == [0, 0, 2, 2]
    assert report["text"] == "\n".join(lines)


# What lazy.nvim does with a spec from a git URL (lua/lazy/core/loader.lua, manage/task/git.lua
# and manage/task/plugin.lua), step by step, since lazy.nvim itself cannot be installed here.
LAZY_EMULATION = r"""
local result, root = os.getenv('RESULT'), os.getenv('LAZY_ROOT')
local report = { errors = {} }
local function check(what, fn)
  local ok, err = pcall(fn)
  if not ok then
    table.insert(report.errors, what .. ': ' .. tostring(err))
  end
end
vim.go.loadplugins = false -- lazy.nvim sources every plugin/ file itself

local specs = {
  -- a stand-in for carlos-algms/agentic.nvim, loaded first: lua/agentic, :checkhealth agentic,
  -- doc/agentic.txt and its :AgenticChat command
  { dir = os.getenv('OTHER'), name = 'agentic.nvim' },
  -- the spec editors/neovim/README.md documents
  { url = os.getenv('URL'), main = 'agentic_lsp',
    opts = { cmd = { 'agentic-lsp-test', 'serve' } } },
}
check('install and load', function()
  for _, spec in ipairs(specs) do
    -- name and dir: the URL's last component without .git, under lazy's root
    spec.name = spec.name or spec.url:gsub('%.git$', ''):match('[^/]+$')
    spec.dir = spec.dir or (root .. '/' .. spec.name)
    if spec.url then -- install: git clone
      local out = vim.fn.system({ 'git', 'clone', '--filter=blob:none', '--origin=origin',
        spec.url, spec.dir })
      assert(vim.v.shell_error == 0, out)
    end
    if vim.fn.isdirectory(spec.dir .. '/doc') == 1 then -- the docs task: tags of dir/doc only
      vim.cmd.helptags(spec.dir .. '/doc')
    end
    -- load: the plugin dir on the runtimepath before the first after/ dir, then its
    -- plugin/**/*.{lua,vim} sourced in order
    local rtp = vim.opt.runtimepath:get()
    local at = #rtp + 1
    for i, path in ipairs(rtp) do
      if path:find('/after/?$') then
        at = i
        break
      end
    end
    table.insert(rtp, at, spec.dir)
    vim.opt.runtimepath = rtp
    local files = vim.fn.globpath(spec.dir, 'plugin/**/*.{lua,vim}', false, true)
    table.sort(files)
    for _, file in ipairs(files) do
      vim.cmd.source(vim.fn.fnameescape(file))
    end
    if spec.opts then -- config: require(main).setup(opts); lazy guesses main only from dir/lua
      report.root_lua = vim.fn.isdirectory(spec.dir .. '/lua')
      require(spec.main).setup(spec.opts)
    end
  end
end)

local ours = root .. '/agentic-lsp/editors/neovim'
report.ours = ours
check('modules', function()
  report.agentic = require('agentic').name
  report.module = vim.api.nvim_get_runtime_file('lua/agentic_lsp/init.lua', true)
  report.health_modules = vim.api.nvim_get_runtime_file('lua/agentic*/health.lua', true)
end)
check('commands', function()
  report.commands = {}
  for _, name in ipairs({ 'AgenticRun', 'AgenticAccept', 'AgenticStatus', 'AgenticChat' }) do
    report.commands[name] = vim.fn.exists(':' .. name) == 2
  end
end)
check('lsp config', function()
  report.cmd = vim.lsp.config.agentic_lsp.cmd
end)
check('help', function()
  report.help = {}
  local tags = { 'agentic_lsp-setup', 'agentic_lsp.setup()', ':AgenticAccept', 'agentic.setup()' }
  for _, tag in ipairs(tags) do
    vim.cmd.help(tag)
    report.help[tag] = vim.api.nvim_buf_get_name(0)
    vim.cmd.helpclose()
  end
end)
check('health', function()
  vim.cmd('checkhealth agentic_lsp')
  report.health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
end)
report.loaded = vim.g.loaded_agentic_lsp
local handle = assert(io.open(result, 'w'))
handle:write(vim.json.encode(report))
handle:close()
vim.cmd('qa!')
"""

OTHER_INIT = "return { name = 'agentic.nvim', setup = function() end }\n"
OTHER_HEALTH = "return { check = function() vim.health.start('agentic.nvim') end }\n"
OTHER_PLUGIN = "vim.api.nvim_create_user_command('AgenticChat', function() end, {})\n"
OTHER_DOC = "*agentic.txt*  stand-in\n\n*agentic.setup()*\n*agentic-contents*\n\nvim:ft=help\n"


def test_lazy_nvim_git_url_next_to_agentic_nvim(tmp_path: Path) -> None:
    """The repository installed the way lazy.nvim installs a spec from a git URL, next to a
    stand-in for carlos-algms/agentic.nvim (same-named ``lua/agentic`` module, health check,
    help file and an ``:Agentic…`` command).

    lazy.nvim is not installable offline, so this emulates what its loader does (see
    LAZY_EMULATION): ``git clone`` of a ``file://`` URL (a commit of this working tree) into its
    root, ``helptags`` of the clone's ``doc/``, the clone on the runtimepath, its ``plugin/``
    files sourced, then ``require(main).setup(opts)``. The root ``plugin/agentic_lsp.lua`` must
    bring in ``editors/neovim``: module, commands, ``lsp/`` config, help and health check, while
    ``require('agentic')`` stays the other plugin's."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    source = tmp_path / "remote" / "agentic-lsp"
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, capture_output=True, text=True, check=True,
    ).stdout.split("\0")  # fmt: skip
    for name in filter(None, listed):
        path = REPO / name
        if path.is_file() and not path.is_symlink():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, source / name)
    repo = pygit2.init_repository(str(source), initial_head="main")
    repo.index.add_all()
    repo.index.write()
    signature = pygit2.Signature("Test", "test@example.com")
    repo.create_commit("HEAD", signature, signature, "tree", repo.index.write_tree(), [])
    other = tmp_path / "other"
    stand_in = {"lua/agentic/init.lua": OTHER_INIT, "lua/agentic/health.lua": OTHER_HEALTH,
                "plugin/agentic.lua": OTHER_PLUGIN, "doc/agentic.txt": OTHER_DOC}  # fmt: skip
    for name, text in stand_in.items():
        (other / name).parent.mkdir(parents=True, exist_ok=True)
        (other / name).write_text(text)
    init = tmp_path / "lazy_init.lua"
    init.write_text(LAZY_EMULATION)
    home = tmp_path / "home"
    result = tmp_path / "lazy.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTIC_LSP_", "NVIM"))}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / "config"),
               XDG_DATA_HOME=str(home / "data"), XDG_STATE_HOME=str(home / "state"),
               XDG_CACHE_HOME=str(home / "cache"), LAZY_ROOT=str(home / "data" / "lazy"),
               URL=source.as_uri(), OTHER=str(other), RESULT=str(result))  # fmt: skip
    assert NVIM is not None
    proc = subprocess.run(
        [NVIM, "--headless", "-n", "-i", "NONE", "-u", str(init)],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.exists(), f"nvim exit {proc.returncode}\n{proc.stderr}"
    report = json.loads(result.read_text())
    ours = report["ours"]
    assert report["errors"] == [], report["errors"]
    assert report["root_lua"] == 0  # so lazy cannot guess the module: the spec names main
    assert report["loaded"] is True
    assert report["agentic"] == "agentic.nvim"
    assert report["module"] == [f"{ours}/lua/agentic_lsp/init.lua"]
    assert sorted(report["health_modules"]) == sorted(
        [f"{other}/lua/agentic/health.lua", f"{ours}/lua/agentic_lsp/health.lua"]
    )
    assert all(report["commands"].values()), report["commands"]
    assert report["cmd"] == ["agentic-lsp-test", "serve"]
    help_file = f"{ours}/doc/agentic_lsp.txt"
    assert report["help"] == {
        "agentic_lsp-setup": help_file, "agentic_lsp.setup()": help_file,
        ":AgenticAccept": help_file, "agentic.setup()": f"{other}/doc/agentic.txt",
    }  # fmt: skip
    assert "agentic-lsp: Neovim" in report["health"]
    assert "agentic.nvim" not in report["health"]
    assert "Error" not in proc.stderr, proc.stderr


def test_a_plan_gate_opens_and_saves_the_plan_files(tmp_path: Path) -> None:
    """A run waiting at its plan gate (events as the server sends them): the notification names
    the plan files, :AgenticOpenPlan opens them, an unsaved edit is written when the gate is
    answered (the run reads the files)."""
    root = tmp_path / "repo"
    runs = root / ".agentic-lsp" / "runs" / "run1"
    runs.mkdir(parents=True)
    (runs / "plan.md").write_text("## Approach\nRound it.\n")
    (runs / "tickets.md").write_text("# Tickets\n\n## T1: Round the total\n")
    extra = {
        "AGENTIC_NVIM_PLAN": str(runs / "plan.md"),
        "AGENTIC_NVIM_TICKETS": str(runs / "tickets.md"),
    }
    run_scenario(tmp_path, "plan_gate_spec", root, {}, extra)
    assert (runs / "tickets.md").read_text().startswith("# Tickets (edited in Neovim)\n")
