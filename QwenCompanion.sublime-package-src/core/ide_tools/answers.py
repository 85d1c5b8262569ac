"""What the IDE tools answer with, and who answers: light, so the editor
layer can import it at plugin load without the server's libraries."""

from __future__ import annotations

from typing import Protocol

from ..json_types import JsonObject


class ToolRefusal(Exception):
    """A question the tools cannot answer; the message tells the model why."""


class CodeKnowledge(Protocol):
    """Answers the tools; called on a worker thread, never on the server loop."""

    def document_symbols(self, abspath: str) -> JsonObject: ...

    def definitions(self, abspath: str, line: int, character: int) -> JsonObject: ...

    def type_definitions(self, abspath: str, line: int, character: int) -> JsonObject: ...

    def diagnostics(self, abspath: str | None) -> JsonObject: ...


class UnavailableKnowledge:
    """Until the editor layer plugs in its knowledge."""

    def _refuse(self, *args: object) -> JsonObject:
        raise ToolRefusal("Sublime Text's code knowledge is not available in this window yet")

    document_symbols = definitions = type_definitions = diagnostics = _refuse
