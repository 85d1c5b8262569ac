"""Pure text helpers behind ``View``: lines, row/column, find, word classes.

Points are offsets in Unicode code points, as in Sublime (a Python ``str``
index is a code point, so no conversion is needed for ``rowcol``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ._constants import FindFlags, PointClassification

DEFAULT_WORD_SEPARATORS = "./\\()\"'-:,.;<>~!@#$%^&*|+=[]{}`~?"


def clamp(pt: int, size: int) -> int:
    return 0 if pt < 0 else min(pt, size)


def line_bounds(text: str, pt: int) -> tuple[int, int]:
    """(start, end) of the line holding ``pt``; ``end`` excludes the newline."""
    pt = clamp(pt, len(text))
    start = text.rfind("\n", 0, pt) + 1
    end = text.find("\n", pt)
    return start, len(text) if end < 0 else end


def full_line_end(text: str, end: int) -> int:
    return end + 1 if end < len(text) and text[end] == "\n" else end


def lines_in(text: str, begin: int, end: int) -> list[tuple[int, int]]:
    """Every line intersecting [begin, end], in order, without newlines."""
    out = []
    pos = clamp(begin, len(text))
    end = clamp(end, len(text))
    while True:
        a, b = line_bounds(text, pos)
        out.append((a, b))
        if b >= end or b >= len(text):
            return out
        pos = b + 1


def rowcol(text: str, pt: int) -> tuple[int, int]:
    pt = clamp(pt, len(text))
    row = text.count("\n", 0, pt)
    return row, pt - (text.rfind("\n", 0, pt) + 1)


def line_start(text: str, row: int) -> tuple[int, int]:
    """(start offset of ``row`` clamped to the last line, that line's end)."""
    start = 0
    for _ in range(max(row, 0)):
        nl = text.find("\n", start)
        if nl < 0:
            break
        start = nl + 1
    end = text.find("\n", start)
    return start, len(text) if end < 0 else end


def _units(s: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(s.encode("utf-8", "surrogatepass"))
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def units_to_chars(line: str, units: int, encoding: str) -> int:
    """Number of code points of ``line`` covering ``units`` code units."""
    count = 0
    for i, ch in enumerate(line):
        if count >= units:
            return i
        count += _units(ch, encoding)
    return len(line) + max(units - count, 0)


def rowcol_units(text: str, pt: int, encoding: str) -> tuple[int, int]:
    row, col = rowcol(text, pt)
    start = clamp(pt, len(text)) - col
    return row, _units(text[start : start + col], encoding)


def text_point(text: str, row: int, col: int, clamp_column: bool, encoding: str | None = None) -> int:
    start, end = line_start(text, row)
    if encoding is not None:
        col = units_to_chars(text[start:end], col, encoding)
    if clamp_column:
        col = min(max(col, 0), end - start)
    return clamp(start + col, len(text))


def code_units(text: str, pt: int | None, encoding: str) -> int:
    return _units(text if pt is None else text[: clamp(pt, len(text))], encoding)


def compile_pattern(pattern: str, flags: int) -> re.Pattern[str]:
    if flags & FindFlags.LITERAL:
        pattern = re.escape(pattern)
    if flags & FindFlags.WHOLEWORD:
        pattern = r"\b(?:" + pattern + r")\b"
    re_flags = re.MULTILINE  # ^ and $ match at line boundaries in Sublime
    if flags & FindFlags.IGNORECASE:
        re_flags |= re.IGNORECASE
    return re.compile(pattern, re_flags)


def find(text: str, pattern: str, start: int, flags: int) -> tuple[int, int]:
    rx = compile_pattern(pattern, flags)
    start = clamp(start, len(text))
    if flags & FindFlags.REVERSE:
        hits = [m for m in rx.finditer(text) if m.end() <= start]
        if not hits and flags & FindFlags.WRAP:
            hits = list(rx.finditer(text))
        return (hits[-1].start(), hits[-1].end()) if hits else (-1, -1)
    m = rx.search(text, start)
    if m is None and flags & FindFlags.WRAP:
        m = rx.search(text, 0)
    return (m.start(), m.end()) if m else (-1, -1)


_FMT = re.compile(r"\$(\d+)|\$\{(\d+)\}|\\(\d)")


def expand_format(m: re.Match[str], fmt: str) -> str:
    """Expand ``$1``, ``${1}`` and ``\\1`` references (Sublime's format syntax)."""

    def sub(ref: re.Match[str]) -> str:
        idx = int(next(g for g in ref.groups() if g is not None))
        return (m.group(idx) or "") if idx <= (m.re.groups or 0) else ""

    return _FMT.sub(sub, fmt)


def find_all(
    text: str,
    pattern: str,
    flags: int,
    fmt: str | None,
    extractions: list[str] | None,
    within: Iterable[tuple[int, int]] | None,
) -> list[tuple[int, int]]:
    rx = compile_pattern(pattern, flags)
    spans = [(0, len(text))] if within is None else sorted(within)
    out = []
    for lo, hi in spans:
        for m in rx.finditer(text, clamp(lo, len(text)), clamp(hi, len(text))):
            out.append((m.start(), m.end()))
            if extractions is not None:
                extractions.append(expand_format(m, fmt) if fmt is not None else m.group(0))
    return out


def _kind(ch: str | None, separators: str) -> str:
    if ch is None or ch == "\n":
        return "eol"
    if ch.isspace():
        return "space"
    return "punct" if ch in separators else "word"


def classify(text: str, pt: int, separators: str = DEFAULT_WORD_SEPARATORS) -> int:
    n = len(text)
    if pt < 0 or pt > n:
        return 0
    before = text[pt - 1] if pt > 0 else None
    after = text[pt] if pt < n else None
    kb, ka = _kind(before, separators), _kind(after, separators)
    c = 0
    if pt == 0 or before == "\n":
        c |= PointClassification.LINE_START
    if pt == n or after == "\n":
        c |= PointClassification.LINE_END
    if c & PointClassification.LINE_START and c & PointClassification.LINE_END:
        c |= PointClassification.EMPTY_LINE
    if ka == "word" and kb != "word":
        c |= PointClassification.WORD_START | PointClassification.SUB_WORD_START
    if kb == "word" and ka != "word":
        c |= PointClassification.WORD_END | PointClassification.SUB_WORD_END
    if ka == "punct" and kb != "punct":
        c |= PointClassification.PUNCTUATION_START
    if kb == "punct" and ka != "punct":
        c |= PointClassification.PUNCTUATION_END
    if before and after and kb == ka == "word":
        if (before.islower() and after.isupper()) or (before == "_" and after != "_"):
            c |= PointClassification.SUB_WORD_START
        if (before.islower() and after.isupper()) or (after == "_" and before != "_"):
            c |= PointClassification.SUB_WORD_END
    return c


def find_by_class(text: str, pt: int, forward: bool, classes: int, separators: str) -> int:
    step = 1 if forward else -1
    p = pt + step
    while 0 <= p <= len(text):
        if classify(text, p, separators) & classes:
            return p
        p += step
    return len(text) if forward else 0


def expand_by_class(text: str, begin: int, end: int, classes: int, separators: str) -> tuple[int, int]:
    left = begin if classify(text, begin, separators) & classes and begin != end else find_by_class(text, begin, False, classes, separators)
    right = end if classify(text, end, separators) & classes and begin != end else find_by_class(text, end, True, classes, separators)
    return left, right


def word_bounds(text: str, begin: int, end: int, separators: str) -> tuple[int, int]:
    """Expand to the run of same-kind characters around the region's ends."""
    n = len(text)
    begin, end = clamp(begin, n), clamp(end, n)
    probe = begin if begin < n and _kind(text[begin], separators) == "word" else max(begin - 1, 0)
    kind = _kind(text[probe] if probe < n else None, separators)
    while begin > 0 and _kind(text[begin - 1], separators) == kind:
        begin -= 1
    while end < n and _kind(text[end], separators) == kind:
        end += 1
    return begin, end
