"""Messages from the user to a running agent: queued on the run's :class:`Inbox` and added to
the next model call the run makes (whichever stage and agent makes it), as a user turn.

The run installs its inbox for its whole task (:func:`receiving`); :func:`metered_ainvoke`
(``llm/metering.py``), the one place model calls go through, calls :func:`with_guidance`. A
message is delivered once; its delivery (stage, role, time) is recorded for the report.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage

MAX_MESSAGE_CHARS = 4_000
MAX_QUEUED = 20
HEADER = (
    "Message from the user, sent while you were working. Take it into account in this "
    "reply; it overrides earlier instructions where they conflict:"
)


@dataclass
class UserMessage:
    id: int
    text: str
    sent: float
    status: str = "queued"  # queued | delivered
    delivered: float | None = None
    stage: str = ""
    role: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Inbox:
    """The queue of one run. ``on_change`` hears a message when queued and when delivered."""

    def __init__(self, on_change: Callable[[UserMessage], None] | None = None) -> None:
        self.messages: list[UserMessage] = []
        self.on_change = on_change

    def put(self, text: str) -> UserMessage:
        text = text.strip()
        if not text:
            raise ValueError("the message is empty")
        if len(self.pending()) >= MAX_QUEUED:
            raise ValueError(f"{MAX_QUEUED} messages are already waiting for the next model call")
        message = UserMessage(len(self.messages) + 1, text[:MAX_MESSAGE_CHARS], time.time())
        self.messages.append(message)
        self._changed(message)
        return message

    def pending(self) -> list[UserMessage]:
        return [m for m in self.messages if m.status == "queued"]

    def take(self, stage: str, role: str) -> list[UserMessage]:
        taken = self.pending()
        for message in taken:
            message.status, message.delivered = "delivered", time.time()
            message.stage, message.role = stage, role
            self._changed(message)
        return taken

    def _changed(self, message: UserMessage) -> None:
        if self.on_change is not None:
            self.on_change(message)


_INBOX: ContextVar[Inbox | None] = ContextVar("agentic_inbox", default=None)


@contextmanager
def receiving(inbox: Inbox) -> Iterator[Inbox]:
    token = _INBOX.set(inbox)
    try:
        yield inbox
    finally:
        _INBOX.reset(token)


def with_guidance(messages: Sequence[BaseMessage], stage: str, role: str) -> list[BaseMessage]:
    """``messages`` plus one user turn carrying the queued messages (none queued: unchanged).

    A list is extended in place, so a tool conversation keeps the guidance in its history.
    """
    out = messages if isinstance(messages, list) else list(messages)
    inbox = _INBOX.get()
    if inbox is None or not inbox.pending():
        return out
    taken = inbox.take(stage, role)
    body = "\n\n".join(m.text for m in taken)
    out.append(HumanMessage(f"{HEADER}\n\n{body}"))
    return out
