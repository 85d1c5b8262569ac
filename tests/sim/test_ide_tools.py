"""The IDE tools in the simulated editor, with the BUILT package: answered
from Sublime's symbol list and index (Python and JavaScript), confined to
the window's folders, and handed to the terminal's qwen (`--mcp-config`),
to Copy Connect Command and to chat sessions (`mcpServers`)."""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sim.test_chat import ChatRig
from tests.support.editor import PACKAGE, Editor, open_editor, require_built
from tests.support.headless import HeadlessSublime
from tests.support.mcp_client import WAIT, McpClient
from tests.support.terminus import install_terminus, terminus_calls

SHELF = '''\
class Shelf:
    def __init__(self):
        self.books = []

    def add(self, book):
        self.books.append(book)


def count(shelf):
    return len(shelf.books)
'''

MAIN = '''\
from shelf import Shelf, count


def main():
    shelf = Shelf()
    shelf.add("Dune")
    return count(shelf)
'''

CART_JS = """\
class Cart {
  constructor() {
    this.items = [];
  }

  total() {
    return this.items.length;
  }
}

function checkout(cart) {
  return cart.total();
}
"""


def config_of(host: Any) -> dict[str, Any]:
    """The window's `--mcp-config` file, as the terminal's qwen reads it."""
    companion = sys.modules[f"{PACKAGE}.plugin.companion.companions"].companions.get(host.window)
    assert companion is not None and companion.mcp_config_file is not None
    data: dict[str, Any] = json.loads(companion.mcp_config_file.read_text())
    return data


class Tools:
    """A client of the window's IDE tools endpoint, as the CLI would be."""

    def __init__(self, host: Any) -> None:
        server = config_of(host)["mcpServers"]["sublime-ide-tools"]
        port = int(server["httpUrl"].split(":")[2].split("/")[0])
        token = server["headers"]["Authorization"].removeprefix("Bearer ")
        self.client = McpClient(port, token, "tools", path="/ide-tools/mcp").connect(stream=False)

    def call(self, tool: str, **arguments: Any) -> Any:
        result = self.client.call(tool, arguments)
        text = result["content"][0]["text"]
        return ("error", text) if result.get("isError") else json.loads(text)


@pytest.fixture
def editor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Editor]:
    with open_editor(tmp_path, monkeypatch) as editor:
        editor.file("shelf.py", SHELF)
        editor.file("main.py", MAIN)
        editor.file("web/cart.js", CART_JS)
        yield editor


@pytest.fixture
def tools(editor: Editor) -> Tools:
    return Tools(editor.host)


def outline(symbols: list[dict[str, Any]]) -> list[Any]:
    return [
        (s["name"], s["kind"], s["range"]["start"]["line"], s["range"]["end"]["line"], outline(s["children"]))
        for s in symbols
    ]


# --- answers ---------------------------------------------------------------------------------


def test_a_closed_python_file_is_read_without_showing_it(editor: Editor, tools: Tools) -> None:
    views_before = [v.id() for v in editor.window.views()]
    answer = tools.call("get_document_symbols", abspath=str(editor.workspace / "shelf.py"))
    assert outline(answer["symbols"]) == [
        ("Shelf", "Class", 1, 6, [("__init__", "Method", 2, 3, []), ("add", "Method", 5, 6, [])]),
        ("count", "Function", 9, 10, []),
    ]
    assert answer["symbols"][0]["selectionRange"]["start"] == {"line": 1, "character": 7}
    assert [v.id() for v in editor.window.views()] == views_before
    assert editor.host.run_on_main(editor.window.active_panel) is None
    assert "output.qwen_ide_tools" not in editor.window.panels()


def test_an_open_file_answers_with_its_unsaved_text(editor: Editor, tools: Tools) -> None:
    view = editor.user.open_file(editor.workspace / "shelf.py")
    editor.user.replace(view, (0, view.size()), "\n\n" + SHELF + "\n\ndef extra():\n    pass\n")
    answer = tools.call("get_document_symbols", abspath=str(editor.workspace / "shelf.py"))
    assert [(s["name"], s["range"]["start"]["line"]) for s in answer["symbols"]] == [
        ("Shelf", 3), ("count", 11), ("extra", 15),
    ]


def test_javascript_symbols_nest_in_their_class(editor: Editor, tools: Tools) -> None:
    answer = tools.call("get_document_symbols", abspath=str(editor.workspace / "web" / "cart.js"))
    assert outline(answer["symbols"]) == [
        ("Cart", "Class", 1, 9, [("constructor", "Method", 2, 4, []), ("total", "Method", 6, 8, [])]),
        ("checkout", "Function", 11, 13, []),
    ]


def test_definitions_are_found_across_the_project_with_1_based_positions(editor: Editor, tools: Tools) -> None:
    main = str(editor.workspace / "main.py")
    # line 5 is `    shelf = Shelf()`; character 13 is on "Shelf"
    answer = tools.call("find_def_locations", abspath=main, line=5, character=13)
    assert answer["symbol"] == "Shelf"
    assert answer["locations"] == [{
        "abspath": str(editor.workspace / "shelf.py"),
        "range": {"start": {"line": 1, "character": 7}, "end": {"line": 1, "character": 12}},
    }]
    counted = tools.call("find_def_locations", abspath=main, line=7, character=12)
    assert [(loc["abspath"], loc["range"]["start"]["line"]) for loc in counted["locations"]] == [
        (str(editor.workspace / "shelf.py"), 9),
    ]


def test_a_name_defined_nowhere_says_so(editor: Editor, tools: Tools) -> None:
    answer = tools.call("find_def_locations", abspath=str(editor.workspace / "shelf.py"), line=10, character=12)
    assert answer["symbol"] == "len" and answer["locations"] == []
    assert "no definition of 'len'" in answer["note"]


def test_a_position_on_no_symbol_or_past_the_end_is_an_error(editor: Editor, tools: Tools) -> None:
    main = str(editor.workspace / "main.py")
    kind, message = tools.call("find_def_locations", abspath=main, line=2, character=1)
    assert kind == "error" and "no symbol at line 2" in message
    kind, message = tools.call("find_def_locations", abspath=main, line=99, character=1)
    assert kind == "error" and "past its end" in message


def test_type_definitions_and_diagnostics_are_empty_and_say_why(editor: Editor, tools: Tools) -> None:
    main = str(editor.workspace / "main.py")
    types = tools.call("find_type_def_locations", abspath=main, line=5, character=13)
    assert types["locations"] == [] and "language server" in types["note"]
    diagnostics = tools.call("get_diagnostics")
    assert diagnostics["diagnostics"] == [] and "language server" in diagnostics["note"]


# --- confinement -------------------------------------------------------------------------------


@pytest.fixture
def outside(editor: Editor) -> Path:
    secret = editor.root / "elsewhere" / "secret.py"
    secret.parent.mkdir()
    secret.write_text("def password():\n    return 'x'\n")
    return secret


def test_files_outside_the_folders_are_refused_however_they_are_named(
    editor: Editor, tools: Tools, outside: Path
) -> None:
    link = editor.workspace / "link.py"
    os.symlink(outside, link)
    for path in (str(outside), f"{editor.workspace}/../elsewhere/secret.py", str(link), "relative.py"):
        kind, message = tools.call("get_document_symbols", abspath=path)
        assert kind == "error", path
        assert "password" not in message
    kind, message = tools.call("find_def_locations", abspath=str(outside), line=1, character=6)
    assert kind == "error" and "outside the window's folders" in message


def test_definitions_outside_the_folders_are_left_out(editor: Editor, tools: Tools, outside: Path) -> None:
    editor.user.open_file(outside)  # in the open-files index, but not the window's folders
    editor.file("uses.py", "password()\n")
    answer = tools.call("find_def_locations", abspath=str(editor.workspace / "uses.py"), line=1, character=3)
    assert answer["locations"] == []


def test_a_missing_file_is_a_clear_error(editor: Editor, tools: Tools) -> None:
    kind, message = tools.call("get_document_symbols", abspath=str(editor.workspace / "gone.py"))
    assert kind == "error" and "no such file" in message


# --- how the agent gets them ---------------------------------------------------------------------


@pytest.fixture
def record(tmp_path: Path) -> Path:
    return tmp_path / "terminus-calls.jsonl"


def test_open_in_terminal_hands_qwen_the_config_file(editor: Editor, record: Path) -> None:
    install_terminus(editor.host, record)
    editor.settings({"qwen_command": ["/opt/node/bin/qwen", "--debug"]})
    editor.user.run_command("qwen_open_terminal")
    editor.host.wait_for(lambda: terminus_calls(record), timeout=WAIT)
    [args] = terminus_calls(record)
    companion = sys.modules[f"{PACKAGE}.plugin.companion.companions"].companions.get(editor.window)
    assert args["cmd"] == ["/opt/node/bin/qwen", "--debug", "--mcp-config", str(companion.mcp_config_file)]
    assert config_of(editor.host)["mcpServers"]["sublime-ide-tools"]["trust"] is True


def test_a_string_command_gets_the_option_quoted_for_its_shell(editor: Editor) -> None:
    cache = Path(editor.host.sublime.cache_path())
    assert " " not in str(cache)  # so the quoting below is the shell's, not a space's
    editor.settings({"qwen_command": "qwen --approval-mode default"})
    editor.user.run_command("qwen_copy_connect_command", {"shell": "posix"})
    companion = sys.modules[f"{PACKAGE}.plugin.companion.companions"].companions.get(editor.window)
    text = editor.host.run_on_main(editor.host.sublime.get_clipboard)
    last = text.strip().splitlines()[-1]
    assert last.endswith(f"&& qwen --approval-mode default --mcp-config {shlex.quote(str(companion.mcp_config_file))}")


def test_the_setting_off_means_no_tools_no_file_and_no_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, record: Path
) -> None:
    with open_editor(tmp_path, monkeypatch, load=False) as editor:
        install_terminus(editor.host, record)
        lock = editor.load([editor.workspace], {"ide_tools": False, "qwen_command": ["qwen"]})
        companion = sys.modules[f"{PACKAGE}.plugin.companion.companions"].companions.get(editor.window)
        assert companion.mcp_config_file is None and companion.ide_tools_url is None
        folder = Path(editor.host.sublime.cache_path(), "QwenCompanion", "ide-tools")
        assert not folder.exists() or not list(folder.iterdir())
        editor.user.run_command("qwen_open_terminal")
        editor.host.wait_for(lambda: terminus_calls(record), timeout=WAIT)
        assert terminus_calls(record)[0]["cmd"] == ["qwen"]
        client = McpClient(lock["port"], lock["authToken"], path="/ide-tools/mcp")
        assert client.post({"jsonrpc": "2.0", "id": 1, "method": "ping"}).status == 404


def test_closing_the_window_removes_its_config_file(editor: Editor) -> None:
    companion = sys.modules[f"{PACKAGE}.plugin.companion.companions"].companions.get(editor.window)
    config = companion.mcp_config_file
    assert config is not None and config.exists()
    editor.user.close_window(editor.window)
    editor.host.wait_for(lambda: not config.exists(), timeout=WAIT)


def test_a_chat_session_gets_the_tools_in_mcp_servers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with open_editor(tmp_path, monkeypatch, load=False) as editor:
        rig = ChatRig(editor, tmp_path)
        rig.load()
        rig.send("hello")
        rig.ended()
        [new] = rig.received("session/new")
        [server] = new["params"]["mcpServers"]
        expected = config_of(editor.host)["mcpServers"]["sublime-ide-tools"]
        assert server == {
            "type": "http",
            "name": "sublime-ide-tools",
            "url": expected["httpUrl"],
            "headers": [{"name": "Authorization", "value": expected["headers"]["Authorization"]}],
        }


def test_the_headless_driver_tells_what_open_in_terminal_would_run(tmp_path: Path) -> None:
    require_built()
    home, workspace = tmp_path / "home", (tmp_path / "workspace").resolve()
    workspace.mkdir()
    editor = HeadlessSublime(workspace, home)
    try:
        spec = editor.do("terminal_spec")
        assert spec["ok"] and "cmd" not in spec
        config = home / ".cache" / "sublime-text" / "Cache" / "QwenCompanion" / "ide-tools" / f"{editor.ready['port']}.json"
        assert spec["shell_cmd"] == f"qwen --mcp-config {shlex.quote(str(config))}"
        assert spec["cwd"] == str(workspace)
        assert spec["env"] == {
            "QWEN_CODE_IDE_SERVER_PORT": str(editor.ready["port"]),
            "QWEN_CODE_IDE_WORKSPACE_PATH": str(workspace),
        }
        assert config.exists()
        assert editor.quit()["ok"]
    finally:
        editor.kill()
    assert not config.exists()
