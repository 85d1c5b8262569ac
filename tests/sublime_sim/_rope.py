"""A buffer's text as a persistent rope: an edit costs O(log n) and shares
everything it does not touch, as Sublime's own buffer does (an edit never
copies the document). Immutable, so a snapshot (an undo step) is the rope
itself. Row lookups use the newline counts kept in every node.

A balanced (AVL) tree of leaves of at most ``LEAF`` characters; ``str()``
joins the leaves once per version (cached) for the helpers that read the
whole text.
"""

from __future__ import annotations

LEAF = 1024


class Rope:
    __slots__ = ("_joined", "height", "left", "length", "newlines", "right", "text")
    text: str
    left: Rope | None
    right: Rope | None
    length: int
    newlines: int
    height: int
    _joined: str | None

    def __init__(self, text: str = "", left: Rope | None = None, right: Rope | None = None) -> None:
        self.text = text
        self.left = left
        self.right = right
        if left is not None and right is not None:
            self.length = left.length + right.length
            self.newlines = left.newlines + right.newlines
            self.height = 1 + max(left.height, right.height)
            self._joined = None
        else:
            self.length = len(text)
            self.newlines = text.count("\n")
            self.height = 0
            self._joined = text

    @staticmethod
    def of(text: str) -> Rope:
        """A balanced rope of ``text``."""
        leaves = [Rope(text[i : i + LEAF]) for i in range(0, len(text), LEAF)] or [EMPTY]
        while len(leaves) > 1:
            pairs = [Rope("", leaves[i], leaves[i + 1]) for i in range(0, len(leaves) - 1, 2)]
            leaves = pairs + ([leaves[-1]] if len(leaves) % 2 else [])
        return leaves[0]

    def __len__(self) -> int:
        return self.length

    def __str__(self) -> str:
        if self._joined is None:
            self._joined = "".join(leaf.text for leaf, _ in self._leaves(0, self.length))
        return self._joined

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
        pieces = self._leaves(begin, end)
        first = pieces[0][1]
        return "".join(leaf.text for leaf, _ in pieces)[begin - first : end - first]

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
        return count + node.text.count("\n", 0, point)

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
        index = -1
        for _ in range(row):
            index = node.text.index("\n", index + 1)
        return offset + index + 1

    def children(self) -> tuple[Rope, Rope] | None:
        """A node's two halves; None for a leaf."""
        return None if self.left is None or self.right is None else (self.left, self.right)

    def _leaves(self, begin: int, end: int) -> list[tuple[Rope, int]]:
        """The leaves overlapping [begin, end) and where each starts, in order."""
        out: list[tuple[Rope, int]] = []
        stack: list[tuple[Rope, int]] = [(self, 0)]
        while stack:
            node, offset = stack.pop()
            if offset >= end or offset + node.length <= begin:
                continue
            if node.left is None or node.right is None:
                out.append((node, offset))
                continue
            stack.append((node.right, offset + node.left.length))
            stack.append((node.left, offset))
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
    if rope.left is None or rope.right is None:
        return Rope(rope.text[:index]), Rope(rope.text[index:])
    if index < rope.left.length:
        head, tail = _split(rope.left, index)
        return head, _join(tail, rope.right)
    head, tail = _split(rope.right, index - rope.left.length)
    return _join(rope.left, head), tail


def _join(a: Rope, b: Rope) -> Rope:
    """``a`` then ``b``, balanced (an AVL join: O(difference of heights))."""
    if not a.length:
        return b
    if not b.length:
        return a
    if a.height == b.height == 0 and a.length + b.length <= LEAF:
        return Rope(a.text + b.text)
    if a.height > b.height + 1 and a.left is not None and a.right is not None:
        return _rebalance(a.left, _join(a.right, b))
    if b.height > a.height + 1 and b.left is not None and b.right is not None:
        return _rebalance(_join(a, b.left), b.right)
    return Rope("", a, b)


def _rebalance(left: Rope, right: Rope) -> Rope:
    """A node of two trees whose heights differ by at most two, rotated to balance."""
    if left.height > right.height + 1 and left.left is not None and left.right is not None:
        if left.left.height >= left.right.height:
            return Rope("", left.left, Rope("", left.right, right))
        inner = left.right
        assert inner.left is not None and inner.right is not None
        return Rope("", Rope("", left.left, inner.left), Rope("", inner.right, right))
    if right.height > left.height + 1 and right.left is not None and right.right is not None:
        if right.right.height >= right.left.height:
            return Rope("", Rope("", left, right.left), right.right)
        inner = right.left
        assert inner.left is not None and inner.right is not None
        return Rope("", Rope("", left, inner.left), Rope("", inner.right, right.right))
    return Rope("", left, right)
