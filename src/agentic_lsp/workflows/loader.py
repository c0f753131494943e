"""Find and load workflow files: the shipped ones and the workspace's own.

Shipped workflows live in the wheel as ``agentic_lsp/_workflows`` (pyproject force-include) and,
when running from a source checkout, in the repository's top-level ``workflows/`` folder. A
workspace adds or overrides workflows (by ``name``) in ``.agentic-lsp/workflows/*.yaml``.

Every problem is reported with its file, line and key: the YAML is composed into nodes first so a
pydantic location such as ``stages.1.next_on_success`` maps back to the line that holds it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from pydantic import ValidationError

from agentic_lsp.workflows.schema import (
    Loc,
    Problem,
    WorkflowDefinitionError,
    WorkflowSpec,
    pydantic_problems,
    semantic_problems,
)

log = logging.getLogger(__name__)

WORKSPACE_DIR = Path(".agentic-lsp") / "workflows"
MAX_WORKFLOW_BYTES = 256_000


def builtin_dir() -> Path | None:
    """Where the shipped workflows are: inside the installed package, else the source tree."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "_workflows", package.parent.parent / "workflows"):
        if candidate.is_dir() and any(candidate.glob("*.yaml")):
            return candidate
    return None


def _line_of(root: yaml.Node | None, loc: Loc) -> int | None:
    """1-based line of the node at ``loc`` (the key's line for mappings), or its nearest parent."""
    node = root
    line = root.start_mark.line + 1 if root is not None else None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value == str(part):
                    line, node = key.start_mark.line + 1, value
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                return line
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def _key_text(loc: Loc) -> str:
    return ".".join(str(p) for p in loc)


def _duplicate_keys(node: yaml.Node | None, file: str, path: Loc = ()) -> list[Problem]:
    problems: list[Problem] = []
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            name = str(key.value)
            if name in seen:
                problems.append(
                    Problem(
                        file, key.start_mark.line + 1, _key_text((*path, name)), "duplicate key"
                    )
                )
            seen.add(name)
            problems += _duplicate_keys(value, file, (*path, name))
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            problems += _duplicate_keys(item, file, (*path, i))
    return problems


def parse_workflow(text: str, file: str) -> WorkflowSpec:
    """Validate one workflow's YAML text; :class:`WorkflowDefinitionError` lists every problem."""
    if len(text.encode("utf-8")) > MAX_WORKFLOW_BYTES:
        raise WorkflowDefinitionError([Problem(file, None, "", "file is too large")])
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        reason = getattr(exc, "problem", None) or str(exc)
        raise WorkflowDefinitionError(
            [Problem(file, line, "", f"not valid YAML: {reason}")]
        ) from None
    problems = _duplicate_keys(node, file)
    if not isinstance(data, dict):
        problems.append(Problem(file, 1, "", "expected a mapping with name, description, stages"))
        raise WorkflowDefinitionError(problems)
    try:
        spec = WorkflowSpec.model_validate(data)
    except ValidationError as exc:
        found = pydantic_problems(exc)
        problems += [Problem(file, _line_of(node, loc), _key_text(loc), msg) for loc, msg in found]
        raise WorkflowDefinitionError(problems) from None
    found = semantic_problems(spec)
    problems += [Problem(file, _line_of(node, loc), _key_text(loc), msg) for loc, msg in found]
    if problems:
        raise WorkflowDefinitionError(problems)
    return spec


def load_workflow_file(path: Path) -> WorkflowSpec:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise WorkflowDefinitionError(
            [Problem(str(path), None, "", f"cannot read ({exc})")]
        ) from None
    return parse_workflow(text, str(path))


@dataclass
class WorkflowCatalog:
    """Every workflow found, by name, plus the problems of files that did not load."""

    workflows: dict[str, WorkflowSpec] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    errors: list[WorkflowDefinitionError] = field(default_factory=list)

    def get(self, name: str) -> WorkflowSpec:
        if name in self.workflows:
            return self.workflows[name]
        for error in self.errors:
            if any(Path(p.file).stem == name for p in error.problems):
                raise error
        from agentic_lsp.errors import AgenticError

        raise AgenticError(
            f"no workflow named {name!r}",
            f"choose one of {sorted(self.workflows)} or add {WORKSPACE_DIR / (name + '.yaml')}",
        )


def load_catalog(workspace: Path | None, extra_dirs: tuple[Path, ...] = ()) -> WorkflowCatalog:
    """Shipped workflows, then ``extra_dirs``, then the workspace's (later ones override)."""
    catalog = WorkflowCatalog()
    folders = [d for d in (builtin_dir(), *extra_dirs) if d is not None]
    if workspace is not None:
        folders.append(workspace / WORKSPACE_DIR)
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")]):
            try:
                spec = load_workflow_file(path)
            except WorkflowDefinitionError as exc:
                log.warning("%s", exc.message)
                catalog.errors.append(exc)
                continue
            catalog.workflows[spec.name] = spec
            catalog.sources[spec.name] = str(path)
    return catalog
