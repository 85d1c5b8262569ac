"""The IDE tools over the window, with the BUILT package in the simulated
editor: search_project on unsaved text and never on excluded files,
find_references and get_hover from the index and from a language server,
the open editors and folders, open_file showing a place while the keys stay
where the user had them (refused outside the folders, for excluded files
and past ten a minute), and the build panel's errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sim.test_ide_tools import MAIN, SHELF, Tools
from tests.support.editor import Editor, open_editor, require_built
from tests.support.headless import HeadlessSublime
from tests.support.lsp import install_lsp
from tests.support.mcp_client import WAIT


@pytest.fixture
def editor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Editor]:
    with open_editor(tmp_path, monkeypatch) as editor:
        editor.file("shelf.py", SHELF)
        editor.file("main.py", MAIN)
        editor.file(".env", "API_TOKEN=shelf-secret\n")
        yield editor


@pytest.fixture
def tools(editor: Editor) -> Tools:
    return Tools(editor.host)


def text_of(tools: Tools, tool: str, **arguments: Any) -> tuple[bool, str]:
    result = tools.client.call(tool, arguments)
    return bool(result.get("isError")), result["content"][0]["text"]


# --- search_project -------------------------------------------------------------------------------


def test_search_finds_unsaved_text_and_never_an_excluded_file(editor: Editor, tools: Tools) -> None:
    view = editor.user.open_file(editor.workspace / "main.py")
    editor.user.replace(view, (0, 0), "TYPED_ONLY = 'shelf-secret'\n")
    error, text = text_of(tools, "search_project", query="TYPED_ONLY")
    assert not error and text == "main.py:1:1: TYPED_ONLY = 'shelf-secret'"
    error, text = text_of(tools, "search_project", query="shelf-secret")
    assert text == "main.py:1:15: TYPED_ONLY = 'shelf-secret'"  # not .env's line
    excluded = editor.user.open_file(editor.workspace / ".env")
    editor.user.replace(excluded, (0, 0), "UNSAVED_SECRET=1\n")
    assert text_of(tools, "search_project", query="UNSAVED_SECRET") == (False, "No matches.")


def test_a_dangerous_regex_is_refused_with_its_reason(tools: Tools) -> None:
    error, text = text_of(tools, "search_project", query="(x+)+y", regex=True)
    assert error and "nests a quantifier" in text


# --- references and hover -------------------------------------------------------------------------


def test_references_by_name_from_the_index(editor: Editor, tools: Tools) -> None:
    editor.file("id_rsa_tools.py", "def leak():\n    return count('id_rsa-secret')\n")  # excluded (id_rsa*)
    answer = tools.call("find_references", symbol="count")
    assert answer["references"] == [{"abspath": str(editor.workspace / "main.py"), "line": 7,
                                     "text": "return count(shelf)"}]
    assert tools.call("find_references")[0] == "error"


def test_references_and_hover_from_a_language_server(editor: Editor, tools: Tools) -> None:
    lsp = install_lsp(editor.host)
    shelf, main = editor.workspace / "shelf.py", editor.workspace / "main.py"
    secret = editor.workspace / ".env"

    def at(path: Path, line: int, start: int) -> dict[str, Any]:
        where = {"line": line, "character": start}
        return {"uri": lsp.filename_to_uri(str(path)), "range": {"start": where, "end": where}}

    server = lsp.FakeServer("LSP-pyright", ".py", {"referencesProvider", "hoverProvider"}, answers={
        "textDocument/references": lambda params: [at(shelf, 0, 6), at(main, 4, 12), at(main, 4, 12), at(secret, 0, 0)],
        "textDocument/hover": lambda params: {"contents": {"kind": "markdown", "value": "class Shelf()"}},
    })
    lsp.SERVERS.append(server)
    editor.user.open_file(main)
    answer = tools.call("find_references", path="main.py", line=5, column=13)
    assert answer["symbol"] == "Shelf"
    assert [(r["abspath"], r["line"], r["text"]) for r in answer["references"]] == [
        (str(main), 5, "shelf = Shelf()"), (str(shelf), 1, "class Shelf:"),
    ]
    assert answer["sources"] == ["Sublime Text's symbol index", "language server LSP-pyright"]
    assert server.requests[0][1]["context"] == {"includeDeclaration": True}
    hover = tools.call("get_hover", path=str(main), line=5, column=13)
    assert hover == {"symbol": "Shelf", "contents": "class Shelf()", "source": "language server LSP-pyright"}


def test_hover_without_a_server_tells_the_index(editor: Editor, tools: Tools) -> None:
    hover = tools.call("get_hover", path="main.py", line=5, column=13)
    assert hover["definitions"] == [{"abspath": str(editor.workspace / "shelf.py"), "line": 1, "column": 7,
                                     "kind": "Class"}]


def test_excluded_files_are_refused_by_every_tool(editor: Editor, tools: Tools) -> None:
    for tool, arguments in (("get_hover", {"path": ".env", "line": 1, "column": 1}),
                            ("find_references", {"path": ".env", "line": 1, "column": 1}),
                            ("open_file", {"path": ".env"})):
        error, text = text_of(tools, tool, **arguments)
        assert error and "excluded" in text and "shelf-secret" not in text
    kind, message = tools.call("get_document_symbols", abspath=str(editor.workspace / ".env"))
    assert kind == "error" and "excluded" in message


# --- the window -------------------------------------------------------------------------------------


def test_open_editors_and_folders(editor: Editor, tools: Tools) -> None:
    shelf = editor.user.open_file(editor.workspace / "shelf.py")
    editor.user.open_file(editor.workspace / ".env")
    main = editor.user.open_file(editor.workspace / "main.py")
    editor.user.replace(main, (0, 0), "# edit\n")
    editor.host.run_on_main(lambda: (main.sel().clear(), main.sel().add(editor.sublime.Region(9, 13))))
    answer = tools.call("get_open_editors")
    assert answer["editors"] == [
        {"abspath": str(editor.workspace / "shelf.py"), "dirty": False, "active": False,
         "selection": {"start": {"line": 1, "column": 1}, "end": {"line": 1, "column": 1}}, "syntax": "Python"},
        {"abspath": str(editor.workspace / "main.py"), "dirty": True, "active": True,
         "selection": {"start": {"line": 2, "column": 3}, "end": {"line": 2, "column": 7}}, "syntax": "Python"},
    ]
    assert "1 other tabs" in answer["note"]
    assert shelf.is_valid()
    assert tools.call("get_workspace_folders") == {"folders": [{"abspath": str(editor.workspace)}], "project_file": None}


def test_build_output_lists_the_errors_as_the_build_system_reads_them(editor: Editor, tools: Tools) -> None:
    assert tools.call("get_build_output")["note"] == "no build has run in this window"
    window = editor.window

    def build() -> None:  # what Default's exec.py does with a build's output
        panel = window.create_output_panel("exec")
        panel.settings().set("result_file_regex", r"^(..[^:]*):([0-9]+):?([0-9]+)?:? (.*)$")
        panel.settings().set("result_base_dir", str(editor.workspace))
        panel.run_command("append", {"characters": "main.py:5:13: error: Shelf is wrong\n/elsewhere/x.py:1: no\n"
                                                    "[Finished in 0.2s with exit code 1]\n", "force": True})

    editor.host.run_on_main(build)
    answer = tools.call("get_build_output")
    assert answer["errors"] == [{"abspath": str(editor.workspace / "main.py"), "line": 5, "column": 13,
                                 "message": "error: Shelf is wrong"}]
    assert answer["output"].endswith("[Finished in 0.2s with exit code 1]")


# --- open_file ---------------------------------------------------------------------------------------


def test_open_file_shows_the_place_and_leaves_the_keys_where_they_were(editor: Editor, tools: Tools) -> None:
    typing_in = editor.user.open_file(editor.workspace / "shelf.py")
    editor.host.run_on_main(lambda: (typing_in.sel().clear(), typing_in.sel().add(editor.sublime.Region(3, 3))))
    main = editor.workspace / "main.py"
    assert tools.call("open_file", path="main.py", line=4, end_line=5) == {"shown": {"abspath": str(main)}, "line": 4}
    shown = editor.host.wait_for(lambda: editor.window.find_open_file(str(main)), timeout=WAIT)
    editor.host.wait_for(lambda: shown.get_regions("qwen_ide_open_file"), timeout=WAIT)
    [region] = shown.get_regions("qwen_ide_open_file")
    assert shown.substr(region) == "def main():\n    shelf = Shelf()"
    editor.host.wait_idle()
    assert editor.host.app.focus_guard.take() == []
    assert editor.host.app.focused_view_id() == typing_in.id()
    assert [(r.a, r.b) for r in typing_in.sel()] == [(3, 3)]
    # Again on the file the user types in: shown there, their cursor untouched.
    tools.call("open_file", path="shelf.py", line=9)
    editor.host.wait_for(lambda: typing_in.get_regions("qwen_ide_open_file"), timeout=WAIT)
    assert editor.host.app.focused_view_id() == typing_in.id() and [(r.a, r.b) for r in typing_in.sel()] == [(3, 3)]
    assert editor.host.app.focus_guard.take() == []


def test_open_file_is_refused_outside_the_folders_and_past_ten_a_minute(editor: Editor, tools: Tools) -> None:
    outside = editor.root / "outside.py"
    outside.write_text("x = 1\n")
    error, text = text_of(tools, "open_file", path=str(outside))
    assert error and "outside the window's folders" in text
    for _ in range(10):
        assert not text_of(tools, "open_file", path="main.py")[0]
    error, text = text_of(tools, "open_file", path="main.py")
    assert error and "limited to 10 a minute" in text
    editor.host.wait_idle()


# --- the driver's verb ---------------------------------------------------------------------------------


def test_the_headless_driver_calls_a_tool_as_the_cli_would(tmp_path: Path) -> None:
    require_built()
    home, workspace = tmp_path / "home", (tmp_path / "workspace").resolve()
    workspace.mkdir()
    (workspace / "notes.txt").write_text("first\nthe needle\n")
    editor = HeadlessSublime(workspace, home)
    try:
        found = editor.do("ide_tool", name="search_project", args={"query": "needle"})
        assert found["ok"] and found["result"] == {"content": [{"type": "text", "text": "notes.txt:2:5: the needle"}],
                                                   "isError": False}
        refused = editor.do("ide_tool", name="search_project", args={"query": "(a*)*", "regex": True})
        assert refused["result"]["isError"] and "nests a quantifier" in refused["result"]["content"][0]["text"]
        folders = editor.do("ide_tool", name="get_workspace_folders")
        assert json.loads(folders["result"]["content"][0]["text"])["folders"] == [{"abspath": str(workspace)}]
        assert editor.quit()["ok"]
    finally:
        editor.kill()
