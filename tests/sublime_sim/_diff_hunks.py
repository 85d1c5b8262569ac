"""Sublime's incremental diff: the hunks between a buffer and its reference.

Facts from Sublime's documentation ("Incremental Diff", API reference): the
diff is line based, tracked per buffer (clones share it) against the
reference document (``View.set_reference_document``); the gutter marks
added, modified and deleted lines; Goto ▶ Next/Previous Modification jumps
between hunks, Toggle Hunk Diff shows a hunk's original text inline and
Revert Hunk puts the original text back as one undo step. The sim has a
reference only where the API set one (it does not diff against the file on
disk or git's HEAD).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass


@dataclass(frozen=True)
class Hunk:
    """Lines of the buffer that differ from the reference.

    ``begin``/``end``: the buffer points spanning the changed lines (their
    final newline included); equal for lines only deleted. ``original``: the
    reference's text those lines replace."""

    begin: int
    end: int
    original: str

    def touches(self, lo: int, hi: int) -> bool:
        """Whether a selection over ``[lo, hi]`` (whole lines) meets the hunk."""
        if self.begin == self.end:
            return lo <= self.begin <= hi
        return lo < self.end and hi >= self.begin


def _line_starts(lines: list[str]) -> list[int]:
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    return starts


def hunks(reference: str, text: str) -> list[Hunk]:
    """The buffer's hunks against ``reference``, first to last."""
    before, after = reference.splitlines(keepends=True), text.splitlines(keepends=True)
    starts = _line_starts(after)
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    return [
        Hunk(starts[j1], starts[j2], "".join(before[i1:i2]))
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


def line_span(text: str, a: int, b: int) -> tuple[int, int]:
    """The whole lines a selection ``(a, b)`` covers: (first line's start, last line's end)."""
    lo, hi = min(a, b), max(a, b)
    start = text.rfind("\n", 0, lo) + 1
    end = text.find("\n", hi)
    return start, len(text) if end < 0 else end
