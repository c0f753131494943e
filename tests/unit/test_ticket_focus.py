"""What a ticket's agents take for their task and their code: the ticket's goal (the user's task
as background) and, when the ticket lists files, the retrieved code of those files."""

from __future__ import annotations

from types import SimpleNamespace

from agentic_lsp.agents.repair import task_text
from agentic_lsp.workflows.state import RetrievalContext, Snippet
from agentic_lsp.workflows.ticket_stage import focused, ticket_task
from agentic_lsp.workflows.tickets import Ticket

STAGE = (
    "Task: Round the cart total and show the currency in labels\n"
    "Workflow: plan_and_implement (Plan first)\nStage: implement"
)
T2 = Ticket(id="T2", goal="Show the currency in price_label", files=("shop/labels.py",))


def _snippet(path: str, symbol: str) -> Snippet:
    return Snippet(path=path, start_line=1, end_line=2, text="x", symbol=symbol)


def test_the_repair_path_reads_the_ticket_goal_as_the_task() -> None:
    context = ticket_task(STAGE, T2)
    ctx = SimpleNamespace(task_context=context, workflow=SimpleNamespace(name="plan_and_implement"))
    assert task_text(ctx) == "Show the currency in price_label"  # type: ignore[arg-type]
    assert context.endswith(
        "part of the plan for: Round the cart total and show the currency in labels"
    )
    assert "Stage: implement" in context


def test_a_context_without_the_usual_head_keeps_everything() -> None:
    assert ticket_task("free text", T2) == "Task: Show the currency in price_label\n\nfree text"


def test_retrieval_is_narrowed_to_the_ticket_files_when_it_holds_them() -> None:
    both = RetrievalContext(
        stage="implement",
        files=["shop/cart.py", "shop/labels.py"],
        snippets=[_snippet("shop/cart.py", "total"), _snippet("shop/labels.py", "price_label")],
    )
    narrowed = focused(both, T2)
    assert narrowed is not None and [s.symbol for s in narrowed.snippets] == ["price_label"]
    assert narrowed.files == ["shop/labels.py"]
    other = Ticket(id="T9", goal="Docs", files=("docs/",))
    assert focused(both, other) is both  # none of its files retrieved: everything kept
    assert focused(both, Ticket(id="T1", goal="Anything")) is both
    assert focused(None, T2) is None
