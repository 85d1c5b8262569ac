"""Region, Selection and the text queries of View."""

from __future__ import annotations

import pytest

from tests.sublime_sim import SimulatedHost
from tests.sublime_sim.sublime import IGNORECASE, LITERAL, REVERSE, Region


def test_region_basics() -> None:
    r = Region(5, 2)
    assert (r.a, r.b, r.begin(), r.end(), r.size(), len(r)) == (5, 2, 2, 5, 3, 3)
    assert r.to_tuple() == (5, 2)
    assert not r.empty() and Region(3).empty()
    assert Region(3) == Region(3, 3) and Region(1, 2) != Region(2, 1)
    assert Region(1, 2, xpos=7) == Region(1, 2)
    assert 2 in r and 5 in r and 6 not in r
    assert Region(3, 4) in r and r.contains(Region(2, 5)) and not r.contains(Region(1, 3))
    assert list(Region(2, 5)) == [2, 3, 4]
    assert Region(1, 3) < Region(2, 3) and Region(1, 2) < Region(1, 3)
    assert repr(Region(1, 2)) == "Region(1, 2)" and str(Region(1, 2)) == "(1, 2)"
    with pytest.raises(TypeError):
        hash(Region(1, 2))  # unhashable, as in Sublime


def test_region_set_operations() -> None:
    assert Region(0, 3).cover(Region(5, 8)) == Region(0, 8)
    assert Region(3, 0).cover(Region(5, 8)) == Region(8, 0)  # keeps direction
    assert Region(0, 5).intersection(Region(3, 8)) == Region(3, 5)
    assert Region(0, 3).intersection(Region(3, 8)) == Region(0)
    assert Region(0, 5).intersects(Region(4, 9))
    assert not Region(0, 5).intersects(Region(5, 9))  # touching is not intersecting
    assert Region(4).intersects(Region(4))


def test_selection_sorted_and_merged(sim_host: SimulatedHost) -> None:
    view = sim_host.window.new_file()
    view.run_command("insert", {"characters": "0123456789abcdef"})
    sel = view.sel()
    sel.clear()
    assert len(sel) == 0 and not sel
    sel.add(Region(10, 12))
    sel.add(Region(2, 4))
    sel.add(8)
    assert list(sel) == [Region(2, 4), Region(8), Region(10, 12)]
    sel.add(Region(3, 6))  # overlaps (2, 4)
    assert list(sel) == [Region(2, 6), Region(8), Region(10, 12)]
    sel.add(Region(6, 8))  # touches both neighbours
    assert list(sel) == [Region(2, 8), Region(10, 12)]
    sel.add(Region(14, 12))  # reversed and adjacent: merged, direction of the added region
    assert list(sel) == [Region(2, 8), Region(14, 10)]
    sel.add(12)  # a caret inside a region disappears into it
    assert len(sel) == 2
    assert sel.contains(Region(3, 5)) and not sel.contains(Region(7, 11))
    sel.subtract(Region(4, 6))
    assert list(sel) == [Region(2, 4), Region(6, 8), Region(14, 10)]
    del sel[0]
    assert sel[0] == Region(6, 8) and sel[-1] == Region(14, 10)
    with pytest.raises(IndexError):
        sel[5]
    sel.add_all([0, Region(1, 1)])
    assert sel[0] == Region(0) and sel[1] == Region(1)
    assert sel.has_empty_region() and sel.has_non_empty_region() and sel.has_multiple_non_empty_regions()
    sel.add(Region(100, 200))  # clamped to the buffer
    assert sel[-1] == Region(16, 16)


def test_selection_follows_edits(sim_host: SimulatedHost) -> None:
    view = sim_host.window.new_file()
    view.run_command("insert", {"characters": "hello world"})
    view.sel().clear()
    view.sel().add(Region(6, 11))
    view.add_regions("mark", [Region(0, 5)])
    view.sel().add(0)
    view.run_command("insert", {"characters": ">> "})  # at the caret and over "world"
    assert view.substr(Region(0, view.size())) == ">> hello >> "
    assert list(view.sel()) == [Region(3), Region(12)]
    assert view.get_regions("mark") == [Region(3, 8)]


def test_text_queries(sim_host: SimulatedHost) -> None:
    view = sim_host.window.new_file()
    view.run_command("insert", {"characters": "first line\nsécond 😀 line\n\nlast"})
    text = view.substr(Region(0, view.size()))
    assert view.size() == len(text)
    assert view.substr(0) == "f" and view.substr(view.size()) == "\x00"
    emoji = text.index("😀")
    # rowcol counts code points (Unicode characters), the utf variants code units.
    assert view.rowcol(emoji + 1) == (1, 8)
    assert view.rowcol_utf16(emoji + 1) == (1, 9)
    assert view.rowcol_utf8(emoji + 1) == (1, 12)
    assert view.text_point(1, 8) == emoji + 1
    assert view.text_point_utf16(1, 9) == emoji + 1
    assert view.text_point_utf8(1, 12) == emoji + 1
    assert view.text_point(0, 99, clamp_column=True) == 10
    assert view.utf16_code_units() == len(text) + 1
    assert view.line(3) == Region(0, 10) and view.full_line(3) == Region(0, 11)
    assert view.line(Region(3, 13)) == Region(0, 24)
    assert view.lines(Region(0, view.size())) == [Region(0, 10), Region(11, 24), Region(25, 25), Region(26, 30)]
    assert view.split_by_newlines(Region(5, 15)) == [Region(5, 10), Region(11, 15)]
    assert view.word(2) == Region(0, 5)
    assert view.find(r"l\w+", 0) == Region(6, 10)
    assert view.find("LINE", 11, IGNORECASE) == Region(20, 24)
    assert view.find("nope", 0) == Region(-1, -1)
    assert view.find("line", 30, REVERSE) == Region(20, 24)
    extractions: list[str] = []
    found = view.find_all(r"(\w+) line", 0, "<$1>", extractions)
    assert found == [Region(0, 10)] and extractions == ["<first>"]
    assert view.find_all(".", LITERAL) == []
    assert view.find_all("line", 0, within=Region(11, 30)) == [Region(20, 24)]


def test_an_empty_phantom_region_stays_before_text_inserted_at_it(sim_host: SimulatedHost) -> None:
    """Sublime documents no rule for an empty phantom region where text is
    inserted: the simulator leaves it before the text (a package that needs it
    after redraws it), and moves it with text inserted before it."""
    sublime = sim_host.sublime
    view = sim_host.window.new_file()
    view.run_command("append", {"characters": "ab"})
    at_end = view.add_phantom("end", Region(2), "<b>x</b>", sublime.PhantomLayout.BLOCK)
    view.run_command("append", {"characters": "cd"})
    assert view.query_phantom(at_end) == [Region(2)]
    view.sel().clear()
    view.sel().add(Region(0))
    view.run_command("insert", {"characters": "Z"})
    assert view.query_phantom(at_end) == [Region(3)]  # text before it moves it
