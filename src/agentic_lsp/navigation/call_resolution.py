"""Which definition a call reaches, from the facts of every file (:mod:`.call_sites`).

The rules, in order, for a call inside file ``F``; each edge keeps the rule that placed it:

* ``self``: ``self.m()`` / ``cls.m()`` / ``super().m()`` in a method: ``m`` of the method's class,
  else of its base classes (resolved by these same rules, a few levels deep);
* ``same_file``: a bare name defined in an enclosing function or at ``F``'s top level
  (recursion included); ``C.m()`` with ``C`` a class of ``F``;
* ``import``: a name (or ``mod.name``, ``Cls.m``) bound by an import, followed through the
  module path to a workspace file and through re-exports (``from .core import f`` in an
  ``__init__.py``), relative imports included;
* ``unique_name``: a bare name no rule above placed that exactly one top-level function or
  class in the workspace has (builtins excluded);
* ``unique_method``: ``obj.m()`` on a receiver nothing above typed, when exactly one method in
  the workspace is named ``m``;
* ``ambiguous``: several candidates: the edge keeps them all (capped), never picks one.

A call nothing places (the standard library, site-packages, a builtin) is no edge; it is
counted as external. Name-based: no type inference beyond the rules above.
"""

from __future__ import annotations

import builtins
import posixpath
import re
from dataclasses import dataclass

from agentic_lsp.navigation.call_sites import MODULE, Binding, CallSite, Definition, FileCalls

MAX_CANDIDATES = 20
MAX_HOPS = 5
RESOLUTIONS = ("self", "same_file", "import", "unique_name", "unique_method", "ambiguous")
_BUILTINS = frozenset(dir(builtins))
_CONSTRUCTED = re.compile(r"^([A-Za-z_][\w.]*)\([^()]*\)$")

Target = tuple[str, str]  # (path, qualname)


@dataclass(frozen=True)
class CallEdge:
    """One resolved call: who calls (path, qualname or ``<module>``), where the called name is
    (1-based line, 0-based column), what was written, how it was resolved and what it reaches
    (one target; several, ``candidates`` in all, when ``ambiguous``)."""

    path: str
    caller: str
    line: int
    col: int
    callee: str
    resolution: str
    targets: tuple[Target, ...]
    candidates: int = 1


def module_names(paths: list[str]) -> dict[str, str]:
    """Dotted module name -> path for every Python file. A file's module starts at the
    highest folder of a chain of packages (``src/click/core.py`` -> ``click.core`` when
    ``src/`` has no ``__init__.py``); the full path's dotted form is kept too."""
    present = set(paths)
    found: dict[str, str] = {}
    for path in sorted(paths):
        stem, ext = posixpath.splitext(path)
        if ext not in (".py", ".pyi"):
            continue
        parts = stem.split("/")
        folders = parts[:-1]
        if parts[-1] == "__init__":
            parts = folders
        start = len(folders)
        while start > 0 and _is_package(present, folders[:start]):
            start -= 1
        for first in (start, 0):
            name = ".".join(parts[first:])
            if name and (name not in found or path.endswith(".py")):
                found.setdefault(name, path)
    return found


def _is_package(present: set[str], parts: list[str]) -> bool:
    folder = "/".join(parts)
    return bool(parts) and f"{folder}/__init__.py" in present


class Resolver:
    """Resolves calls against a snapshot of every file's facts (build once per change)."""

    def __init__(self, files: dict[str, FileCalls]) -> None:
        self.files = files
        self.modules = module_names(list(files))
        self.module_of = {path: name for name, path in self.modules.items()}
        self.defs: dict[str, dict[str, Definition]] = {}
        self.bindings: dict[str, dict[str, Binding]] = {}
        self.local_names: dict[str, dict[str, set[str]]] = {}
        self.top_level: dict[str, list[Target]] = {}
        self.methods: dict[str, list[Target]] = {}
        for path, facts in files.items():
            self.defs[path] = {d.qualname: d for d in facts.definitions}
            self.bindings[path] = {b.local: b for b in facts.bindings}
            self.local_names[path] = facts.local_names
            for d in facts.definitions:
                if d.qualname == d.name:
                    self.top_level.setdefault(d.name, []).append((path, d.qualname))
                elif d.kind == "method":
                    self.methods.setdefault(d.name, []).append((path, d.qualname))

    def definition(self, target: Target) -> Definition | None:
        return self.defs.get(target[0], {}).get(target[1])

    # -- one file --------------------------------------------------------------------------------

    def resolve_file(self, path: str) -> tuple[list[CallEdge], int]:
        """The file's edges and how many of its calls reached nothing in the workspace."""
        facts = self.files.get(path)
        if facts is None:
            return [], 0
        edges: list[CallEdge] = []
        external = 0
        for call in facts.calls:
            edge = self.resolve(path, call)
            if edge is None:
                external += 1
            else:
                edges.append(edge)
        return edges, external

    def resolve(self, path: str, call: CallSite) -> CallEdge | None:
        placed = self._place(path, call)
        if placed is None:
            return None
        resolution, targets = placed
        count = len(targets)
        if count > 1:
            resolution = "ambiguous"
        return CallEdge(path, call.caller, call.line, call.col, call.callee, resolution,
                        tuple(targets[:MAX_CANDIDATES]), count)  # fmt: skip

    def _place(self, path: str, call: CallSite) -> tuple[str, list[Target]] | None:
        receiver = call.receiver
        if receiver is None:
            found = self.name_in(path, call.name, call.caller)
            if found is not None:
                return found if found[1] else None
            if call.name in _BUILTINS:
                return None
            return self._by_name(self.top_level.get(call.name, []), "unique_name")
        if receiver in ("self", "cls", "super()"):
            cls = self._class_of(path, call.caller)
            if cls is not None:
                skip = receiver == "super()"
                method = self.method_of((path, cls), call.name, skip_own=skip)
                if method is not None:
                    return "self", [method]
        else:
            made = _CONSTRUCTED.match(receiver)  # ``Cls(...).m()``: a method of Cls
            owner = self.expression(path, made.group(1) if made else receiver, call.caller)
            if made and owner is not None and not self._is_class(owner[1]):
                owner = None
            if owner is not None:
                how, target = owner
                if target[1] == "":  # a module: its top-level name
                    found_export = self.export(target[0], call.name)
                    if found_export is not None:
                        return how, [found_export]
                    return None  # a module's name the workspace does not define
                method = self.method_of(target, call.name)
                if method is not None:
                    return how, [method]
        return self._by_name(self.methods.get(call.name, []), "unique_method")

    def _is_class(self, target: Target) -> bool:
        d = self.definition(target)
        return d is not None and d.kind == "class"

    @staticmethod
    def _by_name(found: list[Target], kind: str) -> tuple[str, list[Target]] | None:
        if not found:
            return None
        return (kind if len(found) == 1 else "ambiguous"), sorted(found)

    def _class_of(self, path: str, caller: str) -> str | None:
        """The class whose method ``caller`` is (or is nested in)."""
        defs = self.defs.get(path, {})
        parts = caller.split(".")
        for end in range(len(parts), 0, -1):
            d = defs.get(".".join(parts[:end]))
            if d is not None and d.kind == "method" and d.cls:
                return d.cls
        return None

    # -- names ---------------------------------------------------------------------------------

    def name_in(self, path: str, name: str, caller: str) -> tuple[str, list[Target]] | None:
        """A bare name as the code at ``caller`` in ``path`` sees it: enclosing functions (not
        class bodies), the file's top level, then its imports."""
        defs = self.defs.get(path, {})
        if caller != MODULE:
            parts = caller.split(".")
            for end in range(len(parts), 0, -1):
                scope = ".".join(parts[:end])
                own = defs.get(scope)
                if own is None or own.kind == "class":
                    continue
                if f"{scope}.{name}" in defs:
                    return "same_file", [(path, f"{scope}.{name}")]
                if name in self.local_names.get(path, {}).get(scope, ()):
                    return "local", []  # a parameter or variable: a value, not a definition
        if name in defs:
            return "same_file", [(path, name)]
        binding = self.bindings.get(path, {}).get(name)
        if binding is not None:
            target = self.follow(path, binding, MAX_HOPS)
            return ("import", [target]) if target is not None and target[1] else None
        return None

    def expression(self, path: str, text: str, caller: str) -> tuple[str, Target] | None:
        """What a dotted receiver (``mod``, ``pkg.mod``, ``Cls``, ``mod.Cls``) names: a module
        (qualname ``""``) or a class, and by which rule; ``None`` when nothing places it."""
        head, _, rest = text.partition(".")
        if not head.isidentifier():
            return None
        found = self.name_in(path, head, caller)
        if found is None:
            binding = self.bindings.get(path, {}).get(head)
            followed = self.follow(path, binding, MAX_HOPS) if binding is not None else None
            if followed is None:
                return None
            how, target = "import", followed
        elif not found[1]:
            return None  # a local variable: its type is unknown here
        else:
            how, target = found[0], found[1][0]
        for part in rest.split(".") if rest else []:
            if not part.isidentifier():
                return None
            if target[1] == "":
                sub = self.modules.get(f"{self.module_of.get(target[0], '')}.{part}")
                if sub is not None:
                    target = (sub, "")
                    continue
                found_export = self.export(target[0], part)
                if found_export is None:
                    return None
                target = found_export
            else:
                d = self.defs.get(target[0], {}).get(f"{target[1]}.{part}")
                if d is None:
                    return None
                target = (target[0], d.qualname)
        return how, target

    def follow(self, path: str, binding: Binding, hops: int) -> Target | None:
        """Where an import binding leads: a module (qualname ``""``) or a definition."""
        module = self.absolute(path, binding)
        if binding.attr is None:
            module_path = self.modules.get(module)
            return (module_path, "") if module_path is not None else None
        sub = self.modules.get(f"{module}.{binding.attr}" if module else binding.attr)
        module_path = self.modules.get(module)
        if module_path is not None:
            found = self.export(module_path, binding.attr, hops)
            if found is not None:
                return found
        return (sub, "") if sub is not None else None

    def absolute(self, path: str, binding: Binding) -> str:
        if binding.level == 0:
            return binding.module
        own = self.module_of.get(path, "").split(".")
        package = own if path.endswith("__init__.py") else own[:-1]
        base = package[: len(package) - (binding.level - 1)] if binding.level > 1 else package
        return ".".join([*base, *([binding.module] if binding.module else [])])

    def export(self, module_path: str, name: str, hops: int = MAX_HOPS) -> Target | None:
        """``name`` at the top level of a module file, followed through re-exports."""
        if name in self.defs.get(module_path, {}):
            return module_path, name
        binding = self.bindings.get(module_path, {}).get(name)
        if binding is None or hops <= 0:
            return None
        return self.follow(module_path, binding, hops - 1)

    def method_of(self, cls: Target, name: str, *, skip_own: bool = False) -> Target | None:
        """``name`` on class ``cls`` or, failing that, on its bases (breadth first, bounded)."""
        queue, seen = [cls], set[Target]()
        while queue and len(seen) < 3 * MAX_HOPS:
            current = queue.pop(0)
            if current in seen:
                continue
            seen.add(current)
            d = self.definition(current)
            if d is None or d.kind != "class":
                continue
            own = f"{current[1]}.{name}"
            if not (skip_own and current == cls) and own in self.defs.get(current[0], {}):
                return current[0], own
            for base in d.bases:
                placed = self.expression(current[0], base, MODULE)
                if placed is not None and placed[1][1]:
                    queue.append(placed[1])
        return None
