"""A language server's answers (0-based lines, UTF-16 characters) as the IDE
tools' answers (1-based lines, characters in code points)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from qwencompanion_src.core.files.text_positions import Position, code_points
from qwencompanion_src.core.ide_tools import lsp_results
from qwencompanion_src.core.ide_tools.lsp_results import Converter, lsp_position

SOURCE = Path(__file__).resolve().parents[2] / "QwenCompanion.sublime-package-src"
EMOJI_LINE = 'x = "\U0001f600"; y = 1'  # "y" is code point 9, UTF-16 unit 10


def lsp_range(line: int, start: int, end: int) -> dict[str, Any]:
    return {"start": {"line": line, "character": start}, "end": {"line": line, "character": end}}


def converter(texts: dict[str, str], paths: dict[str, str | None] | None = None) -> Converter:
    return Converter(texts.get, paths or {})


@pytest.mark.parametrize(("units", "points"), [(0, 0), (5, 5), (6, 6), (7, 6), (10, 9), (15, 14), (17, 16)])
def test_utf16_units_become_code_points(units: int, points: int) -> None:
    assert code_points(EMOJI_LINE, units) == points


def test_a_tool_position_becomes_an_lsp_position() -> None:
    text = "first\n" + EMOJI_LINE + "\n"
    assert lsp_position(text, Position(2, 10)) == {"line": 1, "character": 10}
    assert lsp_position(text, Position(1, 1)) == {"line": 0, "character": 0}
    assert lsp_position(text, Position(99, 1)) == {"line": 2, "character": 0}  # kept inside the text


def test_positions_without_the_files_text_are_taken_as_they_are() -> None:
    convert = converter({})
    assert convert.position("/gone.py", {"line": 3, "character": 13}) == Position(4, 14)


def test_document_symbols_as_a_tree_with_kind_names() -> None:
    result = [{
        "name": "Shelf", "kind": 5, "range": lsp_range(0, 0, 12), "selectionRange": lsp_range(0, 6, 11),
        "children": [{"name": "add", "kind": 6, "range": lsp_range(1, 4, 20), "selectionRange": lsp_range(1, 8, 11)}],
    }, {"name": "odd", "kind": 99, "range": lsp_range(3, 0, 1)}]
    symbols = lsp_results.document_symbols(result, "/p/shelf.py", converter({"/p/shelf.py": "x\n"}))
    assert [(s["name"], s["kind"]) for s in symbols] == [("Shelf", "Class"), ("odd", "Variable")]
    assert symbols[0]["selectionRange"]["start"] == {"line": 1, "character": 7}
    assert symbols[0]["children"][0]["kind"] == "Method"
    assert symbols[1]["selectionRange"] == symbols[1]["range"]  # none given: the whole range


def test_symbol_information_is_a_flat_list() -> None:
    result = [{"name": "y", "kind": 13, "location": {"uri": "file:///p/a.py", "range": lsp_range(0, 10, 11)}}]
    symbols = lsp_results.document_symbols(result, "/p/a.py", converter({"/p/a.py": EMOJI_LINE}))
    assert symbols == [{
        "name": "y", "kind": "Variable", "children": [],
        "range": {"start": {"line": 1, "character": 10}, "end": {"line": 1, "character": 11}},
        "selectionRange": {"start": {"line": 1, "character": 10}, "end": {"line": 1, "character": 11}},
    }]


def test_locations_links_and_nothing() -> None:
    paths = {"file:///p/a.py": "/p/a.py", "file:///lib/b.py": None, "untitled:1": None}
    convert = converter({"/p/a.py": EMOJI_LINE}, paths)
    one = {"uri": "file:///p/a.py", "range": lsp_range(0, 10, 11)}
    link = {"targetUri": "file:///p/a.py", "targetRange": lsp_range(0, 0, 20), "targetSelectionRange": lsp_range(0, 10, 11)}
    where = [{"abspath": "/p/a.py", "range": {"start": {"line": 1, "character": 10}, "end": {"line": 1, "character": 11}}}]
    assert lsp_results.locations(one, convert) == where
    assert lsp_results.locations([link], convert) == where
    assert lsp_results.locations([{"uri": "file:///lib/b.py", "range": lsp_range(0, 0, 1)}], convert) == []
    assert lsp_results.locations({"uri": "untitled:1", "range": lsp_range(0, 0, 1)}, convert) == []
    assert lsp_results.locations(None, convert) == []


def test_diagnostics_errors_first_and_only_files_the_tools_may_name() -> None:
    paths = {"file:///p/a.py": "/p/a.py", "file:///p/b.py": "/p/b.py", "file:///out.py": None}
    by_uri = {
        "file:///p/b.py": [{"range": lsp_range(2, 0, 1), "severity": 4, "message": "hint"}],
        "file:///p/a.py": [
            {"range": lsp_range(5, 0, 1), "severity": 2, "message": "warn", "source": "ruff", "code": 12},
            {"range": lsp_range(1, 0, 1), "message": "no severity is an error"},
        ],
        "file:///out.py": [{"range": lsp_range(0, 0, 1), "severity": 1, "message": "secret"}],
    }
    found = lsp_results.diagnostics(by_uri, converter({}, paths))
    assert [(d["abspath"], d["severity"], d["message"]) for d in found] == [
        ("/p/a.py", "Error", "no severity is an error"), ("/p/a.py", "Warning", "warn"), ("/p/b.py", "Hint", "hint"),
    ]
    assert found[1]["source"] == "ruff" and found[1]["code"] == 12
    assert "source" not in found[0] and "code" not in found[0]


def test_each_files_text_is_read_once() -> None:
    reads: list[str] = []

    def text_of(path: str) -> str:
        reads.append(path)
        return EMOJI_LINE

    convert = Converter(text_of, {})
    for _ in range(3):
        convert.range("/p/a.py", lsp_range(0, 10, 11))
    assert reads == ["/p/a.py"]


def test_the_uris_an_answer_names() -> None:
    result = [{"uri": "file:///a.py", "range": {}}, {"targetUri": "file:///b.py", "originSelectionRange": {}},
              {"children": [{"location": {"uri": "untitled:1"}}]}]
    assert lsp_results.uris_in(result) == {"file:///a.py", "file:///b.py", "untitled:1"}
    assert lsp_results.uris_in(None) == set()


def test_nothing_in_the_package_imports_lsp() -> None:
    """LSP is used only while Sublime has it loaded (`sys.modules`): importing
    it would load a disabled LSP."""
    for module in SOURCE.rglob("*.py"):
        for node in ast.walk(ast.parse(module.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            assert not any(n == "LSP" or n.startswith("LSP.") for n in names), module
