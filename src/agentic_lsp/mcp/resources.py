"""MCP resources: workflow definitions, changesets, and how the workspace index is built.

``agentic://workflows`` lists the workflows, ``agentic://workflows/{name}`` is one definition's
YAML, ``agentic://changesets/{id}`` a changeset's summary and unified diff, and
``agentic://index/architecture`` describes the index (what is stored, how search ranks, and this
workspace's numbers).
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError

from agentic_lsp.changes.patch import changeset_diff
from agentic_lsp.errors import AgenticError
from agentic_lsp.mcp.access import EngineAccess, clean
from agentic_lsp.workflows.loader import load_catalog

ARCHITECTURE = """\
# The agentic-lsp index of {root}

Store: {store} (embedded Qdrant Edge by default; one process owns it, others bridge to it).
Collections:
- files: one point per file: a dense embedding of its text ({model}) and a sparse lexical
  vector of its identifier terms.
- functions: one point per symbol (function, method, class, …) found by tree-sitter, with its
  signature, doc and line range; dense vectors are computed on demand for searched files.
- sections: headings of Markdown/RST/text documents.
Symbol table: in memory, rebuilt from the store at start (exact, prefix and fuzzy lookup).
Search (search_code): phase 1 ranks files (dense + lexical, reciprocal-rank fusion); phase 2
ranks symbols inside the top {file_top_k} files (dense + lexical + exact-identifier signal) and
adds the file's score. Results name the signals that found them.
Sync: files are re-parsed only when their content hash changes; a watcher follows edits;
unsaved editor buffers overlay the files on disk. Secret files are never indexed and secret
values are redacted ({redaction}).

## This workspace
State: {state}; files: {files}; symbols: {symbols}; dense vectors pending: {pending}.
Files by language: {languages}
Symbols by kind: {kinds}
"""


def _counts(counter: Counter[str]) -> str:
    return ", ".join(f"{name} {count}" for name, count in counter.most_common(12)) or "none"


def register_resources(server: MCPServer, access: EngineAccess) -> None:
    @server.resource(
        "agentic://index/architecture", name="index-architecture", mime_type="text/markdown"
    )
    async def index_architecture() -> str:
        """How the workspace index is built and searched, with this workspace's numbers."""
        engine = await access.engine()
        status = engine.status()
        languages, kinds = await asyncio.to_thread(engine.index_composition)
        idx = engine.settings.index
        return ARCHITECTURE.format(
            root=status.root, store=status.store, model=idx.embedding_model,
            file_top_k=idx.file_top_k, state=status.state, files=status.files,
            symbols=status.symbols, pending=status.dense_pending,
            redaction="on" if idx.redact_secrets else "off",
            languages=_counts(languages), kinds=_counts(kinds),
        )  # fmt: skip

    @server.resource("agentic://workflows", name="workflows", mime_type="application/json")
    async def workflows() -> str:
        """Every workflow (shipped and the workspace's own): name, description, resource URI."""
        engine = await access.engine()
        catalog = await asyncio.to_thread(load_catalog, engine.root)
        listing = [
            {"name": name, "description": spec.description, "type": spec.workflow_type,
             "stages": [s.id for s in spec.stages], "uri": f"agentic://workflows/{name}"}
            for name, spec in sorted(catalog.workflows.items())
        ]  # fmt: skip
        return json.dumps(listing, indent=1)

    @server.resource(
        "agentic://workflows/{name}", name="workflow-definition", mime_type="application/yaml"
    )
    async def workflow_definition(name: str) -> str:
        """One workflow definition (YAML), as loaded from its file."""
        engine = await access.engine()
        catalog = await asyncio.to_thread(load_catalog, engine.root)
        source = catalog.sources.get(name)
        if source is None:
            raise ResourceNotFoundError(f"no workflow named {name!r}")
        return await asyncio.to_thread(Path(source).read_text, encoding="utf-8")

    @server.resource(
        "agentic://changesets/{changeset_id}", name="changeset", mime_type="text/x-diff"
    )
    async def changeset(changeset_id: str) -> str:
        """A changeset: status, files and the unified diff of what is left to review."""
        engine = await access.engine()
        try:
            found = await asyncio.to_thread(engine.changes.get, changeset_id)
        except AgenticError as exc:
            raise ResourceNotFoundError(exc.message) from None
        try:
            diff = engine.readable.redact(changeset_diff(found))
        except AgenticError as exc:
            raise ResourceError(exc.message) from None
        head = [
            f"# changeset {found.id} ({found.status}) from run {found.run_id}",
            f"# {clean(found.title)}",
            *(f"# {c.op} {clean(c.path)} {c.status}" for c in found.files),
        ]
        return "\n".join(head) + "\n" + diff
