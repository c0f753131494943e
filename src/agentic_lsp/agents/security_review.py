"""Security agents: bounded static checks (``security_scan``) and a model review
(``security_review``). Both report findings; a finding at or above ``fail_on`` fails the agent.

The scan looks at the files the run changed, or (when nothing changed yet) the files retrieval
found. It is a fixed set of line patterns plus the index's secret detector: fast, bounded, and
honest about being shallow.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from agentic_lsp.agents.base import Agent, AgentContext, AgentResult
from agentic_lsp.agents.prompting import render_context, stage_prompt
from agentic_lsp.errors import ProviderError
from agentic_lsp.index.discovery.secrets import redact_secrets
from agentic_lsp.llm.structured import invoke_structured, schema_instructions

Severity = Literal["critical", "high", "medium", "low"]
RANK = {"low": 1, "medium": 2, "high": 3, "critical": 4}
MAX_SCAN_BYTES = 500_000


@dataclass(frozen=True)
class Rule:
    id: str
    pattern: re.Pattern[str]
    severity: Severity
    message: str
    extensions: tuple[str, ...] = ()


def _r(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


RULES: tuple[Rule, ...] = (
    Rule("eval", _r(r"(?<![\w.])(eval|exec)\s*\("), "high", "eval/exec of dynamic code", (".py",)),
    Rule(
        "js-eval",
        _r(r"(?<![\w.])(eval\s*\(|new\s+Function\s*\()"),
        "high",
        "eval / new Function of dynamic code",
        (".js", ".ts", ".jsx", ".tsx", ".mjs"),
    ),
    Rule("shell", _r(r"shell\s*=\s*True"), "high", "subprocess with shell=True", (".py",)),
    Rule(
        "os-system",
        _r(r"\bos\.(system|popen)\s*\("),
        "high",
        "shell command via os.system",
        (".py",),
    ),
    Rule(
        "pickle",
        _r(r"\b(pickle|cPickle|dill|marshal)\.loads?\s*\("),
        "high",
        "deserialising untrusted data with pickle",
        (".py",),
    ),
    Rule(
        "yaml-load",
        _r(r"\byaml\.load\s*\((?![^)]*Loader\s*=\s*yaml\.SafeLoader)"),
        "medium",
        "yaml.load without SafeLoader",
        (".py",),
    ),
    Rule(
        "tls-off",
        _r(r"verify\s*=\s*False|InsecureSkipVerify:\s*true|rejectUnauthorized:\s*false"),
        "high",
        "TLS certificate verification disabled",
    ),
    Rule(
        "weak-hash", _r(r"\b(md5|sha1)\s*\("), "low", "weak hash (fine for checksums, not secrets)"
    ),
    Rule(
        "sql-format",
        _r(r"(?i)\b(execute|query)\s*\(\s*(f[\"']|[\"'][^\"']*[\"']\s*(%|\+|\.format))"),
        "high",
        "SQL built by string formatting (injection)",
    ),
    Rule(
        "mktemp",
        _r(r"\btempfile\.mktemp\s*\("),
        "medium",
        "tempfile.mktemp is race-prone",
        (".py",),
    ),
    Rule(
        "inner-html",
        _r(r"\.innerHTML\s*=|dangerouslySetInnerHTML"),
        "medium",
        "HTML injection sink",
        (".js", ".ts", ".jsx", ".tsx"),
    ),
)


def scan_text(path: str, text: str) -> list[dict[str, Any]]:
    findings: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith(("#", "//")):
            continue
        for rule in RULES:
            if rule.extensions and not path.endswith(rule.extensions):
                continue
            if rule.pattern.search(line):
                findings.append(
                    {
                        "path": path,
                        "line": number,
                        "severity": rule.severity,
                        "rule": rule.id,
                        "issue": rule.message,
                    }
                )
    redacted, count = redact_secrets(text)
    if count:
        for number, (old, new) in enumerate(
            zip(text.splitlines(), redacted.splitlines(), strict=False), 1
        ):
            if old != new:
                findings.append(
                    {
                        "path": path,
                        "line": number,
                        "severity": "high",
                        "rule": "secret",
                        "issue": "hard-coded secret or credential",
                    }
                )
    return findings


def _scan_targets(ctx: AgentContext, max_files: int) -> list[str]:
    if ctx.view.pending:
        return [p for p, t in ctx.view.pending.items() if t is not None][:max_files]
    paths: list[str] = []
    for context in (ctx.retrieval, ctx.enriched):
        if context is not None:
            paths += [s.path for s in context.snippets]
    return list(dict.fromkeys(paths))[:max_files]


def _format(findings: list[dict[str, Any]]) -> str:
    return "\n".join(
        f"- [{f['severity']}] {f['path']}:{f.get('line') or '?'} {f['issue']}" for f in findings
    )


def _verdict(findings: list[dict[str, Any]], fail_on: str, what: str) -> AgentResult:
    blocking = [f for f in findings if RANK.get(f["severity"], 0) >= RANK[fail_on]]
    summary = f"{what}: {len(findings)} finding(s), {len(blocking)} at or above {fail_on}"
    return AgentResult(
        not blocking,
        summary,
        output=_format(findings) or "no findings",
        findings=findings,
        errors=[f"{f['path']}:{f.get('line') or '?'} {f['issue']}" for f in blocking],
    )


class SecurityScanAgent(Agent):
    kind = "security_scan"
    role = None

    async def run(self, ctx: AgentContext) -> AgentResult:
        options = ctx.options
        targets = _scan_targets(ctx, options.max_files)

        def scan() -> list[dict[str, Any]]:
            found: list[dict[str, Any]] = []
            for path in targets:
                text = ctx.view.read(path)
                if text is not None and len(text) <= MAX_SCAN_BYTES:
                    found += scan_text(path, text)
            return found

        findings = await asyncio.to_thread(scan)
        return _verdict(findings, options.fail_on, f"static scan of {len(targets)} file(s)")


class Finding(BaseModel):
    path: str
    line: int | None = None
    severity: Severity
    issue: str
    recommendation: str = ""


class SecurityReport(BaseModel):
    summary: str
    findings: list[Finding] = Field(default_factory=list)


REVIEW_SYSTEM = (
    "You are an application security reviewer. Report only concrete, exploitable problems you "
    "can point to in the code shown, with a severity (critical, high, medium, low). Do not "
    "report style issues. An empty findings list is a fine answer."
)


class SecurityReviewAgent(Agent):
    kind = "security_review"
    role = "security"

    async def run(self, ctx: AgentContext) -> AgentResult:
        if ctx.model is None:
            return AgentResult(False, "no model is configured for the security review")
        changed = "\n\n".join(
            f"{path} (proposed)\n{text}" for path, text in ctx.view.pending.items() if text
        )
        prompt = stage_prompt(
            ctx,
            render_context(ctx.retrieval, ctx.enriched),
            f"## Proposed changes under review\n{changed[:20_000]}" if changed else "",
            schema_instructions(SecurityReport),
        )
        messages = [SystemMessage(REVIEW_SYSTEM), HumanMessage(prompt)]
        try:
            result = await invoke_structured(ctx.model, messages, SecurityReport, retries=2)
        except ProviderError as exc:
            return AgentResult(
                False, f"security review failed: {exc.message}", errors=[exc.message]
            )
        report = result.value
        findings = [f.model_dump() for f in report.findings]
        verdict = _verdict(findings, ctx.options.fail_on, "model review")
        verdict.output = f"{report.summary}\n{verdict.output}"
        return verdict
