"""The IDE tools asking the LSP package's language servers (a stand-in LSP
with scripted servers) with the BUILT package: positions converted both
ways, places outside the window's folders left out, and Sublime's index
when no server serves the file, the server fails or is silent, or LSP is
disabled."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sim.test_ide_tools import MAIN, SHELF, Tools
from tests.support.editor import PACKAGE, Editor, open_editor
from tests.support.lsp import install_lsp

# A symbol after a character outside the BMP: its LSP (UTF-16) character is
# one more than its character in code points.
EMOJI = 'LABEL = "\U0001f600"; VALUE = 1\n'
INDEX = "Sublime Text's symbol index"


def lsp_range(line: int, start: int, end_line: int, end: int) -> dict[str, Any]:
    return {"start": {"line": line, "character": start}, "end": {"line": end_line, "character": end}}


tool_range = lsp_range  # the same shape; the numbers differ


class Rig:
    def __init__(self, editor: Editor, lsp: Any) -> None:
        self.editor = editor
        self.lsp = lsp

    def uri(self, path: Path) -> str:
        return str(self.lsp.filename_to_uri(str(path)))

    def server(self, **kwargs: Any) -> Any:
        kwargs.setdefault("capabilities", {"documentSymbolProvider", "definitionProvider", "typeDefinitionProvider"})
        server = self.lsp.FakeServer(**kwargs)
        self.lsp.SERVERS.append(server)
        return server


@pytest.fixture
def rig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Rig]:
    with open_editor(tmp_path, monkeypatch) as editor:
        editor.file("shelf.py", SHELF)
        editor.file("main.py", MAIN)
        editor.file("labels.py", EMOJI)
        editor.file("web/cart.js", "function checkout(cart) {\n  return cart;\n}\n")
        yield Rig(editor, install_lsp(editor.host))


@pytest.fixture
def tools(rig: Rig) -> Tools:
    return Tools(rig.editor.host)


# --- answers from the language server ---------------------------------------------------------


def test_document_symbols_of_an_open_file_come_from_its_language_server(rig: Rig, tools: Tools) -> None:
    labels = rig.editor.workspace / "labels.py"
    server = rig.server(name="LSP-pyright", suffix=".py", answers={
        "textDocument/documentSymbol": lambda params: [
            {"name": "LABEL", "kind": 14, "range": lsp_range(0, 0, 0, 12), "selectionRange": lsp_range(0, 0, 0, 5)},
            {"name": "VALUE", "kind": 13, "range": lsp_range(0, 14, 0, 23), "selectionRange": lsp_range(0, 14, 0, 19),
             "children": [{"name": "inner", "kind": 12, "range": lsp_range(0, 22, 0, 23),
                           "selectionRange": lsp_range(0, 22, 0, 23)}]},
        ]})
    rig.editor.user.open_file(labels)
    answer = tools.call("get_document_symbols", abspath=str(labels))
    assert answer["source"] == "language server LSP-pyright"
    assert [(s["name"], s["kind"], s["selectionRange"]) for s in answer["symbols"]] == [
        ("LABEL", "Constant", tool_range(1, 1, 1, 6)),
        ("VALUE", "Variable", tool_range(1, 14, 1, 19)),  # UTF-16 14..19 are code points 13..18
    ]
    assert answer["symbols"][1]["children"][0]["name"] == "inner"
    assert answer["symbols"][1]["children"][0]["kind"] == "Function"
    assert server.requests == [("textDocument/documentSymbol", {"textDocument": {"uri": rig.uri(labels)}})]


def test_definitions_send_an_lsp_position_and_keep_to_the_folders(rig: Rig, tools: Tools, tmp_path: Path) -> None:
    labels, shelf = rig.editor.workspace / "labels.py", rig.editor.workspace / "shelf.py"
    outside = tmp_path / "site-packages" / "builtins.pyi"
    outside.parent.mkdir()
    outside.write_text("VALUE: int\n")
    server = rig.server(name="LSP-pyright", suffix=".py", answers={
        "textDocument/definition": lambda params: [
            {"targetUri": rig.uri(shelf), "targetRange": lsp_range(0, 0, 5, 0),
             "targetSelectionRange": lsp_range(0, 6, 0, 11)},
            {"targetUri": rig.uri(outside), "targetRange": lsp_range(0, 0, 0, 5),
             "targetSelectionRange": lsp_range(0, 0, 0, 5)},
        ]})
    rig.editor.user.open_file(labels)
    answer = tools.call("find_def_locations", abspath=str(labels), line=1, character=15)  # on VALUE
    assert answer == {
        "symbol": "VALUE", "source": "language server LSP-pyright",
        "locations": [{"abspath": str(shelf), "range": tool_range(1, 7, 1, 12)}],
    }
    method, params = server.requests[-1]
    assert method == "textDocument/definition"
    assert params["position"] == {"line": 0, "character": 15}  # code point 14 (0-based) is UTF-16 unit 15


def test_type_definitions_come_from_the_language_server(rig: Rig, tools: Tools) -> None:
    main, shelf = rig.editor.workspace / "main.py", rig.editor.workspace / "shelf.py"
    rig.server(name="LSP-pyright", suffix=".py", answers={
        "textDocument/typeDefinition": lambda params: {"uri": rig.uri(shelf), "range": lsp_range(0, 6, 0, 11)},
    })
    rig.editor.user.open_file(main)
    answer = tools.call("find_type_def_locations", abspath=str(main), line=5, character=5)  # `shelf`
    assert answer["locations"] == [{"abspath": str(shelf), "range": tool_range(1, 7, 1, 12)}]
    assert "note" not in answer


def test_diagnostics_of_the_window_and_of_one_file(rig: Rig, tools: Tools, tmp_path: Path) -> None:
    main, shelf = rig.editor.workspace / "main.py", rig.editor.workspace / "shelf.py"
    warning = {"range": lsp_range(4, 4, 4, 9), "severity": 2, "message": "unused", "source": "Pyright"}
    error = {"range": lsp_range(0, 0, 0, 4), "severity": 1, "message": "bad import", "code": "E1"}
    rig.server(name="LSP-pyright", suffix=".py", diagnostics={
        rig.uri(main): [warning, error],
        rig.uri(shelf): [{"range": lsp_range(8, 0, 8, 3), "severity": 3, "message": "info"}],
        rig.uri(tmp_path / "elsewhere.py"): [error],
    })
    everything = tools.call("get_diagnostics")
    assert everything["source"] == "language server LSP-pyright"
    assert [(d["abspath"], d["severity"], d["range"]["start"]["line"]) for d in everything["diagnostics"]] == [
        (str(main), "Error", 1), (str(main), "Warning", 5), (str(shelf), "Information", 9),
    ]
    assert everything["diagnostics"][0]["code"] == "E1"
    assert everything["diagnostics"][1]["source"] == "Pyright"
    one = tools.call("get_diagnostics", abspath=str(shelf))  # a closed file too
    assert [d["message"] for d in one["diagnostics"]] == ["info"]


# --- Sublime's index instead ------------------------------------------------------------------------


def test_a_file_no_server_serves_is_answered_from_the_index(rig: Rig, tools: Tools) -> None:
    server = rig.server(name="LSP-pyright", suffix=".py", answers={})
    cart = rig.editor.workspace / "web" / "cart.js"
    rig.editor.user.open_file(cart)
    answer = tools.call("get_document_symbols", abspath=str(cart))
    assert answer["source"] == INDEX
    assert [s["name"] for s in answer["symbols"]] == ["checkout"]
    closed = tools.call("get_document_symbols", abspath=str(rig.editor.workspace / "shelf.py"))
    assert closed["source"] == INDEX  # LSP serves open files only
    assert server.requests == []


def test_a_server_without_the_capability_is_not_asked(rig: Rig, tools: Tools) -> None:
    server = rig.server(name="LSP-ruff", suffix=".py", capabilities={"documentSymbolProvider"}, answers={})
    main = rig.editor.workspace / "main.py"
    rig.editor.user.open_file(main)
    answer = tools.call("find_type_def_locations", abspath=str(main), line=5, character=13)
    assert answer["locations"] == [] and "language server" in answer["note"]
    assert server.requests == []


def test_a_failing_server_falls_back_to_the_index_and_says_so(rig: Rig, tools: Tools) -> None:
    def fail(params: Any) -> Any:
        raise RuntimeError("server crashed")

    rig.server(name="LSP-pyright", suffix=".py", answers={"textDocument/definition": fail})
    main = rig.editor.workspace / "main.py"
    rig.editor.user.open_file(main)
    answer = tools.call("find_def_locations", abspath=str(main), line=5, character=13)
    assert answer["source"] == INDEX
    assert [loc["range"]["start"]["line"] for loc in answer["locations"]] == [1]
    assert "LSP-pyright, which failed (server crashed)" in answer["note"]


def test_a_silent_server_is_not_waited_for(rig: Rig, tools: Tools, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.modules[f"{PACKAGE}.plugin.ide_tools.language_servers"], "LSP_TIMEOUT", 0.3)
    server = rig.server(name="LSP-pyright", suffix=".py", silent={"textDocument/documentSymbol"}, answers={
        "textDocument/definition": lambda params: [],
    })
    main = rig.editor.workspace / "main.py"
    rig.editor.user.open_file(main)
    answer = tools.call("get_document_symbols", abspath=str(main))
    assert answer["source"] == INDEX
    assert [s["name"] for s in answer["symbols"]] == ["main"]
    assert "LSP-pyright, which failed (no answer within 0.3 s)" in answer["note"]
    again = tools.call("find_def_locations", abspath=str(main), line=5, character=13)
    assert again["source"] == "language server LSP-pyright" and again["locations"] == []
    assert [method for method, _ in server.requests] == ["textDocument/documentSymbol", "textDocument/definition"]


def test_a_disabled_lsp_is_not_asked(rig: Rig, tools: Tools) -> None:
    server = rig.server(name="LSP-pyright", suffix=".py", answers={"textDocument/documentSymbol": lambda params: []})
    main = rig.editor.workspace / "main.py"
    rig.editor.user.open_file(main)
    assert tools.call("get_document_symbols", abspath=str(main))["source"] == "language server LSP-pyright"
    rig.editor.host.disable_package("LSP")  # its modules stay imported; its sessions end
    answer = tools.call("get_document_symbols", abspath=str(main))
    assert answer["source"] == INDEX and "note" not in answer
    assert tools.call("get_diagnostics")["diagnostics"] == []
    assert len(server.requests) == 1
