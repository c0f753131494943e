"""Secrets never leave the engine: reference previews, symlink aliases, workflow test output."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agentic_lsp.agents.base import AgentResult
from agentic_lsp.agents.prompting import render_failure
from agentic_lsp.agents.test_outcomes import Comparison
from agentic_lsp.agents.test_runner import CheckResult, TestRun
from agentic_lsp.config import IndexSettings, load_settings
from agentic_lsp.engine import Engine
from agentic_lsp.errors import WorkspaceError
from agentic_lsp.index.discovery.walk import classify_path, discover, read_indexable_text
from agentic_lsp.index.models import SkipReason
from agentic_lsp.workflows import stage_context, stages
from agentic_lsp.workflows.stage_attempt import StageAttempt
from agentic_lsp.workflows.state import FailureContext

AWS = "AKIAZ7QW3XK9PLM2RT4B"
PASSWORD = "Tr0ub4dor-xYz9"
URL_PASSWORD = "S3cretPw9"
GITHUB = "ghp_" + "a1B2" * 9
LIVE = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a"
SECRETS = (AWS, PASSWORD, URL_PASSWORD, GITHUB)

FILES = {
    "src/settings.py": (
        f'SETTINGS = {{}}\nAWS = "{AWS}"  # SETTINGS\npassword = "{PASSWORD}"  # SETTINGS\n'
    ),
    "config/app.yaml": f"db: postgres://app:{URL_PASSWORD}@db/x  # SETTINGS\ntoken: {GITHUB}\n",
    "config/app.json": f'{{"SETTINGS": 1, "token": "{GITHUB}"}}\n',
    "docs/setup.md": f"# SETTINGS\n\nexport GITHUB_TOKEN={GITHUB}  # SETTINGS\n",
}


@pytest.fixture
async def engine(tmp_path: Path):
    root = tmp_path / "repo"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / ".env").write_text(f"SETTINGS_PASSWORD={PASSWORD}\n")
    engine = Engine(root, load_settings(root))
    await engine.start(index=False, watch=False)
    await asyncio.to_thread(engine.sync_blocking, None, False)
    yield engine
    await engine.close()


async def test_reference_previews_are_redacted_for_every_caller(engine: Engine) -> None:
    found = engine.navigation.references("SETTINGS", "src/settings.py")
    previews = "\n".join(o.preview for o in found.occurrences)
    assert {o.path for o in found.occurrences} >= set(FILES)
    assert "[REDACTED]" in previews
    for secret in SECRETS:
        assert secret not in previews
    # the open buffer of a secret file is never searched
    buffers = {".env": f"SETTINGS_PASSWORD={PASSWORD}\n"}
    found = engine.navigation.references("SETTINGS_PASSWORD", buffers=buffers)
    assert found.occurrences == []


async def test_reference_columns_stay_those_of_the_real_text(engine: Engine) -> None:
    found = engine.navigation.references("SETTINGS", "src/settings.py")
    aws = next(o for o in found.occurrences if o.path == "src/settings.py" and o.line == 2)
    assert aws.col == len(f'AWS = "{AWS}"  # ')  # the position in the file, not the preview


async def test_snippets_definitions_and_reads_are_redacted(engine: Engine) -> None:
    readable = engine.readable
    for rel in FILES:
        text = readable.read(rel)[1]
        assert not any(secret in text for secret in SECRETS), rel
    node = engine.navigation.symbols_of("src/settings.py")
    assert node.text is None or PASSWORD not in node.text
    with pytest.raises(WorkspaceError):
        readable.read(".env")


def _aliases(root: Path) -> None:
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("x = 1\n")
    (root / ".env").write_text(f"PASSWORD={PASSWORD}\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text('[remote "origin"]\nurl = x\n')
    (root / "keys").mkdir()
    (root / "keys" / "deploy.pem").write_text("-----BEGIN PRIVATE KEY-----\n")
    (root / "env_link.txt").symlink_to(".env")
    (root / "git_config_link").symlink_to(".git/config")
    (root / "src" / "deploy_key.txt").symlink_to(root / "keys" / "deploy.pem")
    (root / "gitdir").symlink_to(".git", target_is_directory=True)


def test_symlink_aliases_of_secrets_are_skipped_in_discovery(tmp_path: Path) -> None:
    _aliases(tmp_path)
    settings = IndexSettings()
    found = discover(tmp_path, settings)
    paths = {f.rel_path for f in found.files}
    assert paths == {"src/app.py"}
    for alias in ("env_link.txt", "git_config_link", "src/deploy_key.txt"):
        assert classify_path(tmp_path, alias, settings) == SkipReason.SECRET
    assert classify_path(tmp_path, "gitdir/config", settings) == SkipReason.SECRET


def test_symlink_aliases_of_secrets_are_never_read(tmp_path: Path) -> None:
    _aliases(tmp_path)
    settings = IndexSettings()
    for alias in ("env_link.txt", "git_config_link", "src/deploy_key.txt", "gitdir/config"):
        assert read_indexable_text(tmp_path, alias, settings) == SkipReason.SECRET, alias
    assert read_indexable_text(tmp_path, "src/app.py", settings) == ("x = 1\n", 0)


class _Readable:
    def __init__(self, root: Path) -> None:
        from agentic_lsp.navigation.readable import ReadableFiles

        self.files = ReadableFiles(root, IndexSettings())


def test_command_output_is_redacted_mid_line(tmp_path: Path) -> None:
    readable = _Readable(tmp_path).files
    output = f"E   AssertionError: API_KEY={LIVE} DEBUG=1\ntoken: {GITHUB}\n3 passed\n"
    shown = readable.redact_output(output)
    assert LIVE not in shown and GITHUB not in shown
    assert "API_KEY=[REDACTED]" in shown and "DEBUG=1" in shown and "3 passed" in shown


async def test_failing_test_output_reaches_the_retry_prompt_redacted(tmp_path: Path) -> None:
    readable = _Readable(tmp_path).files
    leaked = f"FAILED test_settings - print(settings): API_KEY={LIVE} password={PASSWORD}\n"

    class Tests:  # the test runner's verdict, as data: a test named with the secret broke
        async def check(self, edits: Any, buffers: Any, select: Any = ()) -> Any:
            run = TestRun(
                command="pytest", passed=False, failed_tests=True, exit_code=1,
                timed_out=False, output=leaked, duration_s=0.1,
            )  # fmt: skip
            broken = [f"test_settings::test_key[API_KEY={LIVE}]"]
            return CheckResult(run, run, Comparison(False, True, broken=broken))

    result = AgentResult(False, f"failed with API_KEY={LIVE}", output=leaked, test_output=leaked)
    result = stages._redacted(result, readable.redact_output)
    outcome = StageAttempt({"tests": result})
    assert LIVE not in outcome.test_output
    view = SimpleNamespace(pending={})
    await outcome.verify(Tests(), view, {}, readable.redact_output)  # type: ignore[arg-type]
    failure = FailureContext(
        stage="s", attempt=1, summary=outcome.summary(), errors=outcome.errors(),
        test_output=outcome.test_output,
    )  # fmt: skip
    prompt = render_failure(failure)
    assert "API_KEY=[REDACTED]" in prompt
    for text in (prompt, result.output, result.summary, failure.text()):
        assert LIVE not in text and PASSWORD not in text


def test_agent_log_lines_are_redacted(tmp_path: Path) -> None:
    readable = _Readable(tmp_path).files
    lines: list[str] = []
    recorder = SimpleNamespace(log=lines.append)
    stage_context.agent_log(recorder, "s/a", readable.redact_output)(f"API_KEY={LIVE}")  # type: ignore[arg-type]
    assert lines == ["s/a: API_KEY=[REDACTED]"]
