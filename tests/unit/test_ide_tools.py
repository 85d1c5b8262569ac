"""The IDE tools: symbols as a tree, the second endpoint's security and
lifecycle (its token, the `--mcp-config` file), and tool calls answered by a
`CodeKnowledge` off the server's loop."""

from __future__ import annotations

import json
import stat
import sys
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from qwencompanion_src.core.companion.companion import Companion
from qwencompanion_src.core.companion.ide_tools_mcp import IDE_TOOLS_PATH, SERVER_NAME, acp_server
from qwencompanion_src.core.ide_tools.answers import JsonObject, ToolRefusal
from qwencompanion_src.core.ide_tools.symbols import FlatSymbol, symbol_tree, word_at

from .conftest import Mcp, initialize_body

PYTHON = '''\
import os


class Shelf:
    """Books."""

    def __init__(self):
        self.books = []

    def add(self, book):
        def check(b):
            return b

        self.books.append(check(book))


def main():
    Shelf().add("x")
'''

JAVASCRIPT = """\
class Cart {
  constructor() {
    this.items = [];
  }

  total() {
    return 0;
  }
}

function checkout(cart) {
  return cart.total();
}
"""


def flat(text: str, *names: tuple[str, str]) -> list[FlatSymbol]:
    """Each (name, kind) at its first definition-like occurrence, as Sublime lists it."""
    found = []
    for name, kind in names:
        for keyword in ("def ", "class ", "function ", ""):
            at = text.find(keyword + name + ("(" if keyword in ("def ", "function ", "") else ""))
            if at >= 0:
                begin = at + len(keyword)
                found.append(FlatSymbol(name, kind, begin, begin + len(name)))
                break
    return found


def lines_of(node: dict[str, Any]) -> tuple[int, int]:
    return node["range"]["start"]["line"], node["range"]["end"]["line"]


# --- symbols as a tree -------------------------------------------------------------------


def test_python_definitions_nest_by_indentation_with_1_based_ranges() -> None:
    symbols = flat(PYTHON, ("Shelf", "Class"), ("__init__", "Function"), ("add", "Function"),
                   ("check", "Function"), ("main", "Function"))
    tree = [node.to_json() for node in symbol_tree(PYTHON, symbols)]

    assert [(n["name"], n["kind"]) for n in tree] == [("Shelf", "Class"), ("main", "Function")]
    shelf, main = tree
    assert lines_of(shelf) == (4, 14)
    assert shelf["selectionRange"] == {"start": {"line": 4, "character": 7}, "end": {"line": 4, "character": 12}}
    assert [(n["name"], n["kind"], lines_of(n)) for n in shelf["children"]] == [
        ("__init__", "Method", (7, 8)),
        ("add", "Method", (10, 14)),
    ]
    [check] = shelf["children"][1]["children"]
    assert (check["name"], check["kind"], lines_of(check)) == ("check", "Function", (11, 12))
    assert lines_of(main) == (17, 18)
    assert main["range"]["end"]["character"] == len('    Shelf().add("x")') + 1


def test_brace_definitions_end_at_their_closing_bracket() -> None:
    symbols = flat(JAVASCRIPT, ("Cart", "Class"), ("constructor", "Function"), ("total", "Function"),
                   ("checkout", "Function"))
    tree = [node.to_json() for node in symbol_tree(JAVASCRIPT, symbols)]

    cart, checkout = tree
    assert lines_of(cart) == (1, 9)
    assert [(n["name"], n["kind"], lines_of(n)) for n in cart["children"]] == [
        ("constructor", "Method", (2, 4)),
        ("total", "Method", (6, 8)),
    ]
    assert lines_of(checkout) == (11, 13)


def test_lines_of_only_blanks_stay_inside_a_definition() -> None:
    text = "def outer():\n    a = 1\n\x0c\n  \t\n    return a\nrest = 2\n"  # a form feed counts as blank
    begin = text.index("outer")
    [node] = symbol_tree(text, [FlatSymbol("outer", "Function", begin, begin + 5)])
    assert lines_of(node.to_json()) == (1, 5)


def test_characters_count_code_points() -> None:
    text = "été = 1\ndef ñame():\n    pass\n"
    begin = text.index("ñame")
    [node] = symbol_tree(text, [FlatSymbol("ñame", "Function", begin, begin + 4)])
    assert node.selection.start.character == 5 and node.selection.end.character == 9


@pytest.mark.parametrize(
    ("offset", "expected"),
    [(0, "alpha"), (3, "alpha"), (5, "alpha"), (7, None), (8, "$beta_2"), (15, "$beta_2")],
)
def test_the_word_at_an_offset(offset: int, expected: str | None) -> None:
    text = "alpha ( $beta_2"
    found = word_at(text, offset)
    assert (text[found[0] : found[1]] if found else None) == expected


# --- the endpoint --------------------------------------------------------------------------


class FakeKnowledge:
    """Answers like the editor layer; records the thread each call ran on."""

    def __init__(self) -> None:
        self.threads: list[str] = []

    def document_symbols(self, abspath: str) -> JsonObject:
        self.threads.append(threading.current_thread().name)
        if abspath.endswith("secret.py"):
            raise ToolRefusal(f"{abspath}: outside the window's folders")
        if abspath.endswith("odd.py"):  # a name no UTF-8 encoder takes: a lone surrogate
            return {"abspath": abspath, "symbols": [{"name": "caf\u00e9\ud800", "kind": "Function"}]}
        return {"abspath": abspath, "symbols": [{"name": "main", "kind": "Function"}]}

    def definitions(self, abspath: str, line: int, character: int) -> JsonObject:
        return {"symbol": "main", "locations": [{"abspath": abspath, "line": line, "character": character}]}

    def type_definitions(self, abspath: str, line: int, character: int) -> JsonObject:
        return {"locations": [], "note": "no language server"}

    def diagnostics(self, abspath: str | None) -> JsonObject:
        return {"diagnostics": [], "for": abspath}


@pytest.fixture
def config_directory(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "ide-tools"


@pytest.fixture
def knowledge() -> FakeKnowledge:
    return FakeKnowledge()


@pytest.fixture
def tooled(companion_factory: Callable[..., Companion], config_directory: Path, knowledge: FakeKnowledge) -> Companion:
    return companion_factory(mcp_config_directory=config_directory, code_knowledge=knowledge)


@pytest.fixture
async def client(tooled: Companion) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(base_url=f"http://127.0.0.1:{tooled.port}") as session:
        yield session


@pytest.fixture
async def tools_mcp(tooled: Companion, client: aiohttp.ClientSession) -> AsyncIterator[Mcp]:
    assert tooled.ide_tools_token is not None
    mcp = Mcp(client, token=tooled.ide_tools_token, path=IDE_TOOLS_PATH)
    yield mcp
    mcp.close_streams()


def test_the_config_file_names_the_endpoint_with_its_own_token_and_only_the_owner_reads_it(
    tooled: Companion, config_directory: Path
) -> None:
    config = tooled.mcp_config_file
    assert config is not None and config.parent == config_directory
    server = json.loads(config.read_text())["mcpServers"][SERVER_NAME]
    assert server["httpUrl"] == f"http://127.0.0.1:{tooled.port}{IDE_TOOLS_PATH}" == tooled.ide_tools_url
    assert server["headers"] == {"Authorization": f"Bearer {tooled.ide_tools_token}"}
    assert tooled.ide_tools_token != tooled.token and len(tooled.ide_tools_token) >= 32
    if sys.platform != "win32":
        assert stat.S_IMODE(config.stat().st_mode) == 0o600


def test_stopping_the_server_removes_the_config_file(tooled: Companion) -> None:
    config = tooled.mcp_config_file
    assert config is not None and config.exists()
    tooled.stop()
    assert not config.exists()
    assert tooled.ide_tools_url is None


async def test_without_a_config_directory_there_are_no_tools(companion: Companion) -> None:
    assert companion.ide_tools_token is None and companion.mcp_config_file is None
    async with aiohttp.ClientSession(base_url=f"http://127.0.0.1:{companion.port}") as session:
        response = await Mcp(session, token=companion.token, path=IDE_TOOLS_PATH).post(initialize_body())
        assert response.status == 404


def test_the_chat_entry_carries_the_same_url_and_token(tooled: Companion) -> None:
    assert tooled.ide_tools_url is not None and tooled.ide_tools_token is not None
    entry = acp_server(tooled.ide_tools_url, tooled.ide_tools_token)
    assert entry == {
        "type": "http",
        "name": SERVER_NAME,
        "url": tooled.ide_tools_url,
        "headers": [{"name": "Authorization", "value": f"Bearer {tooled.ide_tools_token}"}],
    }


async def test_each_endpoint_takes_only_its_own_token(tooled: Companion, client: aiohttp.ClientSession) -> None:
    assert tooled.ide_tools_token is not None
    crossed = [
        Mcp(client, token=tooled.token, path=IDE_TOOLS_PATH),
        Mcp(client, token=tooled.ide_tools_token, path="/mcp"),
    ]
    for mcp in crossed:
        response = await mcp.post(initialize_body())
        assert response.status == 401
        assert tooled.ide_tools_token not in await response.text()
    right = Mcp(client, token=tooled.ide_tools_token, path=IDE_TOOLS_PATH)
    assert await right.initialize()


@pytest.mark.parametrize(
    ("headers", "status"),
    [({"Origin": "http://evil.example"}, 403), ({"Host": "evil.example"}, 403), ({"Host": "127.0.0.2:1"}, 403)],
)
async def test_origin_and_host_rules_hold_on_the_tools_endpoint(
    tools_mcp: Mcp, headers: dict[str, str], status: int
) -> None:
    response = await tools_mcp.post(initialize_body(), headers=headers)
    assert response.status == status


async def test_a_session_of_one_endpoint_is_unknown_to_the_other(
    tooled: Companion, client: aiohttp.ClientSession, tools_mcp: Mcp
) -> None:
    session = await tools_mcp.initialize()
    companion_mcp = Mcp(client, token=tooled.token)
    response = await companion_mcp.post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, session=session)
    assert response.status == 404


async def test_the_tools_are_listed_with_schemas_for_a_model(tools_mcp: Mcp) -> None:
    session = await tools_mcp.initialize()
    tools = {tool["name"]: tool for tool in (await tools_mcp.rpc(session, "tools/list"))["result"]["tools"]}
    assert sorted(tools) == [
        "find_def_locations", "find_references", "find_type_def_locations", "get_build_output", "get_diagnostics",
        "get_document_symbols", "get_hover", "get_open_editors", "get_workspace_folders", "open_file",
        "search_project",
    ]
    assert "save_document" not in tools and "close_tab" not in tools  # nothing that writes or runs code
    assert tools["search_project"]["inputSchema"]["required"] == ["query"]
    assert tools["open_file"]["inputSchema"]["required"] == ["path"]
    position = tools["find_def_locations"]["inputSchema"]
    assert sorted(position["required"]) == ["abspath", "character", "line"]
    assert position["properties"]["line"]["minimum"] == 1
    assert "1-based" in tools["get_document_symbols"]["description"]
    assert "required" not in tools["get_diagnostics"]["inputSchema"]


async def test_a_call_is_answered_off_the_server_loop_as_json(tools_mcp: Mcp, knowledge: FakeKnowledge) -> None:
    session = await tools_mcp.initialize()
    result = await tools_mcp.call_tool(session, "get_document_symbols", {"abspath": "/w/main.py"})
    assert result.get("isError") is not True
    [block] = result["content"]
    assert json.loads(block["text"]) == {"abspath": "/w/main.py", "symbols": [{"name": "main", "kind": "Function"}]}
    assert knowledge.threads and all(name != "QwenCompanion server" for name in knowledge.threads)

    answer = await tools_mcp.call_tool(session, "find_def_locations", {"abspath": "/w/a.py", "line": 3, "character": 9})
    assert json.loads(answer["content"][0]["text"])["locations"] == [{"abspath": "/w/a.py", "line": 3, "character": 9}]
    every = await tools_mcp.call_tool(session, "get_diagnostics", {})
    assert json.loads(every["content"][0]["text"]) == {"diagnostics": [], "for": None}


async def test_an_answer_with_text_no_utf_8_holds_still_reaches_the_model(tools_mcp: Mcp) -> None:
    session = await tools_mcp.initialize()
    result = await tools_mcp.call_tool(session, "get_document_symbols", {"abspath": "/w/odd.py"})
    assert result.get("isError") is not True
    assert json.loads(result["content"][0]["text"])["symbols"] == [{"name": "caf\u00e9\ud800", "kind": "Function"}]


async def test_a_refusal_reaches_the_model_as_an_error_it_can_read(tools_mcp: Mcp) -> None:
    session = await tools_mcp.initialize()
    result = await tools_mcp.call_tool(session, "get_document_symbols", {"abspath": "/etc/secret.py"})
    assert result["isError"] is True
    assert "outside the window's folders" in result["content"][0]["text"]


@pytest.mark.parametrize(
    "arguments",
    [{"abspath": "/w/a.py", "line": 0, "character": 1}, {"abspath": "/w/a.py", "line": 1}, {"abspath": "", "line": 1, "character": 1}],
)
async def test_bad_arguments_get_a_clear_error(tools_mcp: Mcp, arguments: dict[str, Any]) -> None:
    session = await tools_mcp.initialize()
    result = await tools_mcp.call_tool(session, "find_def_locations", arguments)
    assert result["isError"] is True
    assert result["content"][0]["text"]


async def test_without_the_editor_layer_the_tools_say_so(
    companion_factory: Callable[..., Companion], config_directory: Path
) -> None:
    companion = companion_factory(mcp_config_directory=config_directory)
    assert companion.ide_tools_token is not None
    async with aiohttp.ClientSession(base_url=f"http://127.0.0.1:{companion.port}") as client:
        mcp = Mcp(client, token=companion.ide_tools_token, path=IDE_TOOLS_PATH)
        session = await mcp.initialize()
        result = await mcp.call_tool(session, "get_document_symbols", {"abspath": "/w/a.py"})
    assert result["isError"] is True and "not available" in result["content"][0]["text"]
