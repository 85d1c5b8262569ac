"""The IDE tools answered from Sublime's own symbol knowledge: a file's symbol
list (`View.symbol_regions`) and the project's index (`Window.symbol_locations`).

Called on the server's worker threads: Sublime's API is thread-safe, and
nothing here waits for the main thread. A file that is not open is read
into a hidden output panel (never shown) so its syntax's symbol rules apply.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import sublime

from ...core.chat.agent_files import Refused, confine, read_text
from ...core.ide_tools.answers import JsonObject, ToolRefusal
from ...core.ide_tools.symbols import FlatSymbol, Lines, Position, Range, lsp_kind, symbol_tree, word_at
from ..chat.buffers import view_text
from ..reviews.views import find_open_view

SCRATCH_PANEL = "qwen_ide_tools"
NO_LANGUAGE_SERVER = (
    "Sublime Text's symbol index knows where names are defined but not their types or errors; "
    "this answer would need a language server, which this version of the package does not ask."
)


class SublimeCodeKnowledge:
    """One window's answers (the `CodeKnowledge` of its companion)."""

    def __init__(self, window: sublime.Window) -> None:
        self._window = window
        self._scratch = threading.Lock()  # one hidden panel per window, one file at a time

    # --- the tools ---------------------------------------------------------

    def document_symbols(self, abspath: str) -> JsonObject:
        path = self._confined(abspath)
        text, symbols = self._symbols_of(path)
        return {"abspath": path, "symbols": [node.to_json() for node in symbol_tree(text, symbols)]}

    def definitions(self, abspath: str, line: int, character: int) -> JsonObject:
        path = self._confined(abspath)
        name = self._name_at(path, line, character)
        locations = [
            self._location(found.path, found.row, found.col, name)
            for found in self._window.symbol_locations(name, sublime.SymbolSource.ANY, sublime.SymbolType.DEFINITION)
            if self._inside(found.path)
        ]
        answer: JsonObject = {"symbol": name, "locations": locations}
        if not locations:
            answer["note"] = f"Sublime Text's index has no definition of {name!r} in the window's folders."
        return answer

    def type_definitions(self, abspath: str, line: int, character: int) -> JsonObject:
        path = self._confined(abspath)
        return {"symbol": self._name_at(path, line, character), "locations": [], "note": NO_LANGUAGE_SERVER}

    def diagnostics(self, abspath: str | None) -> JsonObject:
        if abspath is not None:
            self._confined(abspath)
        return {"diagnostics": [], "note": NO_LANGUAGE_SERVER}

    # --- files ---------------------------------------------------------------

    def _confined(self, abspath: str) -> str:
        try:
            path = confine(abspath, self._window.folders())
        except Refused as refusal:
            raise ToolRefusal(str(refusal)) from None
        if not os.path.isfile(path) and find_open_view(path) is None:
            raise ToolRefusal(f"{abspath}: no such file")
        return path

    def _inside(self, path: str) -> bool:
        try:
            confine(path, self._window.folders())
        except Refused:
            return False
        return True

    def _text(self, path: str) -> str:
        """What the user sees: the open buffer's text (unsaved edits too), else the disk's."""
        view = find_open_view(path)
        return view_text(view) if view is not None else _disk_text(path)

    def _symbols_of(self, path: str) -> tuple[str, list[FlatSymbol]]:
        view = find_open_view(path)
        if view is not None:
            return view_text(view), _flat(view.symbol_regions())
        text = _disk_text(path)
        with self._scratch:
            panel = self._window.create_output_panel(SCRATCH_PANEL, unlisted=True)
            try:
                syntax = sublime.find_syntax_for_file(path, text.partition("\n")[0])
                if syntax is not None:
                    panel.assign_syntax(syntax)
                panel.run_command("append", {"characters": text, "force": True, "scroll_to_end": False})
                return text, _flat(panel.symbol_regions())
            finally:
                self._window.destroy_output_panel(SCRATCH_PANEL)

    def _name_at(self, path: str, line: int, character: int) -> str:
        text = self._text(path)
        lines = Lines(text)
        if line > len(lines.starts):
            raise ToolRefusal(f"{path} has {len(lines.starts)} lines; line {line} is past its end")
        offset = lines.offset(Position(line, character))
        word = word_at(text, offset)
        if word is None:
            shown = lines.line(line - 1).strip()
            raise ToolRefusal(f"no symbol at line {line}, character {character} of {path} (the line reads {shown!r})")
        return text[word[0] : word[1]]

    @staticmethod
    def _location(path: str, row: int, col: int, name: str) -> JsonObject:
        start = Position(row, col)
        return {"abspath": path, "range": Range(start, Position(row, col + len(name))).to_json()}


def _disk_text(path: str) -> str:
    try:
        return read_text(path)
    except OSError as error:
        raise ToolRefusal(f"{path}: {error.strerror or error}") from None


def _flat(regions: list[Any]) -> list[FlatSymbol]:
    """Sublime's `SymbolRegion`s (definitions only) as plain symbols."""
    return [
        FlatSymbol(region.name, lsp_kind(int(region.kind[0]), region.kind[2]), region.region.begin(), region.region.end())
        for region in regions
        if region.type == sublime.SymbolType.DEFINITION
    ]
