"""The simulator's symbols: a view's symbol list and the project's symbol
index, for Python and JavaScript, as Sublime reports them."""

from __future__ import annotations

from pathlib import Path

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
