"""Call hierarchy over stdio from the real server: prepare at a call or inside a function,
incoming and outgoing calls from the call graph, same-named methods kept apart, an unsaved
buffer followed, ambiguous calls listing every candidate."""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from lsp_harness import Editor, isolated_env, start_editor, stop_editor, uri
from lsprotocol import types as t

pytestmark = pytest.mark.asyncio(loop_scope="module")

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "call_graph"
USE = """from shop.models import Cart, Order


def checkout(cart: Cart, order: Order):
    cart.save()
    order.save()
    return Cart().check()


def either(thing):
    return thing.check()
"""


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def editor(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Editor]:
    home = tmp_path_factory.mktemp("hierarchy")
    root = home / "proj"
    shutil.copytree(FIXTURE, root)
    (root / "use.py").write_text(USE)
    editor = await start_editor(root, {"cache_dir": str(home / "index")}, env=isolated_env(home))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status = await editor.command("agentic.indexStatus", {})
        if status["roots"][0]["files"] >= 5:
            break
        await asyncio.sleep(0.2)
    yield editor
    assert await stop_editor(editor) == 0


async def _prepare(
    editor: Editor, rel: str, line: int, character: int
) -> list[t.CallHierarchyItem]:
    params = t.CallHierarchyPrepareParams(
        t.TextDocumentIdentifier(uri(editor.root / rel)), t.Position(line, character)
    )
    return await editor.client.text_document_prepare_call_hierarchy_async(params) or []


def _line_of(text: str, needle: str) -> tuple[int, int]:
    for number, line in enumerate(text.split("\n")):
        if needle in line:
            return number, line.index(needle)
    raise AssertionError(needle)


async def test_capability_advertised(editor: Editor) -> None:
    assert editor.capabilities is not None and editor.capabilities.call_hierarchy_provider


async def test_prepare_at_a_call_names_the_method_that_call_reaches(editor: Editor) -> None:
    line, col = _line_of(USE, "order.save()")
    items = await _prepare(editor, "use.py", line, col + len("order."))
    # `order.save()` is a parameter's method: no type inference, so every same-named method
    # is a candidate, and the item says the call is ambiguous
    assert {i.detail.split(" — ")[0] for i in items if i.detail} == {"Cart.save", "Order.save"}
    assert all("ambiguous" in (i.detail or "") for i in items)
    line, col = _line_of(USE, "Cart().check()")
    [item] = await _prepare(editor, "use.py", line, col + len("Cart()."))
    assert item.name == "check" and item.detail == "Cart.check"
    assert item.uri == uri(editor.root / "shop" / "models.py")
    models = (editor.root / "shop" / "models.py").read_text()
    assert item.selection_range.start.line == _line_of(models, "def check")[0]


async def test_incoming_calls_keep_same_named_methods_apart(editor: Editor) -> None:
    models = (editor.root / "shop" / "models.py").read_text()
    line, _ = _line_of(models, "def check")  # Cart.check: the first one
    [cart_check] = await _prepare(editor, "shop/models.py", line + 1, 8)  # inside its body
    assert cart_check.detail == "Cart.check"
    incoming = await editor.client.call_hierarchy_incoming_calls_async(
        t.CallHierarchyIncomingCallsParams(cart_check)
    )
    callers = {(c.from_.detail or "").split(" — ")[0] for c in incoming or []}
    assert "Cart.save" in callers and "checkout" in callers
    assert "Order.save" not in callers  # self.check() in Order reaches Order.check only
    [from_checkout] = [c for c in incoming or [] if c.from_.name == "checkout"]
    use_line, use_col = _line_of(USE, "Cart().check()")
    [call] = from_checkout.from_ranges
    assert call.start == t.Position(use_line, use_col + len("Cart()."))
    assert call.end.character - call.start.character == len("check")


async def test_outgoing_calls_and_an_unsaved_buffer(editor: Editor) -> None:
    [main] = await _prepare(editor, "app.py", 3, 4)  # on `def main`: inside main
    assert main.name == "main"
    [run] = await _prepare(editor, "app.py", 4, 4)  # on the call `start(3)`: what it reaches
    assert run.name == "run" and run.uri.endswith("shop/core.py")
    outgoing = await editor.client.call_hierarchy_outgoing_calls_async(
        t.CallHierarchyOutgoingCallsParams(main)
    )
    reached = {o.to.name for o in outgoing or []}
    assert {"run", "pick"} <= reached  # `start` is shop's re-export of core.run
    # the user types a new call into main without saving: the next answer follows the buffer
    text = (
        (editor.root / "app.py")
        .read_text()
        .replace("    start(3)\n", "    start(3)\n    helper_x()\n")
    )
    text += "\n\ndef helper_x():\n    return 1\n"
    editor.open("app.py", text)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        [main] = await _prepare(editor, "app.py", 3, 4)
        outgoing = await editor.client.call_hierarchy_outgoing_calls_async(
            t.CallHierarchyOutgoingCallsParams(main)
        )
        if "helper_x" in {o.to.name for o in outgoing or []}:
            break
        await asyncio.sleep(0.2)
    assert "helper_x" in {o.to.name for o in outgoing or []}
    assert (editor.root / "app.py").read_text().count("helper_x") == 0  # nothing written


async def test_outside_every_function_and_outside_the_workspace(editor: Editor) -> None:
    [module] = await _prepare(editor, "app.py", 0, 0)  # the import line: the module's top level
    assert module.kind == t.SymbolKind.Module
    outside = t.CallHierarchyPrepareParams(
        t.TextDocumentIdentifier("file:///nowhere/x.py"), t.Position(0, 0)
    )
    assert await editor.client.text_document_prepare_call_hierarchy_async(outside) is None
