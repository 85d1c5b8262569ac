"""A language server's answers as the IDE tools' answers.

LSP counts lines from 0 and characters in UTF-16 code units; the tools count
both from 1, characters in code points (what the model sees in the text).
Converting a character needs its line's text: `TextOf` gives a file's text,
or None when it cannot be read (then the character is taken as is, which is
right for every line without characters outside the BMP).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..files.text_positions import Lines, Position, code_points, utf16_units
from ..json_types import JsonObject

TextOf = Callable[[str], str | None]

SYMBOL_KINDS = (
    "File", "Module", "Namespace", "Package", "Class", "Method", "Property", "Field", "Constructor", "Enum",
    "Interface", "Function", "Variable", "Constant", "String", "Number", "Boolean", "Array", "Object", "Key",
    "Null", "EnumMember", "Struct", "Event", "Operator", "TypeParameter",
)
SEVERITIES = {1: "Error", 2: "Warning", 3: "Information", 4: "Hint"}


class Converter:
    """Positions of the files one answer names, each file's lines read once."""

    def __init__(self, text_of: TextOf, paths: Mapping[str, str | None]) -> None:
        self._text_of = text_of
        self._paths = paths  # each URI of the answer -> its local path (None: not a file)
        self._lines: dict[str, Lines | None] = {}

    def path(self, uri: str) -> str | None:
        return self._paths.get(uri)

    def position(self, path: str, position: Any) -> Position:
        row = max(int(position.get("line", 0)), 0)
        units = max(int(position.get("character", 0)), 0)
        lines = self._lines_of(path)
        if lines is not None and row < len(lines.starts):
            units = code_points(lines.line(row), units)
        return Position(row + 1, units + 1)

    def range(self, path: str, lsp_range: Any) -> JsonObject:
        return {
            "start": self.position(path, lsp_range["start"]).to_json(),
            "end": self.position(path, lsp_range["end"]).to_json(),
        }

    def _lines_of(self, path: str) -> Lines | None:
        if path not in self._lines:
            text = self._text_of(path)
            self._lines[path] = Lines(text) if text is not None else None
        return self._lines[path]


def lsp_position(text: str, position: Position) -> JsonObject:
    """A tool's 1-based position (code points) as an LSP position in `text`."""
    lines = Lines(text)
    row = min(max(position.line, 1), len(lines.starts)) - 1
    line = lines.line(row)
    return {"line": row, "character": utf16_units(line[: max(position.character, 1) - 1])}


def uris_in(result: Any) -> set[str]:
    """The URIs an answer names (its `uri` and `targetUri` values)."""
    found: set[str] = set()
    pending = [result]
    while pending:
        value = pending.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                if key in ("uri", "targetUri") and isinstance(item, str):
                    found.add(item)
                pending.append(item)
        elif isinstance(value, list):
            pending.extend(value)
    return found


def kind_name(kind: Any) -> str:
    if isinstance(kind, int) and 1 <= kind <= len(SYMBOL_KINDS):
        return SYMBOL_KINDS[kind - 1]
    return "Variable"


def document_symbols(result: Any, path: str, convert: Converter) -> list[JsonObject]:
    """`DocumentSymbol[]` as a tree, or `SymbolInformation[]` as a flat list."""

    def node(symbol: JsonObject) -> JsonObject:
        if "location" in symbol:  # SymbolInformation
            whole = convert.range(path, symbol["location"]["range"])
            return {"name": symbol["name"], "kind": kind_name(symbol.get("kind")), "range": whole,
                    "selectionRange": whole, "children": []}
        return {
            "name": symbol["name"],
            "kind": kind_name(symbol.get("kind")),
            "range": convert.range(path, symbol["range"]),
            "selectionRange": convert.range(path, symbol.get("selectionRange", symbol["range"])),
            "children": [node(child) for child in symbol.get("children") or []],
        }

    return [node(symbol) for symbol in result or []]


def locations(result: Any, convert: Converter) -> list[JsonObject]:
    """`Location | Location[] | LocationLink[] | null` as `[{abspath, range}]`
    (a link's target selection: where the name is)."""
    if result is None:
        return []
    found: list[JsonObject] = []
    for item in result if isinstance(result, list) else [result]:
        uri = item.get("targetUri", item.get("uri"))
        where = item.get("targetSelectionRange", item.get("range"))
        path = convert.path(uri) if isinstance(uri, str) else None
        if path is not None and where is not None:
            found.append({"abspath": path, "range": convert.range(path, where)})
    return found


def diagnostics(by_uri: Mapping[str, list[Any]], convert: Converter) -> list[JsonObject]:
    """Each file's diagnostics, errors first, then by position."""
    found: list[JsonObject] = []
    for uri, items in by_uri.items():
        path = convert.path(uri)
        if path is None:
            continue
        for item in items:
            answer: JsonObject = {
                "abspath": path,
                "range": convert.range(path, item["range"]),
                "severity": SEVERITIES.get(item.get("severity", 1), "Error"),
                "message": item.get("message", ""),
            }
            for optional in ("source", "code"):
                if item.get(optional) is not None:
                    answer[optional] = item[optional]
            found.append(answer)
    order = list(SEVERITIES.values())
    found.sort(key=lambda d: (order.index(d["severity"]), d["abspath"], d["range"]["start"]["line"]))
    return found


def hover_text(result: Any) -> str:
    """A `Hover`'s contents as text: `MarkupContent`, a `MarkedString` or a list of them."""
    contents = result.get("contents") if isinstance(result, dict) else None
    parts = contents if isinstance(contents, list) else [contents]
    texts = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("value"), str):
            language = part.get("language")
            texts.append(f"```{language}\n{part['value']}\n```" if isinstance(language, str) else part["value"])
    return "\n\n".join(text for text in texts if text)
