"""The IDE tools over the whole window: search, references, hover, the open
editors and folders, showing a place, and the build's output. Their MCP
definitions and dispatch; `ide_tools_mcp` serves them with the others.

Positions are 1-based lines and columns counted in code points. A `path`
is absolute, or relative to one of the window's folders (as `search_project`
answers them).
"""

from __future__ import annotations

from mcp_types import Tool
from pydantic import Field

from .. import threads
from ..ide_tools.answers import CodeKnowledge, Place, SearchRequest
from ..ide_tools.project_search import DEFAULT_MAX_RESULTS, MAX_LINE_CHARS
from .ide_tool_answers import Arguments, answer_json, answer_text
from .protocol import ToolAnswer
from .server import RegisteredTool, validated_tool

PATH = "A file inside the editor window's folders: absolute, or relative to a folder."


class SearchArguments(Arguments):
    query: str = Field(min_length=1, max_length=1000, description="The text to find (a Python regex with regex: true).")
    regex: bool = Field(default=False, description="Take the query as a Python regular expression.")
    case_sensitive: bool = Field(default=True, description="Match case exactly (the default).")
    glob: str | None = Field(default=None, min_length=1, max_length=200,
                             description="Only files matching it: `*.py` (a name) or `src/**/*.ts` (a path).")
    max_results: int = Field(default=DEFAULT_MAX_RESULTS, ge=1, le=1000, description="At most this many matches.")


class ReferencesArguments(Arguments):
    symbol: str | None = Field(default=None, min_length=1, max_length=200, description="A name to find the uses of.")
    path: str | None = Field(default=None, min_length=1, description=PATH + " With line and column: the name there.")
    line: int | None = Field(default=None, ge=1)
    column: int | None = Field(default=None, ge=1)


class PlaceArguments(Arguments):
    path: str = Field(min_length=1, description=PATH)
    line: int = Field(ge=1, description="1-based line.")
    column: int = Field(ge=1, description="1-based column (code point) on the symbol's name.")


class OpenFileArguments(Arguments):
    path: str = Field(min_length=1, description=PATH)
    line: int | None = Field(default=None, ge=1, description="1-based line to show.")
    column: int | None = Field(default=None, ge=1, description="1-based column.")
    end_line: int | None = Field(default=None, ge=1, description="Highlight the lines from line to end_line.")


class NoArguments(Arguments):
    pass


SEARCH_PROJECT = Tool(
    name="search_project",
    description=(
        "Search the text of every file in the editor window's folders, including unsaved edits in open files; "
        "honours .gitignore, skips binary files and files the user excluded. One line per matching line: "
        f"`path:line:column: text` (path relative to its folder, text cut to {MAX_LINE_CHARS} characters), "
        "files with unsaved edits first; a last line in brackets says when the answer was cut or is partial "
        "(a search stops after 10 s). A regex is Python's, matched within each line's first 1,000 characters; "
        "nested quantifiers and backreferences are refused."
    ),
    input_schema=SearchArguments.model_json_schema(),
)
FIND_REFERENCES = Tool(
    name="find_references",
    description=(
        "Find where a symbol is used across the project, by name ({symbol}) or at a place ({path, line, column}): "
        "Sublime Text's index, and the file's language server when one serves it. Answer: {symbol, references: "
        "[{abspath, line, text}], sources}, deduplicated."
    ),
    input_schema=ReferencesArguments.model_json_schema(),
)
GET_HOVER = Tool(
    name="get_hover",
    description=(
        "What the editor knows of the symbol at a place: the language server's hover text (type, docs) when one "
        "serves the file, else Sublime Text's index (its kind and where it is defined). Answer: {symbol, "
        "contents?, definitions?, source}."
    ),
    input_schema=PlaceArguments.model_json_schema(),
)
GET_OPEN_EDITORS = Tool(
    name="get_open_editors",
    description=(
        "The files open in the editor window: {editors: [{abspath, dirty, active, selection: {start, end} "
        "(1-based line and column), syntax}]}; files the user excluded are listed without a selection."
    ),
    input_schema=NoArguments.model_json_schema(),
)
GET_WORKSPACE_FOLDERS = Tool(
    name="get_workspace_folders",
    description="The editor window's folders and its project file: {folders: [abspath], project_file}.",
    input_schema=NoArguments.model_json_schema(),
)
OPEN_FILE = Tool(
    name="open_file",
    description=(
        "Show the user a file at a line in the editor (the range from line to end_line highlighted for a moment), "
        "without taking their keyboard focus. Only files in the window's folders; at most 10 a minute."
    ),
    input_schema=OpenFileArguments.model_json_schema(),
)
GET_BUILD_OUTPUT = Tool(
    name="get_build_output",
    description=(
        "The last 2,000 lines of Sublime Text's build output panel and the errors in them as the build "
        "system's file_regex reads them: {output, errors: [{abspath, line, column, message}], note?}."
    ),
    input_schema=NoArguments.model_json_schema(),
)


def project_tools(knowledge: CodeKnowledge) -> list[RegisteredTool]:
    @threads.on_server_loop
    async def search(session_id: str, arguments: SearchArguments) -> ToolAnswer:
        request = SearchRequest(arguments.query, arguments.regex, arguments.case_sensitive, arguments.glob,
                                arguments.max_results)
        return await answer_text(lambda: knowledge.search(request))

    @threads.on_server_loop
    async def references(session_id: str, arguments: ReferencesArguments) -> ToolAnswer:
        place = None
        if arguments.path is not None:
            place = Place(arguments.path, arguments.line or 1, arguments.column or 1)
        return await answer_json(lambda: knowledge.references(arguments.symbol, place))

    @threads.on_server_loop
    async def hover(session_id: str, arguments: PlaceArguments) -> ToolAnswer:
        return await answer_json(lambda: knowledge.hover(Place(arguments.path, arguments.line, arguments.column)))

    @threads.on_server_loop
    async def open_editors(session_id: str, arguments: NoArguments) -> ToolAnswer:
        return await answer_json(knowledge.open_editors)

    @threads.on_server_loop
    async def folders(session_id: str, arguments: NoArguments) -> ToolAnswer:
        return await answer_json(knowledge.workspace_folders)

    @threads.on_server_loop
    async def open_file(session_id: str, arguments: OpenFileArguments) -> ToolAnswer:
        place = Place(arguments.path, arguments.line, arguments.column, arguments.end_line)
        return await answer_json(lambda: knowledge.open_file(place))

    @threads.on_server_loop
    async def build_output(session_id: str, arguments: NoArguments) -> ToolAnswer:
        return await answer_json(knowledge.build_output)

    return [
        validated_tool(SEARCH_PROJECT, SearchArguments, search),
        validated_tool(FIND_REFERENCES, ReferencesArguments, references),
        validated_tool(GET_HOVER, PlaceArguments, hover),
        validated_tool(GET_OPEN_EDITORS, NoArguments, open_editors),
        validated_tool(GET_WORKSPACE_FOLDERS, NoArguments, folders),
        validated_tool(OPEN_FILE, OpenFileArguments, open_file),
        validated_tool(GET_BUILD_OUTPUT, NoArguments, build_output),
    ]
