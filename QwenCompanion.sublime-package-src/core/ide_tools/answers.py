"""What the IDE tools answer with, and who answers: light, so the editor
layer can import it at plugin load without the server's libraries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..json_types import JsonObject


class ToolRefusal(Exception):
    """A question the tools cannot answer; the message tells the model why."""


@dataclass(frozen=True)
class SearchRequest:
    query: str
    regex: bool = False
    case_sensitive: bool = True
    glob: str | None = None
    max_results: int = 200


@dataclass(frozen=True)
class Place:
    """A file and, optionally, a 1-based line and column in it."""

    path: str
    line: int | None = None
    column: int | None = None
    end_line: int | None = None


class CodeKnowledge(Protocol):
    """Answers the tools; called on a worker thread, never on the server loop."""

    def document_symbols(self, abspath: str) -> JsonObject: ...

    def definitions(self, abspath: str, line: int, character: int) -> JsonObject: ...

    def type_definitions(self, abspath: str, line: int, character: int) -> JsonObject: ...

    def diagnostics(self, abspath: str | None) -> JsonObject: ...

    def search(self, request: SearchRequest) -> str: ...

    def references(self, symbol: str | None, place: Place | None) -> JsonObject: ...

    def hover(self, place: Place) -> JsonObject: ...

    def open_editors(self) -> JsonObject: ...

    def workspace_folders(self) -> JsonObject: ...

    def open_file(self, place: Place) -> JsonObject: ...

    def build_output(self) -> JsonObject: ...


class UnavailableKnowledge:
    """Until the editor layer plugs in its knowledge."""

    def _refuse(self, *args: object) -> JsonObject:
        raise ToolRefusal("Sublime Text's code knowledge is not available in this window yet")

    document_symbols = definitions = type_definitions = diagnostics = _refuse
    references = hover = open_editors = workspace_folders = open_file = build_output = _refuse

    def search(self, request: SearchRequest) -> str:
        raise ToolRefusal("Sublime Text's code knowledge is not available in this window yet")
