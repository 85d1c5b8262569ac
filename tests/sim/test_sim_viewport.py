"""The viewport: what is on screen, and what scrolls it (never the caret)."""

from __future__ import annotations

from tests.sublime_sim import SimulatedHost
from tests.sublime_sim._viewport import VISIBLE_ROWS
from tests.sublime_sim.sublime import View

LINES = 100


def numbered_view(sim_host: SimulatedHost) -> tuple[View, str]:
    view = sim_host.window.new_file()
    text = "".join(f"line {n}\n" for n in range(LINES))
    view.run_command("append", {"characters": text})
    return view, text


def test_a_new_view_shows_its_first_rows(sim_host: SimulatedHost) -> None:
    view, _ = numbered_view(sim_host)
    shown = view.visible_region()
    assert shown.begin() == 0
    assert view.substr(shown).count("\n") == VISIBLE_ROWS - 1
    assert not shown.contains(view.size())


def test_show_scrolls_to_a_point_and_leaves_the_caret(sim_host: SimulatedHost) -> None:
    view, _ = numbered_view(sim_host)
    sim_host.user.set_selection(view, [(5, 5)])
    end = view.size()
    view.show(end)
    assert view.visible_region().contains(end)
    assert [(r.a, r.b) for r in view.sel()] == [(5, 5)]
    top = view.visible_region().begin()
    view.show(end - 3)  # already visible: no scroll
    assert view.visible_region().begin() == top
    view.show_at_center(view.text_point(50, 0))
    middle = view.visible_region()
    assert view.rowcol(middle.begin())[0] == 50 - VISIBLE_ROWS // 2


def test_the_wheel_and_set_viewport_position_move_only_the_viewport(sim_host: SimulatedHost) -> None:
    view, _ = numbered_view(sim_host)
    sim_host.user.set_selection(view, [(0, 0)])
    sim_host.user.scroll_wheel(view, 10)
    assert view.rowcol(view.visible_region().begin())[0] == 10
    sim_host.user.scroll_wheel(view, -50)
    assert view.visible_region().begin() == 0
    view.set_viewport_position((0, 20 * view.line_height()), False)
    assert view.rowcol(view.visible_region().begin())[0] == 20
    assert [(r.a, r.b) for r in view.sel()] == [(0, 0)]


def test_plugin_edits_do_not_scroll_but_append_scroll_to_end_does(sim_host: SimulatedHost) -> None:
    view, _ = numbered_view(sim_host)
    view.run_command("append", {"characters": "more\n" * 50})
    assert view.visible_region().begin() == 0
    view.run_command("append", {"characters": "last", "scroll_to_end": True})
    assert view.visible_region().contains(view.size())


def test_typing_scrolls_the_caret_into_view(sim_host: SimulatedHost) -> None:
    view, _ = numbered_view(sim_host)
    end = view.size()
    sim_host.user.set_selection(view, [(end, end)])
    assert view.visible_region().begin() == 0  # selecting by API does not scroll
    sim_host.user.type(view, "x")
    assert view.visible_region().contains(view.size())
