"""A chat's asides (qwen's `/btw`): questions about the conversation answered
beside it, never part of it. qwen answers each side question on its own (a
fork that sees the session's history), so a follow-up carries the thread's
earlier questions and answers in its text, the newest first to be kept,
within qwen's limit on a question."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from .qwen_calls import MAX_QUESTION_CHARS

KEPT = 20  # the newest asides a chat keeps
PENDING = "(answering…)"
FOLLOW_UP_HEAD = "Earlier side questions in this aside thread, and their answers:\n\n"
FOLLOW_UP_TAIL = "\n\nThe new side question:\n"


@dataclass
class Aside:
    question: str
    answer: str | None = None  # None: not answered yet


class AsideThread:
    """The newest `KEPT` asides of one chat (any thread)."""

    def __init__(self) -> None:
        self._asides: list[Aside] = []
        self._lock = threading.Lock()

    def ask(self, question: str) -> tuple[Aside, str]:
        """Add `question`; it and the text to send qwen (with the thread so far)."""
        with self._lock:
            earlier = [a for a in self._asides if a.answer is not None]
            aside = Aside(question)
            self._asides.append(aside)
            del self._asides[:-KEPT]
        return aside, follow_up(earlier, question)

    def answered(self, aside: Aside, answer: str) -> None:
        with self._lock:
            aside.answer = answer

    def asides(self) -> list[Aside]:
        with self._lock:
            return [Aside(a.question, a.answer) for a in self._asides]

    def text(self) -> str:
        """What the aside tab shows: each question and its answer, newest last."""
        return "\n\n".join(f"## Aside: {a.question}\n\n{a.answer if a.answer is not None else PENDING}"
                           for a in self.asides()) + "\n"


def follow_up(earlier: list[Aside], question: str) -> str:
    """`question`, after as many of the `earlier` asides (newest first kept)
    as fit in qwen's limit on a question; the question alone if none fit."""
    question = question[:MAX_QUESTION_CHARS]
    room = MAX_QUESTION_CHARS - len(question) - len(FOLLOW_UP_HEAD) - len(FOLLOW_UP_TAIL)
    kept: list[str] = []
    for aside in reversed(earlier):
        entry = f"Q: {aside.question}\nA: {aside.answer}\n"
        if len(entry) > room:
            break
        kept.insert(0, entry)
        room -= len(entry)
    return f"{FOLLOW_UP_HEAD}{chr(10).join(kept)}{FOLLOW_UP_TAIL}{question}" if kept else question
