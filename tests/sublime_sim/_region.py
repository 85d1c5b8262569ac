"""``Region`` plus the selection and edit-tracking arithmetic of the buffer.

Internally the application keeps regions as ``(a, b)`` tuples (as Sublime's
C++ side keeps them apart from the Python wrapper); ``Region`` is the
public value type.
"""

from __future__ import annotations

from collections.abc import Iterator

Span = tuple[int, int]


class Region:
    """A singular selection region; ``b`` may be before ``a``."""

    def __init__(self, a: int, b: int | None = None, xpos: float = -1) -> None:
        self.a = a
        self.b = a if b is None else b
        self.xpos = xpos

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.begin(), self.end()))

    def __str__(self) -> str:
        return f"({self.a}, {self.b})"

    def __repr__(self) -> str:
        if self.xpos == -1:
            return f"Region({self.a}, {self.b})"
        return f"Region({self.a}, {self.b}, xpos={self.xpos})"

    def __len__(self) -> int:
        return self.size()

    def __eq__(self, rhs: object) -> bool:
        return isinstance(rhs, Region) and self.a == rhs.a and self.b == rhs.b

    # Defining __eq__ makes Region unhashable, as in Sublime.
    __hash__ = None  # type: ignore[assignment]

    def __lt__(self, rhs: Region) -> bool:
        lb, rb = self.begin(), rhs.begin()
        return lb < rb or (lb == rb and self.end() < rhs.end())

    def __contains__(self, v: Region | int) -> bool:
        if isinstance(v, Region):
            return self.begin() <= v.begin() and v.end() <= self.end()
        return self.begin() <= v <= self.end()

    def to_tuple(self) -> tuple[int, int]:
        return (self.a, self.b)

    def empty(self) -> bool:
        return self.a == self.b

    def begin(self) -> int:
        return min(self.a, self.b)

    def end(self) -> int:
        return max(self.a, self.b)

    def size(self) -> int:
        return abs(self.a - self.b)

    def contains(self, x: Region | int) -> bool:
        return x in self

    def cover(self, region: Region) -> Region:
        a = min(self.begin(), region.begin())
        b = max(self.end(), region.end())
        return Region(a, b) if self.a <= self.b else Region(b, a)

    def intersection(self, region: Region) -> Region:
        if self.end() <= region.begin() or region.end() <= self.begin():
            return Region(0)
        return Region(max(self.begin(), region.begin()), min(self.end(), region.end()))

    def intersects(self, region: Region) -> bool:
        lb, le, rb, re_ = self.begin(), self.end(), region.begin(), region.end()
        return (lb == rb and le == re_) or (lb < re_ and rb < le)


def span_of(x: Region | int) -> Span:
    return (x.a, x.b) if isinstance(x, Region) else (int(x), int(x))


def _touches(x: Span, y: Span) -> bool:
    xb, xe, yb, ye = min(x), max(x), min(y), max(y)
    if xb == xe and yb == ye:
        return xb == yb
    # Overlapping or adjacent regions merge, as Sublime's selection does.
    return xb <= ye and yb <= xe


def selection_add(regions: list[Span], new: Span) -> list[Span]:
    """Add ``new`` keeping the list sorted and merging touching regions."""
    begin, end = min(new), max(new)
    forward = new[0] <= new[1]
    direction_from_new = new[0] != new[1]
    kept: list[Span] = []
    for r in regions:
        if _touches(r, (begin, end)):
            if not direction_from_new and r[0] != r[1]:
                forward, direction_from_new = r[0] <= r[1], True
            begin, end = min(begin, *r), max(end, *r)
        else:
            kept.append(r)
    kept.append((begin, end) if forward else (end, begin))
    kept.sort(key=lambda s: (min(s), max(s)))
    return kept


def selection_subtract(regions: list[Span], sub: Span) -> list[Span]:
    sb, se = min(sub), max(sub)
    out: list[Span] = []
    for r in regions:
        b, e = min(r), max(r)
        if b == e:
            inside = (sb < b < se) or (sb == se == b)
            if not inside:
                out.append(r)
            continue
        if e <= sb or b >= se:
            out.append(r)
            continue
        if b < sb:
            out.append((b, sb) if r[0] <= r[1] else (sb, b))
        if se < e:
            out.append((se, e) if r[0] <= r[1] else (e, se))
    return out


def adjust_point(p: int, pos: int, removed: int, inserted: int, right: bool) -> int:
    """Where ``p`` lands after replacing [pos, pos+removed) by ``inserted`` chars.

    ``right`` points (carets, region starts) are pushed past text inserted at
    them; left points (region ends) stay, so regions do not grow at their edges.
    """
    end = pos + removed
    if p < pos:
        return p
    if p == pos:
        return pos + inserted if right else pos
    if p >= end:
        return p - removed + inserted
    return pos + inserted if right else pos


def adjust_span(s: Span, pos: int, removed: int, inserted: int) -> Span:
    a, b = s
    if a == b:
        p = adjust_point(a, pos, removed, inserted, True)
        return (p, p)
    lo, hi = min(a, b), max(a, b)
    nlo = adjust_point(lo, pos, removed, inserted, True)
    nhi = max(adjust_point(hi, pos, removed, inserted, False), nlo)
    return (nlo, nhi) if a <= b else (nhi, nlo)
