"""A buffer's text as a persistent rope: an edit costs O(log n) and shares
everything it does not touch, as Sublime's own buffer does (an edit never
copies the document). Immutable, so a snapshot (an undo step) is the rope
itself. Row lookups use the newline counts kept in every node.

A balanced (AVL) tree of leaves of at most ``LEAF`` characters; ``str()``
joins the leaves once per version (cached) for the helpers that read the
whole text.

A text handed in whole (a view filled, a file loaded) is not cut into leaves
up front: it is one node reading that string, split into two balanced halves
(ranges of the same string, nothing copied) the first time an edit or a row
lookup goes inside it. Filling a view with 10 MB therefore costs a newline
count, not 10,000 leaves, and reading it back whole returns the very string.
"""

from __future__ import annotations

LEAF = 1024


class Rope:
    __slots__ = ("_halves", "_joined", "height", "length", "newlines", "source", "start")
    source: str  # the string this node reads, from `start` (a leaf's own text, or a range of a bigger one)
    start: int
    length: int
    newlines: int
    height: int
    _halves: tuple[Rope, Rope] | None  # an inner node's halves; None for a leaf or a range not split yet
    _joined: str | None

    def __init__(self, text: str = "", left: Rope | None = None, right: Rope | None = None) -> None:
        if left is not None and right is not None:
            self.source, self.start, self._joined, self._halves = "", 0, None, (left, right)
            self.length = left.length + right.length
            self.newlines = left.newlines + right.newlines
            self.height = 1 + max(left.height, right.height)
        else:
            self._set_range(text, 0, len(text))

    def _set_range(self, source: str, start: int, length: int, newlines: int | None = None) -> None:
        self.source, self.start, self.length, self._halves = source, start, length, None
        self.newlines = source.count("\n", start, start + length) if newlines is None else newlines
        # The height its halves will have once split: balanced over ceil(length / LEAF) leaves.
        self.height = (max(-(-length // LEAF), 1) - 1).bit_length()
        self._joined = source if start == 0 and length == len(source) else None

    @staticmethod
    def _range(source: str, start: int, length: int, newlines: int | None = None) -> Rope:
        node = Rope.__new__(Rope)
        node._set_range(source, start, length, newlines)
        return node

    @staticmethod
    def of(text: str) -> Rope:
        """A balanced rope of ``text`` (split lazily, see above)."""
        return Rope(text) if text else EMPTY

    def __len__(self) -> int:
        return self.length

    def __str__(self) -> str:
        if self._joined is None:
            self._joined = "".join(self._pieces(0, self.length))
        return self._joined

    @property
    def is_leaf(self) -> bool:
        return self._halves is None and self.length <= LEAF

    @property
    def text(self) -> str:
        """A leaf's text."""
        return self.source[self.start : self.start + self.length]

    def children(self) -> tuple[Rope, Rope] | None:
        """A node's two halves (a range is split now); None for a leaf."""
        halves = self._halves
        if halves is None and self.length > LEAF:
            # Left takes the larger half of the leaves, as heights require. Two
            # threads reading at once may both split: the halves are equal, either serves.
            leaves = -(-self.length // LEAF)
            cut = -(-leaves // 2) * LEAF
            left = Rope._range(self.source, self.start, cut)
            right = Rope._range(self.source, self.start + cut, self.length - cut, self.newlines - left.newlines)
            halves = self._halves = (left, right)
        return halves

    # ------------------------------------------------------------ edits
    def replace(self, begin: int, end: int, text: str) -> Rope:
        """The rope with [begin, end) replaced by ``text``."""
        head, rest = _split(self, begin)
        _, tail = _split(rest, end - begin)
        return _join(_join(head, Rope.of(text)), tail)

    # ------------------------------------------------------------ reads
    def substr(self, begin: int, end: int) -> str:
        begin, end = max(begin, 0), min(end, self.length)
        if begin >= end:
            return ""
        if self._joined is not None:
            return self._joined[begin:end]
        return "".join(self._pieces(begin, end))

    def newlines_before(self, point: int) -> int:
        """How many newlines precede ``point`` (its row)."""
        node, count = self, 0
        point = max(0, min(point, self.length))
        while (children := node.children()) is not None:
            left, right = children
            if point <= left.length:
                node = left
            else:
                count += left.newlines
                point -= left.length
                node = right
        return count + node.source.count("\n", node.start, node.start + point)

    def row_start(self, row: int) -> int:
        """Where row ``row`` starts (clamped to the last row)."""
        if row <= 0:
            return 0
        row = min(row, self.newlines)
        node, offset = self, 0
        while (children := node.children()) is not None:
            left, right = children
            if row <= left.newlines:
                node = left
            else:
                row -= left.newlines
                offset += left.length
                node = right
        index = node.start - 1
        for _ in range(row):
            index = node.source.index("\n", index + 1)
        return offset + index - node.start + 1

    def _pieces(self, begin: int, end: int) -> list[str]:
        """The text of [begin, end), in order, read from the fewest nodes: a
        node that holds its text whole (a leaf, a range, split or not, a joined
        version) is not descended into."""
        out: list[str] = []
        stack: list[tuple[Rope, int]] = [(self, 0)]
        while stack:
            node, offset = stack.pop()
            if offset >= end or offset + node.length <= begin:
                continue
            halves = node._halves
            if halves is None or node._joined is not None or node.source:
                low, high = max(begin - offset, 0), min(end - offset, node.length)
                if node._joined is not None:
                    out.append(node._joined[low:high])
                else:
                    out.append(node.source[node.start + low : node.start + high])
                continue
            stack.append((halves[1], offset + halves[0].length))
            stack.append((halves[0], offset))
        return out


EMPTY = Rope()


def changed(before: Rope, after: Rope) -> bool:
    """The two texts differ (read whole only when their lengths are equal)."""
    return before is not after and (len(before) != len(after) or str(before) != str(after))


def _split(rope: Rope, index: int) -> tuple[Rope, Rope]:
    if index <= 0:
        return EMPTY, rope
    if index >= rope.length:
        return rope, EMPTY
    children = rope.children()
    if children is None:
        return Rope(rope.text[:index]), Rope(rope.text[index:])
    left, right = children
    if index < left.length:
        head, tail = _split(left, index)
        return head, _join(tail, right)
    head, tail = _split(right, index - left.length)
    return _join(left, head), tail


def _join(a: Rope, b: Rope) -> Rope:
    """``a`` then ``b``, balanced (an AVL join: O(difference of heights))."""
    if not a.length:
        return b
    if not b.length:
        return a
    if a.is_leaf and b.is_leaf and a.length + b.length <= LEAF:
        return Rope(a.text + b.text)
    if a.height > b.height + 1 and (halves := a.children()) is not None:
        return _rebalance(halves[0], _join(halves[1], b))
    if b.height > a.height + 1 and (halves := b.children()) is not None:
        return _rebalance(_join(a, halves[0]), halves[1])
    return Rope("", a, b)


def _rebalance(left: Rope, right: Rope) -> Rope:
    """A node of two trees whose heights differ by at most two, rotated to balance."""
    if left.height > right.height + 1 and (outer := left.children()) is not None:
        if outer[0].height >= outer[1].height:
            return Rope("", outer[0], Rope("", outer[1], right))
        inner = outer[1].children()
        assert inner is not None
        return Rope("", Rope("", outer[0], inner[0]), Rope("", inner[1], right))
    if right.height > left.height + 1 and (outer := right.children()) is not None:
        if outer[1].height >= outer[0].height:
            return Rope("", Rope("", left, outer[0]), outer[1])
        inner = outer[0].children()
        assert inner is not None
        return Rope("", Rope("", left, inner[0]), Rope("", inner[1], outer[1]))
    return Rope("", left, right)
