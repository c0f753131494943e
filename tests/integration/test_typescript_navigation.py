"""Definitions and references from the real typescript-language-server through the server pool
(``scripts/install-typescript-server.sh`` installs it), and the missing-server answer.

The fixture is one where the name-based answer is wrong: two classes define ``save``, and
``Cart`` is re-exported as ``Basket`` (``export { Cart as Basket } from``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentic_lsp.config import NavigationSettings
from agentic_lsp.navigation.server_pool import (
    ServerFailed,
    ServerPool,
    configured_commands,
    language_id,
    resolve_command,
)

needs_tsserver = pytest.mark.skipif(
    resolve_command(["typescript-language-server"]) is None,
    reason="typescript-language-server is not installed (scripts/install-typescript-server.sh)",
)
DEFINITION = "textDocument/definition"
REFERENCES = "textDocument/references"

MODELS = """\
export class Cart {
  save(): string {
    return "cart";
  }
}

export class Order {
  save(): string {
    return "order";
  }
}
"""
INDEX = 'export { Cart as Basket } from "./models";\n'
USE = """\
import { Cart, Order } from "./models";
import { Basket } from "./index";

export function keep(): string {
  const c = new Cart();
  return c.save();
}

export function other(): string {
  const o = new Order();
  o.save();
  return o.save();
}

export function viaAlias(): string {
  return new Basket().save();
}
"""
VIEW = 'import { Order } from "./models";\n\nexport const label = new Order().save();\n'
CONFIG = {
    "compilerOptions": {"strict": True, "allowJs": True, "jsx": "preserve", "module": "commonjs"},
    "include": ["src"],
}


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "web"
    (root / "src").mkdir(parents=True)
    (root / "tsconfig.json").write_text(json.dumps(CONFIG))
    (root / "src" / "models.ts").write_text(MODELS)
    (root / "src" / "index.ts").write_text(INDEX)
    (root / "src" / "use.ts").write_text(USE)
    (root / "src" / "view.jsx").write_text(VIEW)
    return root


@pytest.fixture
async def pool(tmp_path: Path) -> AsyncIterator[ServerPool]:
    buffers: dict[str, str] = {}
    servers = ServerPool(workspace(tmp_path), NavigationSettings(timeout_s=60), lambda: buffers)
    try:
        yield servers
    finally:
        await servers.close()


def test_each_file_is_sent_with_its_own_language_id() -> None:
    assert [language_id(p) for p in ("a.ts", "b.tsx", "c.js", "d.jsx", "e.mjs", "f.py")] == [
        "typescript", "typescriptreact", "javascript", "javascriptreact", "javascript", "python"
    ]  # fmt: skip
    assert configured_commands(NavigationSettings())["typescript"] == [
        "typescript-language-server",
        "--stdio",
    ]


@needs_tsserver
async def test_references_of_one_method_leave_the_same_named_method_out(
    pool: ServerPool,
) -> None:
    # Cart.save, asked at its definition (src/models.ts line 2, column 2)
    name, found = await pool.ask(REFERENCES, "src/models.ts", 2, 2, context={
        "includeDeclaration": True
    })  # fmt: skip
    assert name == "typescript-language-server"
    places = {(loc.path, loc.line) for loc in found}
    assert {("src/models.ts", 2), ("src/use.ts", 6), ("src/use.ts", 16)} <= places
    assert not places & {("src/models.ts", 8), ("src/use.ts", 11), ("src/use.ts", 12)}
    assert not any(loc.path == "src/view.jsx" for loc in found)
    definition = next(loc for loc in found if loc.line == 2)
    assert (definition.col, definition.end_col) == (2, 6)


@needs_tsserver
async def test_definitions_follow_types_and_a_renaming_reexport(pool: ServerPool) -> None:
    _, found = await pool.ask(DEFINITION, "src/use.ts", 11, 4)  # o.save()
    assert [(loc.path, loc.line) for loc in found] == [("src/models.ts", 8)]
    _, found = await pool.ask(DEFINITION, "src/use.ts", 16, 22)  # new Basket().save()
    assert [(loc.path, loc.line) for loc in found] == [("src/models.ts", 2)]
    _, found = await pool.ask(DEFINITION, "src/view.jsx", 3, 35)  # a .jsx file, same server
    assert [(loc.path, loc.line) for loc in found] == [("src/models.ts", 8)]
    server, _ = pool.server_for("src/view.jsx")
    assert server is pool.server_for("src/use.ts")[0] and server is not None
    assert server.starts == 1


@needs_tsserver
async def test_an_unsaved_buffer_is_what_the_server_sees(tmp_path: Path) -> None:
    buffers = {"src/use.ts": USE.replace("new Order()", "new Cart()")}
    pool = ServerPool(workspace(tmp_path), NavigationSettings(timeout_s=60), lambda: buffers)
    try:
        _, found = await pool.ask(DEFINITION, "src/use.ts", 11, 4)
        assert [(loc.path, loc.line) for loc in found] == [("src/models.ts", 2)]
    finally:
        await pool.close()


async def test_a_missing_server_says_how_to_install_it(tmp_path: Path) -> None:
    settings = NavigationSettings(typescript_server=["no-such-ts-server-x", "--stdio"])
    pool = ServerPool(workspace(tmp_path), settings, dict)
    with pytest.raises(ServerFailed, match=r"no-such-ts-server-x is not installed .*npm install"):
        await pool.ask(DEFINITION, "src/use.ts", 11, 4)
    off = ServerPool(workspace(tmp_path / "b"), NavigationSettings(typescript_server=[]), dict)
    with pytest.raises(ServerFailed, match="no language server is configured for typescript"):
        await off.ask(DEFINITION, "src/view.jsx", 3, 35)


@needs_tsserver
async def test_a_rename_is_a_changeset_of_the_right_method_only(pool: ServerPool) -> None:
    from agentic_lsp.changes.change_service import ChangeService
    from agentic_lsp.index.discovery.secrets import is_secret_path
    from agentic_lsp.navigation.rename import rename_changeset

    changes = ChangeService(pool.root, pool.root.parent / "store", dict)
    result = await rename_changeset(
        pool, changes.propose, "src/use.ts", 6, 12, "persist", is_secret_path
    )
    assert result.plan.old_name == "save" and result.plan.server == "typescript-language-server"
    by_path = {c.path: c.proposed for c in result.changeset.files}
    assert by_path["src/use.ts"] == USE.replace("c.save()", "c.persist()").replace(
        "new Basket().save()", "new Basket().persist()"
    )
    cart = '  save(): string {\n    return "cart"'
    assert by_path["src/models.ts"] == MODELS.replace(cart, cart.replace("save", "persist"))
    assert set(by_path) == {"src/use.ts", "src/models.ts"}  # view.jsx uses Order.save
    assert (pool.root / "src" / "use.ts").read_text() == USE
