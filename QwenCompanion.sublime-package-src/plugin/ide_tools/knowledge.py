"""The IDE tools answered from what Sublime knows of the code: the language
server the LSP package runs for an open file (`language_servers`), else
Sublime's own symbols, a file's list (`View.symbol_regions`) and the
project's index (`Window.symbol_locations`).

Called on the server's worker threads: Sublime's API is thread-safe, and
nothing here waits for the main thread. A file that is not open is read
into a hidden output panel (never shown) so its syntax's symbol rules apply.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

import sublime

from ...core.context_rules import ContextOptions
from ...core.files.agent_files import Refused, confine, read_text
from ...core.files.text_positions import Lines, Position, Range
from ...core.ide_tools import lsp_results
from ...core.ide_tools.answers import Place, SearchRequest, ToolRefusal
from ...core.ide_tools.rate_limit import RateLimit
from ...core.ide_tools.symbols import FlatSymbol, lsp_kind, symbol_tree, word_at
from ...core.json_types import JsonObject
from ..editor import find_open_view, view_text
from ..settings import userprefs
from . import language_servers, window_state
from .language_servers import LspAnswer
from .search import search_window
from .show_place import show_place

SCRATCH_PANEL = "qwen_ide_tools"
INDEX = "Sublime Text's symbol index"
MAX_REFERENCES = 500
MAX_HOVER_CHARS = 8000
OPENS_A_MINUTE = 10
NO_LANGUAGE_SERVER = (
    "Sublime Text's symbol index knows where names are defined but not their types or errors; "
    "this answer needs a language server: the LSP package with a server for this language, the file open."
)


class SublimeCodeKnowledge:
    """One window's answers (the `CodeKnowledge` of its companion)."""

    def __init__(self, window: sublime.Window) -> None:
        self._window = window
        self._scratch = threading.Lock()  # one hidden panel per window, one file at a time
        self._opens = RateLimit(OPENS_A_MINUTE, 60.0)

    # --- the tools ---------------------------------------------------------

    def document_symbols(self, abspath: str) -> JsonObject:
        path = self._confined(abspath)
        asked = self._ask_about_open(path, "textDocument/documentSymbol", "documentSymbolProvider", {})
        if asked is not None and asked.error is None:
            symbols = lsp_results.document_symbols(asked.result, path, self._converter(asked))
            return {"abspath": path, "symbols": symbols, "source": _server(asked)}
        text, flat = self._symbols_of(path)
        answer = {"abspath": path, "symbols": [node.to_json() for node in symbol_tree(text, flat)], "source": INDEX}
        return _noting(answer, asked)

    def definitions(self, abspath: str, line: int, character: int) -> JsonObject:
        return self._locations(abspath, line, character, "textDocument/definition", "definitionProvider",
                               self._indexed_definitions)

    def type_definitions(self, abspath: str, line: int, character: int) -> JsonObject:
        return self._locations(abspath, line, character, "textDocument/typeDefinition", "typeDefinitionProvider",
                               lambda name: {"symbol": name, "locations": [], "note": NO_LANGUAGE_SERVER})

    def diagnostics(self, abspath: str | None) -> JsonObject:
        path = self._confined(abspath) if abspath is not None else None
        asked = language_servers.diagnostics(self._window, path)
        if asked is not None and asked.error is None:
            found = lsp_results.diagnostics(asked.result or {}, self._converter(asked))
            return {"diagnostics": found, "source": _server(asked)}
        return _noting({"diagnostics": [], "note": NO_LANGUAGE_SERVER}, asked)

    def search(self, request: SearchRequest) -> str:
        return search_window(self._window, request)

    def references(self, symbol: str | None, place: Place | None) -> JsonObject:
        if place is None:
            if symbol is None:
                raise ToolRefusal("give a symbol, or a path with a line and column")
            return self._reference_answer(symbol, [], None)
        path = self._confined(place.path)
        name = self._name_at(path, place.line or 1, place.column or 1)
        asked = self._ask_at(path, place.line or 1, place.column or 1, "textDocument/references", "referencesProvider",
                             {"context": {"includeDeclaration": True}})
        served = asked if asked is not None and asked.error is None else None
        found = lsp_results.locations(served.result, self._converter(served)) if served is not None else []
        lines = [(found_at["abspath"], found_at["range"]["start"]["line"]) for found_at in found]
        return _noting(self._reference_answer(name, lines, served), asked)

    def hover(self, place: Place) -> JsonObject:
        path = self._confined(place.path)
        name = self._name_at(path, place.line or 1, place.column or 1)
        asked = self._ask_at(path, place.line or 1, place.column or 1, "textDocument/hover", "hoverProvider")
        if asked is not None and asked.error is None and asked.result:
            contents = lsp_results.hover_text(asked.result)[:MAX_HOVER_CHARS]
            return {"symbol": name, "contents": contents, "source": _server(asked)}
        definitions = [
            {"abspath": found.path, "line": found.row, "column": found.col, "kind": str(found.kind[2])}
            for found in self._window.symbol_locations(name, sublime.SymbolSource.ANY, sublime.SymbolType.DEFINITION)
            if self._inside(found.path) and not self._privacy().excludes(found.path)
        ]
        answer: JsonObject = {"symbol": name, "definitions": definitions, "source": INDEX}
        if not definitions:
            answer["note"] = f"Sublime Text's index knows no definition of {name!r} in the window's folders."
        return _noting(answer, asked)

    def open_editors(self) -> JsonObject:
        return window_state.open_editors(self._window, self._listed)

    def workspace_folders(self) -> JsonObject:
        return window_state.workspace_folders(self._window)

    def open_file(self, place: Place) -> JsonObject:
        path = self._confined(place.path)
        wait = self._opens.take()
        if wait is not None:
            raise ToolRefusal(f"open_file is limited to {OPENS_A_MINUTE} a minute; the next one is allowed in "
                              f"{wait:.0f} s")
        show_place(self._window, path, place.line, place.column, place.end_line)
        answer: JsonObject = {"shown": {"abspath": path}}
        if place.line is not None:
            answer["line"] = place.line
        return answer

    def build_output(self) -> JsonObject:
        return window_state.build_output(self._window, self._listed)

    # --- references ----------------------------------------------------------

    def _reference_answer(self, name: str, served: list[tuple[str, int]], asked: LspAnswer | None) -> JsonObject:
        """The index's references of `name` and a server's, one per line, each with the line's text."""
        indexed = [(found.path, found.row) for found in
                   self._window.symbol_locations(name, sublime.SymbolSource.ANY, sublime.SymbolType.REFERENCE)]
        found = {*served, *indexed}
        listed = {path: self._listed(path) for path in {path for path, _ in found}}  # each file checked once
        places = sorted(place for place in found if listed[place[0]])
        texts: dict[str, Lines | None] = {}
        references: list[JsonObject] = []
        for path, line in places[:MAX_REFERENCES]:
            if path not in texts:
                text = self._text_or_none(path)
                texts[path] = Lines(text) if text is not None else None
            lines = texts[path]
            shown = lines.line(line - 1).strip()[:200] if lines is not None and line <= len(lines.starts) else ""
            references.append({"abspath": path, "line": line, "text": shown})
        sources = [INDEX] + ([_server(asked)] if asked is not None else [])
        answer: JsonObject = {"symbol": name, "references": references, "sources": sources}
        if len(places) > MAX_REFERENCES:
            answer["note"] = f"only the first {MAX_REFERENCES} of {len(places)} references are listed"
        return answer

    # --- language servers --------------------------------------------------------

    @staticmethod
    def _ask_about_open(path: str, method: str, capability: str, params: JsonObject) -> LspAnswer | None:
        """A language server's answer about an open file (LSP serves only open
        files); None when no server serves it."""
        view = find_open_view(path)
        return language_servers.ask(view, method, capability, params) if view is not None else None

    def _locations(self, abspath: str, line: int, character: int, method: str, capability: str,
                   unserved: Callable[[str], JsonObject]) -> JsonObject:
        """The locations a language server gives for the name at the position,
        else `unserved(name)` with a note of why no server answered."""
        path = self._confined(abspath)
        name = self._name_at(path, line, character)
        asked = self._ask_at(path, line, character, method, capability)
        if asked is not None and asked.error is None:
            locations = lsp_results.locations(asked.result, self._converter(asked))
            return {"symbol": name, "locations": locations, "source": _server(asked)}
        return _noting(unserved(name), asked)

    def _ask_at(self, path: str, line: int, character: int, method: str, capability: str,
                params: JsonObject | None = None) -> LspAnswer | None:
        view = find_open_view(path)
        if view is None:
            return None
        position = lsp_results.lsp_position(view_text(view), Position(line, character))
        return language_servers.ask(view, method, capability, dict(params or {}, position=position))

    def _converter(self, asked: LspAnswer) -> lsp_results.Converter:
        # Only places inside the window's folders are answered (and read).
        paths = {uri: path if path is not None and self._listed(path) else None for uri, path in asked.paths.items()}
        return lsp_results.Converter(self._text_or_none, paths)

    def _text_or_none(self, path: str) -> str | None:
        try:
            return self._text(path)
        except ToolRefusal:
            return None

    # --- files ---------------------------------------------------------------

    def _confined(self, abspath: str) -> str:
        """The file a tool names: inside the folders (a relative path in one of
        them), not one the user excluded, and there."""
        folders = self._window.folders()
        if not os.path.isabs(abspath):
            candidates = [os.path.join(folder, abspath) for folder in folders]
            abspath = next((c for c in candidates if os.path.exists(c)), candidates[0] if candidates else abspath)
        try:
            path = confine(abspath, folders)
        except Refused as refusal:
            raise ToolRefusal(str(refusal)) from None
        if self._privacy().excludes(path) or self._privacy().excludes(abspath):
            raise ToolRefusal(f"{abspath}: the user excluded this file from what the agent sees (excluded_file_patterns)")
        if not os.path.isfile(path) and find_open_view(path) is None:
            raise ToolRefusal(f"{abspath}: no such file")
        return path

    @staticmethod
    def _privacy() -> ContextOptions:
        return ContextOptions.from_settings(userprefs().context_values())

    def _listed(self, path: str) -> bool:
        """A place an answer may name: inside the folders, not excluded."""
        return self._inside(path) and not self._privacy().excludes(path)

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
            return view_text(view), flat_symbols(view.symbol_regions())
        text = _disk_text(path)
        with self._scratch:
            panel = self._window.create_output_panel(SCRATCH_PANEL, unlisted=True)
            try:
                syntax = sublime.find_syntax_for_file(path, text.partition("\n")[0])
                if syntax is not None:
                    panel.assign_syntax(syntax)
                panel.run_command("append", {"characters": text, "force": True, "scroll_to_end": False})
                return text, flat_symbols(panel.symbol_regions())
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

    def _indexed_definitions(self, name: str) -> JsonObject:
        """Where Sublime's symbol index defines `name` inside the window's folders."""
        locations = [
            self._location(found.path, found.row, found.col, name)
            for found in self._window.symbol_locations(name, sublime.SymbolSource.ANY, sublime.SymbolType.DEFINITION)
            if self._listed(found.path)
        ]
        answer: JsonObject = {"symbol": name, "locations": locations, "source": INDEX}
        if not locations:
            answer["note"] = f"Sublime Text's index has no definition of {name!r} in the window's folders."
        return answer

    @staticmethod
    def _location(path: str, row: int, col: int, name: str) -> JsonObject:
        start = Position(row, col)
        return {"abspath": path, "range": Range(start, Position(row, col + len(name))).to_json()}


def _server(asked: LspAnswer) -> str:
    return f"language server {asked.server}"


def _noting(answer: JsonObject, asked: LspAnswer | None) -> JsonObject:
    """Say why a language server's answer was not used, when one was asked."""
    if asked is not None and asked.error is not None:
        who = f"the language server {asked.server}" if asked.server else "the language server"
        why = f"Answered without {who}, which failed ({asked.error})."
        answer["note"] = f"{answer['note']} {why}" if "note" in answer else why
    return answer


def _disk_text(path: str) -> str:
    try:
        return read_text(path)  # a regular file of bounded size only
    except Refused as refused:
        raise ToolRefusal(str(refused)) from None
    except OSError as error:
        raise ToolRefusal(f"{path}: {error.strerror or error}") from None


def flat_symbols(regions: list[Any]) -> list[FlatSymbol]:
    """Sublime's `SymbolRegion`s (definitions only) as plain symbols."""
    return [
        FlatSymbol(region.name, lsp_kind(int(region.kind[0]), region.kind[2]), region.region.begin(), region.region.end())
        for region in regions
        if region.type == sublime.SymbolType.DEFINITION
    ]
