"""The IDE tools as the companion serves them over MCP: their arguments, the
descriptions a model reads, and dispatch to a `CodeKnowledge` (the editor
layer's source of answers, `core/ide_tools`).

Positions are 1-based lines and 1-based characters counted in code points,
as Sublime counts them; every answer is JSON in one text block.
"""

from __future__ import annotations

from mcp_types import Tool
from pydantic import Field

from .. import threads
from ..ide_tools import SERVER_NAME
from ..ide_tools.answers import CodeKnowledge
from ..json_types import JsonObject
from .ide_project_tools import project_tools
from .ide_tool_answers import Arguments, answer_json
from .protocol import ToolAnswer
from .server import RegisteredTool, validated_tool

IDE_TOOLS_PATH = "/ide-tools/mcp"

class FileArguments(Arguments):
    abspath: str = Field(min_length=1, description="Absolute path of a file inside the editor window's folders.")


class PositionArguments(FileArguments):
    line: int = Field(ge=1, description="1-based line of the symbol.")
    character: int = Field(ge=1, description="1-based character (code point) within the line, on the symbol's name.")


class DiagnosticsArguments(Arguments):
    abspath: str | None = Field(
        default=None, min_length=1,
        description="Absolute path of one file; leave out for every file of the window.",
    )


RANGE_NOTE = (
    "Ranges are {start: {line, character}, end: {line, character}}, 1-based lines and characters. "
    "`source` says who answered: the file's language server or Sublime Text's symbol index."
)

# The CLI lists deferred tools with the first ~150 characters of their
# description: each starts with what it answers.
GET_DOCUMENT_SYMBOLS = Tool(
    name="get_document_symbols",
    description=(
        "Outline a file as Sublime Text sees it: its classes, functions, methods and variables as a tree with "
        "line ranges. Faster and more precise than grepping or reading the whole file. Answer: {abspath, symbols: "
        "[{name, kind (LSP SymbolKind name: Class, Function, Method…), range (the whole definition), "
        "selectionRange (the name), children}]}. " + RANGE_NOTE
    ),
    input_schema=FileArguments.model_json_schema(),
)
FIND_DEF_LOCATIONS = Tool(
    name="find_def_locations",
    description=(
        "Find where the symbol at a line and character of a file is defined, across the project. Answer: "
        "{symbol, locations: [{abspath, range}], source}, with a note when there is none. " + RANGE_NOTE
    ),
    input_schema=PositionArguments.model_json_schema(),
)
FIND_TYPE_DEF_LOCATIONS = Tool(
    name="find_type_def_locations",
    description=(
        "Find where the type of the symbol at a line and character is defined. Answer: {symbol, locations: "
        "[{abspath, range}], source}. Needs a language server for the file (open in the editor); without one "
        "the locations are empty and a note says why. " + RANGE_NOTE
    ),
    input_schema=PositionArguments.model_json_schema(),
)
GET_DIAGNOSTICS = Tool(
    name="get_diagnostics",
    description=(
        "Errors and warnings of one file or the whole window, as the editor's language servers report them. "
        "Answer: {diagnostics: [{abspath, range, severity (Error, Warning, Information, Hint), message, source?, "
        "code?}], source}; without a language server the list is empty and a note says why. " + RANGE_NOTE
    ),
    input_schema=DiagnosticsArguments.model_json_schema(),
)


def ide_tools(knowledge: CodeKnowledge) -> list[RegisteredTool]:
    """The tools, answered by `knowledge`."""

    @threads.on_server_loop
    async def symbols(session_id: str, arguments: FileArguments) -> ToolAnswer:
        return await answer_json(lambda: knowledge.document_symbols(arguments.abspath))

    @threads.on_server_loop
    async def definitions(session_id: str, arguments: PositionArguments) -> ToolAnswer:
        return await answer_json(lambda: knowledge.definitions(arguments.abspath, arguments.line, arguments.character))

    @threads.on_server_loop
    async def type_definitions(session_id: str, arguments: PositionArguments) -> ToolAnswer:
        where = (arguments.abspath, arguments.line, arguments.character)
        return await answer_json(lambda: knowledge.type_definitions(*where))

    @threads.on_server_loop
    async def diagnostics(session_id: str, arguments: DiagnosticsArguments) -> ToolAnswer:
        return await answer_json(lambda: knowledge.diagnostics(arguments.abspath))

    return [
        validated_tool(GET_DOCUMENT_SYMBOLS, FileArguments, symbols),
        validated_tool(FIND_DEF_LOCATIONS, PositionArguments, definitions),
        validated_tool(FIND_TYPE_DEF_LOCATIONS, PositionArguments, type_definitions),
        validated_tool(GET_DIAGNOSTICS, DiagnosticsArguments, diagnostics),
        *project_tools(knowledge),
    ]


def mcp_config(url: str, token: str) -> JsonObject:
    """The `--mcp-config` file for a qwen started in a terminal."""
    return {"mcpServers": {SERVER_NAME: {"httpUrl": url, "headers": {"Authorization": f"Bearer {token}"}, "trust": True}}}


def acp_server(url: str, token: str) -> JsonObject:
    """The same endpoint as an ACP `mcpServers` entry (the CLI declares `mcpCapabilities.http`)."""
    return {"type": "http", "name": SERVER_NAME, "url": url, "headers": [{"name": "Authorization", "value": f"Bearer {token}"}]}
