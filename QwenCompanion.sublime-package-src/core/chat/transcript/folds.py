"""Which parts of the transcript fold, decided from the edits alone: each
finished Thinking block, each finished tool call with more than five lines
of output and the details of each turn's usage line fold once, under their
first line (what the user unfolds stays open).

Only the text of each edit is read, never the transcript around it, so an
update costs what it adds however long the chat is."""

from __future__ import annotations

import re

from ..agent.usage import USAGE_HEADER

# A thought's block starts with this line (tool_calls.py writes it); the rules
# here are pure, so the transcript's edits fold on Sublime's main thread
# without importing the protocol's models.
THINKING_HEADER = "▸ Thinking\n"

THOUGHT_END = "\n\n"  # the block after a thought's text (see AgentWorkRenderer)
LONG_OUTPUT = re.compile(r"^[✓✗] .*\n((?:    .*\n){6,})", re.MULTILINE)
USAGE_DETAILS = re.compile("^" + re.escape(USAGE_HEADER) + r".*\n((?:    .*\n)+)", re.MULTILINE)

Fold = tuple[int, int]


class WorkFolds:
    """Follows one transcript view's edits, in order, and says what to fold
    after each. Remembers at most one thought still streaming: where its fold
    starts and, once sent, where its end ("\\n\\n") is."""

    def __init__(self) -> None:
        self._thought_start: int | None = None
        self._thought_end: int | None = None

    def edit(self, offset: int, erase: int, text: str) -> list[Fold]:
        """The folds due once `erase` characters at `offset` became `text`."""
        folds: list[Fold] = []
        self._shift(offset, erase, len(text))
        end = self._thought_end
        if self._thought_start is not None and end is not None and text and offset >= end + len(THOUGHT_END):
            folds.append((self._thought_start, end))  # something follows the thought: it has ended
            self._thought_start = self._thought_end = None
        if self._thought_start is not None and self._thought_end is None and text.startswith(THOUGHT_END) \
                and offset > self._thought_start:
            self._thought_end = offset  # the thought's end block, sent right after its header
        folds.extend(self._thoughts_in(offset, text))
        for match in (*LONG_OUTPUT.finditer(text), *USAGE_DETAILS.finditer(text)):
            folds.append((offset + match.start(1) - 1, offset + match.end(1) - 1))
        return folds

    def _shift(self, offset: int, erase: int, inserted: int) -> None:
        points = [point for point in (self._thought_start, self._thought_end) if point is not None]
        if any(offset <= point < offset + erase for point in points):
            self._thought_start = self._thought_end = None  # its text was replaced (a new chat)
            return
        delta = inserted - erase
        if self._thought_start is not None and self._thought_start >= offset + erase:
            self._thought_start += delta
        if self._thought_end is not None and self._thought_end >= offset + erase:
            self._thought_end += delta  # the thought's text goes in right before its end

    def _thoughts_in(self, offset: int, text: str) -> list[Fold]:
        folds: list[Fold] = []
        index = text.find(THINKING_HEADER)
        while index >= 0:
            start = index + len(THINKING_HEADER) - 1
            end = text.find(THOUGHT_END, start)
            if end < 0 or end + len(THOUGHT_END) >= len(text):
                self._thought_start = offset + start
                self._thought_end = None if end < 0 else offset + end
                return folds
            folds.append((offset + start, offset + end))
            index = text.find(THINKING_HEADER, end)
        return folds
