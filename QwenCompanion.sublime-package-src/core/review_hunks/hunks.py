"""The hunks between a file's text before and its text now, each kept or
undone on its own. Pure: no editor, no disk.

Texts are split into lines with their endings kept, so reversing a hunk
gives back the exact text (CRLF, a last line without a newline). A hunk
holds the lines it covers on both sides, with up to `CONTEXT` equal lines
around its changes; changes closer than twice that are one hunk (as a
unified diff groups them). Undoing a hunk is refused when the lines it
covers in the text now (its context included) are not the ones it was
made from: what the user typed or saved since is never written over."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

CONTEXT = 3
# A changed middle this large on both sides is not diffed line by line
# (difflib is quadratic there): it is one hunk, bounded in time.
DIFF_LINES_BOUND = 20_000


class Stale(Exception):
    """The lines a hunk covers changed since it was made: nothing was changed."""


@dataclass(frozen=True)
class Hunk:
    old_start: int  # 0-based line of the text before
    old_lines: tuple[str, ...]  # the lines it covers there (endings kept)
    new_start: int  # 0-based line of the text now
    new_lines: tuple[str, ...]
    rows: tuple[tuple[str, str], ...]  # (" ", "-" or "+", the line) in the order a diff shows them

    @property
    def added(self) -> int:
        return sum(1 for tag, _ in self.rows if tag == "+")

    @property
    def removed(self) -> int:
        return sum(1 for tag, _ in self.rows if tag == "-")

    @property
    def first_changed_line(self) -> int:
        """The 0-based line of the text now where its change starts (its first context line skipped)."""
        lead = next((index for index, (tag, _) in enumerate(self.rows) if tag != " "), 0)
        return self.new_start + lead


def lines_of(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _common_head(one: list[str], other: list[str]) -> int:
    """How many lines both start with."""
    shorter = min(len(one), len(other))
    count = 0
    while count < shorter and one[count] == other[count]:
        count += 1
    return count


def _common_tail(one: list[str], other: list[str], head: int) -> int:
    """How many lines both end with, none of the first `head` counted."""
    most = min(len(one), len(other)) - head
    count = 0
    while count < most and one[len(one) - 1 - count] == other[len(other) - 1 - count]:
        count += 1
    return count


def _changes(old: list[str], new: list[str]) -> list[tuple[int, int, int, int]]:
    """The (i1, i2, j1, j2) of every change from `old` to `new`; the common head
    and tail cut first, so a small edit of a large file costs little."""
    head = _common_head(old, new)
    tail = _common_tail(old, new, head)
    old_middle, new_middle = old[head : len(old) - tail], new[head : len(new) - tail]
    if not old_middle and not new_middle:
        return []
    if len(old_middle) > DIFF_LINES_BOUND and len(new_middle) > DIFF_LINES_BOUND:
        return [(head, len(old) - tail, head, len(new) - tail)]
    matcher = difflib.SequenceMatcher(None, old_middle, new_middle, autojunk=False)
    return [(head + i1, head + i2, head + j1, head + j2)
            for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def diff_hunks(before: str, now: str, context: int = CONTEXT, limit: int | None = None) -> list[Hunk]:
    """The hunks from `before` to `now` (at most `limit`)."""
    old, new = lines_of(before), lines_of(now)
    groups: list[list[tuple[int, int, int, int]]] = []
    for change in _changes(old, new):
        if groups and change[0] - groups[-1][-1][1] <= 2 * context:
            groups[-1].append(change)
        else:
            if limit is not None and len(groups) >= limit:
                break
            groups.append([change])
    return [_hunk(old, new, group, context) for group in groups]


def _hunk(old: list[str], new: list[str], group: list[tuple[int, int, int, int]], context: int) -> Hunk:
    first, last = group[0], group[-1]
    lead = min(context, first[0])  # the equal lines before it are as many on both sides
    trail = min(context, len(old) - last[1])
    old_start, new_start = first[0] - lead, first[2] - lead
    rows: list[tuple[str, str]] = [(" ", line) for line in old[old_start : first[0]]]
    for index, (i1, i2, j1, j2) in enumerate(group):
        if index:
            rows += [(" ", line) for line in old[group[index - 1][1] : i1]]
        rows += [("-", line) for line in old[i1:i2]]
        rows += [("+", line) for line in new[j1:j2]]
    rows += [(" ", line) for line in old[last[1] : last[1] + trail]]
    return Hunk(old_start, tuple(old[old_start : last[1] + trail]), new_start,
                tuple(new[new_start : last[3] + trail]), tuple(rows))


def _position(actual: list[str], expected: list[str], start: int, covered: int) -> int | None:
    """Where lines `start`…`start + covered` of `expected` stand in `actual`,
    when `actual` differs from it only above or only below them; else None."""
    if actual == expected:  # compared in C: the usual case, cheap for a large file
        return start
    head = _common_head(actual, expected)
    if head >= start + covered:
        return start
    tail = _common_tail(actual, expected, head)
    if start >= len(expected) - tail:
        return start + len(actual) - len(expected)
    return None


def undo_hunk(actual: str, expected: str, hunk: Hunk) -> str:
    """The text `actual` (what the file or view holds now) with `hunk` alone
    reversed. `expected` is the text the hunk was made from; edits the user
    made since above or below the hunk are kept; `Stale` when any line the
    hunk covers changed."""
    actual_lines = lines_of(actual)
    at = _position(actual_lines, lines_of(expected), hunk.new_start, len(hunk.new_lines))
    if at is None or tuple(actual_lines[at : at + len(hunk.new_lines)]) != hunk.new_lines:
        raise Stale("its lines changed since the review was made; nothing was changed")
    return "".join(actual_lines[:at]) + "".join(hunk.old_lines) + "".join(actual_lines[at + len(hunk.new_lines) :])


def keep_hunk(before: str, hunk: Hunk) -> str:
    """The text before with `hunk` taken into it: what the rest is compared with once it is kept."""
    old = lines_of(before)
    return "".join(old[: hunk.old_start]) + "".join(hunk.new_lines) + "".join(old[hunk.old_start + len(hunk.old_lines) :])
