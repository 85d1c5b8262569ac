"""Sublime's flat symbol list as the tree an agent reads: LSP kind names,
ranges of whole definitions, children nested in their parents.

Sublime gives a symbol's name region only; a definition's extent is taken
from indentation: it runs from its line to the last following line indented
deeper (blank lines and a closing bracket at its own indentation included),
which fits Python and formatted brace languages alike.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..files.text_positions import Lines, Position, Range

# LSP SymbolKind names that Sublime's kind descriptions may already be.
LSP_KINDS = frozenset({
    "File", "Module", "Namespace", "Package", "Class", "Method", "Property", "Field", "Constructor", "Enum",
    "Interface", "Function", "Variable", "Constant", "String", "Number", "Boolean", "Array", "Object", "Key",
    "Null", "EnumMember", "Struct", "Event", "Operator", "TypeParameter",
})
# Sublime's KindId values (sublime.KindId) to the nearest LSP kind.
KIND_IDS = {1: "Key", 2: "Class", 3: "Function", 4: "Namespace", 5: "Key", 6: "String", 7: "Variable"}
CLOSERS = (")", "]", "}")


def lsp_kind(kind_id: int, description: str) -> str:
    if description in LSP_KINDS:
        return description
    return KIND_IDS.get(kind_id, "Variable")


class FlatSymbol(NamedTuple):  # a tuple: made by the thousand for one outline
    name: str
    kind: str  # an LSP kind name
    begin: int  # the name's offsets in the text
    end: int


Span = tuple[int, int, int, int]  # 1-based start line and character, end line and character


def _span_json(span: Span) -> dict[str, Any]:
    return {"start": {"line": span[0], "character": span[1]}, "end": {"line": span[2], "character": span[3]}}


@dataclass(slots=True)
class SymbolNode:
    """A definition, its places kept as plain numbers: an outline of a large
    file makes thousands, and `Range`s (built on demand) cost six objects each."""

    name: str
    kind: str
    span: Span  # the whole definition
    name_span: Span  # the name
    children: list[SymbolNode] = field(default_factory=list)

    @property
    def range(self) -> Range:
        return _range(self.span)

    @property
    def selection(self) -> Range:
        return _range(self.name_span)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "range": _span_json(self.span),
            "selectionRange": _span_json(self.name_span),
            "children": [child.to_json() for child in self.children],
        }


def _range(span: Span) -> Range:
    return Range(Position(span[0], span[1]), Position(span[2], span[3]))


class _Shape:
    """Each line's indentation (None when blank) and whether it opens with a
    closing bracket: measured once per text, read for every symbol."""

    def __init__(self, lines: Lines) -> None:
        # One split and comprehensions: an IDE tool outlines a 5,000-line file per call.
        rows = lines.text.split("\n")
        unindented = [row.lstrip(" \t") for row in rows]
        self.indents: list[int | None] = [
            None if not rest or rest.isspace() else len(row) - len(rest) for row, rest in zip(rows, unindented, strict=True)
        ]
        self.closes: list[bool] = [rest.startswith(CLOSERS) for rest in unindented]

    def last_row(self, row: int) -> int:
        """The definition on `row` runs to the last following line indented
        deeper (blank lines between, a closing bracket at its level included)."""
        base = self.indents[row] or 0
        last = row
        for following in range(row + 1, len(self.indents)):
            indent = self.indents[following]
            if indent is None:
                continue
            if indent > base or (indent == base and self.closes[following]):
                last = following
                continue
            break
        return last


def definition_rows(text: str, row: int) -> tuple[int, int]:
    """The 0-based first and last rows of the definition that starts on `row`."""
    return row, _Shape(Lines(text)).last_row(row)


def symbol_tree(text: str, symbols: list[FlatSymbol]) -> list[SymbolNode]:
    lines = Lines(text)
    starts = lines.starts
    shape = _Shape(lines)
    roots: list[SymbolNode] = []
    stack: list[tuple[SymbolNode, int]] = []  # (node, its last row, 0-based)
    for symbol in sorted(symbols, key=lambda s: s.begin):
        row = bisect.bisect_right(starts, symbol.begin) - 1
        end_row = bisect.bisect_right(starts, symbol.end, row) - 1
        last = shape.last_row(row)
        span = (row + 1, (shape.indents[row] or 0) + 1, last + 1, len(lines.line(last)) + 1)
        name_span = (row + 1, symbol.begin - starts[row] + 1, end_row + 1, symbol.end - starts[end_row] + 1)
        while stack and stack[-1][1] < row:
            stack.pop()
        parent = stack[-1][0] if stack else None
        kind = "Method" if symbol.kind == "Function" and parent is not None and parent.kind == "Class" else symbol.kind
        node = SymbolNode(symbol.name, kind, span, name_span)
        (parent.children if parent is not None else roots).append(node)
        stack.append((node, last))
    return roots


def word_at(text: str, offset: int) -> tuple[int, int] | None:
    """The identifier touching `offset`, as (begin, end); None if there is none."""
    def is_word(char: str) -> bool:
        return char.isalnum() or char in "_$"

    begin = offset
    while begin > 0 and is_word(text[begin - 1]):
        begin -= 1
    end = offset
    while end < len(text) and is_word(text[end]):
        end += 1
    return (begin, end) if end > begin else None
