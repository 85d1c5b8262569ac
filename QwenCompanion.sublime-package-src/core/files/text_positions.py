"""Places in a text as people and tools name them: 1-based lines and
characters counted in code points, and the UTF-16 units LSP counts in."""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Position:
    line: int  # 1-based
    character: int  # 1-based, in code points

    def __str__(self) -> str:
        return f"{self.line}:{self.character}"

    def to_json(self) -> dict[str, int]:
        return {"line": self.line, "character": self.character}


@dataclass(frozen=True)
class Range:
    start: Position
    end: Position

    def to_json(self) -> dict[str, Any]:
        return {"start": self.start.to_json(), "end": self.end.to_json()}


def position_of(text: str, offset: int) -> Position:
    """The position of one offset (for many, `Lines` indexes the text once)."""
    line_start = text.rfind("\n", 0, offset) + 1
    return Position(text.count("\n", 0, offset) + 1, offset - line_start + 1)


class Lines:
    """Offsets of a text's lines, for 1-based positions."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0]
        position = text.find("\n")
        while position >= 0:
            self.starts.append(position + 1)
            position = text.find("\n", position + 1)

    def position(self, offset: int) -> Position:
        row = bisect.bisect_right(self.starts, offset) - 1
        return Position(row + 1, offset - self.starts[row] + 1)

    def line(self, row: int) -> str:
        """Line `row` (0-based) without its newline."""
        end = self.starts[row + 1] - 1 if row + 1 < len(self.starts) else len(self.text)
        return self.text[self.starts[row] : end]

    def offset(self, position: Position) -> int:
        """The offset of a 1-based position, kept inside its line."""
        row = min(max(position.line, 1), len(self.starts)) - 1
        return self.starts[row] + min(max(position.character, 1) - 1, len(self.line(row)))


def utf16_units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def code_points(line: str, units: int) -> int:
    """How many code points of `line` the first `units` UTF-16 units cover."""
    count = 0
    for index, char in enumerate(line):
        if count >= units:
            return index
        count += 2 if ord(char) > 0xFFFF else 1
    return len(line) if count >= units else len(line) + (units - count)


def slice_lines(text: str, line: int | None, limit: int | None) -> str:
    """`limit` lines of `text` (newlines as "\\n") from 1-based `line`
    (ACP's fs/read_text_file), found without splitting the whole text."""
    if line is None and limit is None:
        return text
    start = 0
    for _ in range(max((line or 1) - 1, 0)):
        start = text.find("\n", start) + 1
        if start == 0:
            return ""
    if limit is None:
        return text[start:]
    end = start
    for _ in range(max(limit, 0)):
        end = text.find("\n", end) + 1
        if end == 0:
            return text[start:]
    return text[start:end]
