"""The architecture's invariants as data, and a checker for them (test code, not shipped).

:func:`scan` reads every module of a package tree with :mod:`ast` and records its imports (top
level, inside functions, under ``if TYPE_CHECKING:``, relative ones resolved, ``from pkg import
sub`` counted as importing the submodule ``pkg.sub``, and ``importlib.import_module("...")``
string literals) and the attribute names it touches. :func:`check` runs :data:`RULES` over that
and returns one :class:`Violation` per broken invariant.

A rule is one entry of :data:`RULES`; adding an invariant is adding a line there (and a case to
the synthetic tree in ``tests/unit/test_architecture.py``, which requires every rule to fire).
Module patterns match a module and everything below it: ``agentic_lsp.index`` covers
``agentic_lsp.index`` and ``agentic_lsp.index.store``; ``agentic_lsp`` covers every module.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

PACKAGE = "agentic_lsp"
# Folders under the package that hold sample files copied to users' disks, not modules.
DATA_DIRS = frozenset({"demo_assets", "__pycache__"})

ADAPTERS = ("agentic_lsp.lsp", "agentic_lsp.mcp", "agentic_lsp.cli", "agentic_lsp.acp")
SERVICES = (
    "agentic_lsp.changes",
    "agentic_lsp.workflows",
    "agentic_lsp.agents",
    "agentic_lsp.index",
    "agentic_lsp.llm",
    "agentic_lsp.navigation",
)
# The index modules an adapter may import: plain results and data models, no machinery.
INDEX_RESULTS = (
    "agentic_lsp.index.models",
    "agentic_lsp.index.progress",
    "agentic_lsp.index.results",
)


def covers(patterns: Iterable[str], module: str) -> bool:
    """True if ``module`` is one of ``patterns`` or lies below one of them."""
    return any(module == p or module.startswith(p + ".") for p in patterns)


@dataclass(frozen=True)
class Reference:
    """An import (``name``: the module) or an attribute access (``name``: the attribute)."""

    name: str
    line: int


@dataclass
class Module:
    name: str
    path: Path
    lines: int
    is_package: bool
    imports: list[Reference] = field(default_factory=list)
    attributes: list[Reference] = field(default_factory=list)


@dataclass
class Project:
    root: Path  # the package's own folder (``.../agentic_lsp``)
    modules: dict[str, Module]

    def graph(self) -> dict[str, set[str]]:
        """Arrows between the project's own modules (imports of modules that exist)."""
        return {
            name: {ref.name for ref in mod.imports if ref.name in self.modules and ref.name != name}
            for name, mod in self.modules.items()
        }


@dataclass(frozen=True)
class Violation:
    rule: str
    message: str
    where: str = ""  # "path:line", for the reader

    def __str__(self) -> str:
        return f"{self.message}  [{self.where}]" if self.where else self.message


class Rule(Protocol):
    @property
    def name(self) -> str: ...

    def check(self, project: Project) -> list[Violation]: ...


@dataclass(frozen=True)
class ImportRule:
    """Modules in ``importers`` (less ``except_importers``) must not import ``forbidden``
    (less ``except_targets``). Patterns may name the project's modules or third-party ones."""

    name: str
    why: str
    importers: tuple[str, ...]
    forbidden: tuple[str, ...]
    except_importers: tuple[str, ...] = ()
    except_targets: tuple[str, ...] = ()

    def check(self, project: Project) -> list[Violation]:
        found: dict[tuple[str, str], Violation] = {}
        for mod in project.modules.values():
            if not covers(self.importers, mod.name) or covers(self.except_importers, mod.name):
                continue
            for ref in mod.imports:
                if (mod.name, ref.name) in found or ref.name == mod.name:
                    continue
                if covers(self.forbidden, ref.name) and not covers(self.except_targets, ref.name):
                    found[mod.name, ref.name] = Violation(
                        self.name,
                        f"module {mod.name} imports {ref.name}: {self.name} ({self.why})",
                        _where(project, mod, ref.line),
                    )
        return list(found.values())


@dataclass(frozen=True)
class AttributeRule:
    """No module outside ``allowed_in`` may access an attribute named one of ``attributes``
    (``x.name``, or ``getattr``/``setattr``/``hasattr`` with the name as a string literal)."""

    name: str
    why: str
    attributes: tuple[str, ...]
    allowed_in: tuple[str, ...]

    def check(self, project: Project) -> list[Violation]:
        found: dict[tuple[str, str], Violation] = {}
        for mod in project.modules.values():
            if covers(self.allowed_in, mod.name):
                continue
            for ref in mod.attributes:
                if ref.name in self.attributes and (mod.name, ref.name) not in found:
                    found[mod.name, ref.name] = Violation(
                        self.name,
                        f"module {mod.name} accesses .{ref.name}: {self.name} ({self.why})",
                        _where(project, mod, ref.line),
                    )
        return list(found.values())


def package_of(module: str) -> str:
    """The top-level subpackage a module belongs to; a top-level module is its own package."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


@dataclass(frozen=True)
class CircleRule:
    """Import circles (strongly connected components of the module graph) stay inside one
    top-level subpackage."""

    name: str
    why: str

    def check(self, project: Project) -> list[Violation]:
        graph = project.graph()
        out = []
        for component in strongly_connected(graph):
            packages = sorted({package_of(m) for m in component})
            if len(packages) < 2:
                continue
            members = sorted(component)
            crossing = sorted(
                f"{a} -> {b}"
                for a in members
                for b in sorted(graph[a] & component)
                if package_of(a) != package_of(b)
            )
            out.append(
                Violation(
                    self.name,
                    f"modules {', '.join(members)} import each other: {self.name} ({self.why}; "
                    f"the circle spans {', '.join(packages)}; arrows across packages: "
                    f"{', '.join(crossing)})",
                )
            )
        return out


@dataclass(frozen=True)
class SizeRule:
    name: str
    why: str
    max_lines: int

    def check(self, project: Project) -> list[Violation]:
        return [
            Violation(
                self.name,
                f"module {mod.name} has {mod.lines} lines: {self.name} ({self.why}; "
                f"limit {self.max_lines})",
                _where(project, mod, 1),
            )
            for mod in project.modules.values()
            if mod.lines > self.max_lines
        ]


ADAPTERS_NO_INDEX = "adapters import no index internals"
ENGINE_ON_TOP = "nothing below the Engine imports it"
ADAPTERS_APART = "lsp/ does not import mcp/"
OVERLAY = "only the Engine touches the buffer overlay"
PROTOCOLS = "protocol types never leave the adapters"
SERVICES_DOWN = "services never import the Engine or an adapter"
CIRCLES = "no import circle spans more than one package"
SMALL = "modules stay small"

# One line per rule (the formatter would spread them over many).
# fmt: off
RULES: list[Rule] = [
    ImportRule(ADAPTERS_NO_INDEX, "adapters reach the index through the Engine; allowed: index.models, index.progress, index.results", ADAPTERS, ("agentic_lsp.index",), except_targets=INDEX_RESULTS),  # noqa: E501
    ImportRule(ENGINE_ON_TOP, "only the adapters and agentic_lsp.testing import the Engine; services get what they need passed in", (PACKAGE,), ("agentic_lsp.engine",), except_importers=(*ADAPTERS, "agentic_lsp.testing")),  # noqa: E501
    ImportRule(ADAPTERS_APART, "the LSP server gets MCP hosting injected by the CLI", ("agentic_lsp.lsp",), ("agentic_lsp.mcp",)),  # noqa: E501
    ImportRule(ADAPTERS_APART, "the MCP server does not depend on the LSP server", ("agentic_lsp.mcp",), ("agentic_lsp.lsp",)),  # noqa: E501
    ImportRule(ADAPTERS_APART, "the ACP adapter depends on neither the LSP nor the MCP server", ("agentic_lsp.acp",), ("agentic_lsp.lsp", "agentic_lsp.mcp")),  # noqa: E501
    AttributeRule(OVERLAY, "unsaved buffers go through the Engine, which owns the overlay", ("overlays", "set_overlay"), allowed_in=("agentic_lsp.engine", "agentic_lsp.index")),  # noqa: E501
    AttributeRule(OVERLAY, "the Engine's indexer is private to the Engine", ("_indexer",), allowed_in=("agentic_lsp.engine",)),  # noqa: E501
    ImportRule(PROTOCOLS, "LSP types (lsprotocol, pygls) stay in agentic_lsp.lsp", (PACKAGE,), ("lsprotocol", "pygls"), except_importers=("agentic_lsp.lsp", "agentic_lsp.testing")),  # noqa: E501
    ImportRule(PROTOCOLS, "the MCP SDK stays in agentic_lsp.mcp", (PACKAGE,), ("mcp",), except_importers=("agentic_lsp.mcp", "agentic_lsp.testing")),  # noqa: E501
    ImportRule(PROTOCOLS, "ACP types stay in agentic_lsp.acp", (PACKAGE,), ("acp", "agent_client_protocol"), except_importers=("agentic_lsp.acp", "agentic_lsp.testing")),  # noqa: E501
    ImportRule(SERVICES_DOWN, "services sit below the Engine and the adapters and know neither", SERVICES, ("agentic_lsp.engine", *ADAPTERS)),  # noqa: E501
    CircleRule(CIRCLES, "packages are layered; a circle inside one package is allowed"),
    SizeRule(SMALL, "split a module before it grows past the limit", max_lines=400),
]
# fmt: on


def check(package_dir: Path, rules: Iterable[Rule] = RULES) -> list[Violation]:
    """Every violation of ``rules`` in the package at ``package_dir`` (e.g. ``src/agentic_lsp``)."""
    project = scan(package_dir)
    return [v for rule in rules for v in rule.check(project)]


# --- reading the tree ---------------------------------------------------------------------------


def scan(package_dir: Path) -> Project:
    package_dir = package_dir.resolve()
    base = package_dir.name
    files = sorted(
        p
        for p in package_dir.rglob("*.py")
        if not DATA_DIRS.intersection(p.relative_to(package_dir).parts[:-1])
    )
    modules: dict[str, Module] = {}
    for path in files:
        parts = [base, *path.relative_to(package_dir).with_suffix("").parts]
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        name = ".".join(parts)
        text = path.read_text(encoding="utf-8")
        modules[name] = Module(name, path, len(text.splitlines()), is_package)
    trees = {
        name: ast.parse(mod.path.read_text(encoding="utf-8"), str(mod.path))
        for name, mod in modules.items()
    }
    for name, tree in trees.items():
        mod = modules[name]
        mod.imports = list(_imports(tree, mod, modules))
        mod.attributes = list(_attributes(tree))
    return Project(package_dir, modules)


def _imports(tree: ast.AST, mod: Module, modules: dict[str, Module]) -> Iterator[Reference]:
    package = mod.name if mod.is_package else mod.name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Reference(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                source = ".".join([*anchor, node.module] if node.module else anchor)
            else:
                source = node.module or ""
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                yield Reference(sub if sub in modules else source, node.lineno)
        elif (
            isinstance(node, ast.Call)
            and _is_import_module(node.func)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and not node.args[0].value.startswith(".")
        ):
            yield Reference(node.args[0].value, node.lineno)


def _is_import_module(func: ast.expr) -> bool:
    if isinstance(func, ast.Attribute):
        return func.attr == "import_module"
    return isinstance(func, ast.Name) and func.id in {"import_module", "__import__"}


def _attributes(tree: ast.AST) -> Iterator[Reference]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            yield Reference(node.attr, node.lineno)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in {"getattr", "setattr", "hasattr", "delattr"}
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            yield Reference(node.args[1].value, node.lineno)


def _where(project: Project, mod: Module, line: int) -> str:
    return f"{mod.path.relative_to(project.root.parent)}:{line}"


def strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm, iterative; components in no particular order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph[succ]))))
                    advanced = True
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                components.append(component)
    return components
