"""The lint/format agent: runs the formatter and linter the project configures (ruff, gofmt,
prettier) on the files the run changed, in a sandbox, and turns their rewrites into edits.

Nothing is installed or configured on the user's behalf: a tool runs only when the project
configures it (ruff: ``[tool.ruff]`` or ``ruff.toml``; prettier: a config and a local install)
and it is available.
"""

from __future__ import annotations

import asyncio
import importlib.util
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from agentic_lsp.agents.base import Agent, AgentContext, AgentResult
from agentic_lsp.agents.sandbox import open_sandbox

LINT_TIMEOUT_S = 120.0
_PRETTIER_CONFIGS = (
    ".prettierrc",
    ".prettierrc.json",
    ".prettierrc.yaml",
    ".prettierrc.yml",
    ".prettierrc.js",
    "prettier.config.js",
    ".prettierrc.toml",
)
_PRETTIER_EXTS = (".js", ".jsx", ".ts", ".tsx", ".css", ".scss", ".json", ".md", ".mjs")


@dataclass(frozen=True)
class Tool:
    name: str
    extensions: tuple[str, ...]
    fix: list[list[str]]  # commands that rewrite files (file names appended)
    check: list[str] | None = None  # reports what is left (file names appended)


def _ruff_argv() -> list[str] | None:
    exe = shutil.which("ruff")
    if exe:
        return [exe]
    if importlib.util.find_spec("ruff") is not None:
        return [sys.executable, "-m", "ruff"]
    return None


def _configures_ruff(root: Path) -> bool:
    if (root / "ruff.toml").is_file() or (root / ".ruff.toml").is_file():
        return True
    pyproject = root / "pyproject.toml"
    try:
        return pyproject.is_file() and "[tool.ruff" in pyproject.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False


def configured_tools(root: Path) -> list[Tool]:
    tools: list[Tool] = []
    ruff = _ruff_argv()
    if ruff and _configures_ruff(root):
        tools.append(
            Tool(
                "ruff",
                (".py", ".pyi"),
                [[*ruff, "format"], [*ruff, "check", "--fix", "-q"]],
                [*ruff, "check", "-q"],
            )
        )
    gofmt = shutil.which("gofmt")
    if gofmt and (root / "go.mod").is_file():
        tools.append(Tool("gofmt", (".go",), [[gofmt, "-w"]]))
    prettier = root / "node_modules" / ".bin" / "prettier"
    if prettier.exists() and any((root / name).exists() for name in _PRETTIER_CONFIGS):
        tools.append(Tool("prettier", _PRETTIER_EXTS, [[str(prettier), "--write"]]))
    return tools


class LintAgent(Agent):
    kind = "lint"
    role = None
    uses_context = False

    async def run(self, ctx: AgentContext) -> AgentResult:
        changed = [p for p, text in ctx.view.pending.items() if text is not None]
        tools = [
            (tool, [p for p in changed if p.endswith(tool.extensions)])
            for tool in await asyncio.to_thread(configured_tools, ctx.view.root)
        ]
        tools = [(tool, files) for tool, files in tools if files]
        if not tools:
            return AgentResult(True, "no configured formatter or linter applies to the changes")
        names = ", ".join(tool.name for tool, _ in tools)
        refused = await asyncio.to_thread(ctx.tests.refused, f"{names} was")
        if refused is not None:
            why = f"{refused.message}; to enable: {refused.hint}"
            ctx.log(f"lint: {why}")
            return AgentResult(True, why, output=why)
        reports: list[str] = []
        remaining = False
        edits: dict[str, str | None] = {}
        async with open_sandbox(
            ctx.view.root,
            buffers=ctx.view.buffers,
            edits=ctx.view.pending,
            parent=ctx.tests.sandboxes,
            isolation=ctx.tests.isolation,
        ) as box:
            for tool, files in tools:
                for argv in tool.fix:
                    result = await box.run([*argv, *files], timeout_s=LINT_TIMEOUT_S)
                    reports.append(f"$ {result.command}\n{result.output.strip()}".strip())
                if tool.check:
                    result = await box.run([*tool.check, *files], timeout_s=LINT_TIMEOUT_S)
                    reports.append(f"$ {result.command}\n{result.output.strip()}".strip())
                    remaining = remaining or not result.ok
                for path in files:
                    text = await asyncio.to_thread(box.read_text, path)
                    if text is not None and text != ctx.view.pending.get(path):
                        edits[path] = text
        ok = not (remaining and ctx.options.fail_on_remaining)
        left = "; problems remain (see output)" if remaining else ""
        return AgentResult(
            ok,
            f"{names}: reformatted {len(edits)} file(s){left}",
            edits,
            output="\n\n".join(reports)[-4_000:],
        )
