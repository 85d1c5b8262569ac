"""The simulator's symbols: a view's symbol list and the project's symbol
index, for Python and JavaScript, as Sublime reports them."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from tests.sublime_sim import SimulatedHost

PYTHON = '''class Greeter:
    def greet(self, name):
        return shout(name)


async def shout(text):
    return text.upper()
'''
JAVASCRIPT = '''export class Cart {
  total(items) {
    return sum(items);
  }
}

function sum(values) {
  return values.reduce((a, b) => a + b, 0);
}

const double = (x) => x * 2;
'''


def test_a_views_symbol_list_names_its_classes_and_functions(sim_host: SimulatedHost, tmp_path: Path) -> None:
    sublime = sim_host.sublime
    (tmp_path / "greet.py").write_text(PYTHON)
    view = sim_host.user.open_file(tmp_path / "greet.py")
    regions = view.symbol_regions()
    assert [(s.name, s.kind[2], view.substr(s.region)) for s in regions] == [
        ("Greeter", "Class", "Greeter"), ("greet", "Function", "greet"), ("shout", "Function", "shout")]
    assert {s.syntax for s in regions} == {"Python"} and {s.type for s in regions} == {sublime.SymbolType.DEFINITION}
    assert view.symbols() == [(s.region, s.name) for s in regions]
    assert [s.name for s in view.indexed_symbol_regions(sublime.SymbolType.REFERENCE)] == ["shout", "upper"]
    assert [name for _, name in view.indexed_references()] == ["shout", "upper"]


def test_javascript_classes_methods_functions_and_arrow_constants(sim_host: SimulatedHost, tmp_path: Path) -> None:
    (tmp_path / "cart.js").write_text(JAVASCRIPT)
    view = sim_host.user.open_file(tmp_path / "cart.js")
    assert [(s.name, s.kind[1]) for s in view.symbol_regions()] == [
        ("Cart", "c"), ("total", "f"), ("sum", "f"), ("double", "f")]


def test_plain_text_has_no_symbols(sim_host: SimulatedHost, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("def nothing():\n")
    assert sim_host.user.open_file(tmp_path / "notes.txt").symbol_regions() == []


def test_the_index_finds_definitions_in_closed_files_and_unsaved_text_in_open_ones(
    sim_host: SimulatedHost, tmp_path: Path
) -> None:
    sublime = sim_host.sublime
    project = tmp_path / "project"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "greet.py").write_text(PYTHON)
    (project / "other.py").write_text("def helper():\n    pass\n")
    window = sim_host.window
    sim_host.user.set_folders([project])
    found = window.symbol_locations("shout", sublime.SymbolSource.ANY, sublime.SymbolType.DEFINITION)
    assert [(loc.path, loc.display_name, loc.row, loc.col, loc.kind[2]) for loc in found] == [
        (str(project / "pkg" / "greet.py"), "project/pkg/greet.py", 6, 11, "Function")]
    references = window.symbol_locations("shout", type=sublime.SymbolType.REFERENCE)
    assert [(loc.row, loc.col) for loc in references] == [(3, 16)]
    assert window.symbol_locations("helper", sublime.SymbolSource.OPEN_FILES) == []
    view = sim_host.user.open_file(project / "other.py")
    sim_host.run_on_main(lambda: view.run_command("insert", {"characters": "\n\ndef helper2():\n    pass\n"}))
    # The caret is at the start: the new function comes first, unsaved.
    assert [loc.row for loc in window.symbol_locations("helper2", sublime.SymbolSource.OPEN_FILES)] == [3]
    assert window.symbol_locations("helper2", sublime.SymbolSource.INDEX) == []
    assert [loc.row for loc in window.lookup_symbol_in_index("Greeter")] == [1]
    assert window.symbol_locations("Greeter", kind_id=sublime.KindId.FUNCTION) == []


def parsed(window: Any, sym: str, source: Any) -> list[tuple[str, int, int, Any, str]]:
    """What a parse of every text now gives (what the index must answer)."""
    from tests.sublime_sim import _symbols
    from tests.sublime_sim._syntax import for_path

    sublime = sys.modules["sublime"]
    texts: dict[str, tuple[str, str]] = {}
    if source != sublime.SymbolSource.INDEX:
        for view in window.views():
            if view.file_name():
                texts[view.file_name()] = (view.substr(sublime.Region(0, view.size())), view.syntax().name)
    if source != sublime.SymbolSource.OPEN_FILES:
        for path in _symbols.project_files(window.folders()):
            texts.setdefault(path, (Path(path).read_text(), for_path(path).name))
    return [
        (path, text.count("\n", 0, found.begin) + 1, found.begin - text.rfind("\n", 0, found.begin), found.type,
         found.kind[2])
        for path, (text, syntax) in texts.items()
        for found in _symbols.indexed(text, syntax, sublime.SymbolType.ANY) if found.name == sym
    ]


def test_the_index_answers_what_a_parse_of_every_file_would_as_files_and_views_change(
    sim_host: SimulatedHost, tmp_path: Path
) -> None:
    sublime, window, user = sim_host.sublime, sim_host.window, sim_host.user
    project = tmp_path / "project"
    project.mkdir()
    (project / "greet.py").write_text(PYTHON)
    (project / "cart.js").write_text(JAVASCRIPT)
    user.set_folders([project])
    index = sim_host.app.symbol_index

    def check() -> None:
        for source in (sublime.SymbolSource.ANY, sublime.SymbolSource.INDEX, sublime.SymbolSource.OPEN_FILES):
            for name in ("shout", "sum", "Greeter", "helper", "shoot"):
                located = window.symbol_locations(name, source)
                assert [(loc.path, loc.row, loc.col, loc.type, loc.kind[2]) for loc in located] == parsed(
                    window, name, source), (name, source)

    check()
    parses = index.parses
    check()
    assert index.parses == parses  # nothing changed: nothing parsed again
    greet = project / "greet.py"
    before = greet.stat()
    greet.write_text(PYTHON.replace("shout", "shoot"))  # the same size, at once
    os.utime(greet, ns=(before.st_atime_ns, before.st_mtime_ns))  # and the same modification time
    check()
    (project / "more.py").write_text("def helper():\n    shout(1)\n")
    check()
    (project / "cart.js").unlink()
    check()
    view = user.open_file(project / "more.py")
    check()
    user.type(view, "def shout():\n    pass\n")  # unsaved: open files answer from the buffer
    check()
    user.type(view, "sum(2)\n")
    check()
    user.save(view)
    check()
    sim_host.run_on_main(lambda: view.assign_syntax("Packages/Text/Plain text.tmLanguage"))
    check()
    assert user.close(view)
    check()
