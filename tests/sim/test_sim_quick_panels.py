"""The simulator's quick panel, as strict as Sublime's: a second one while
one (or the command palette's input) is open is refused ("Quick Panel
Unavailable" in the console, no callback, sublime_text#6832); its input
takes the keys (the view loses them first, then the input gets them, and
back on close, as GitSavvy's focus listener relies on); Sublime losing the
keys to another application closes a panel not shown
KEEP_OPEN_ON_FOCUS_LOST; a WANT_EVENT panel gets the event with a pick only."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.sublime_sim import SimulatedHost
from tests.sublime_sim.fixtures import write_package

FOCUS_EVENTS = '''
import sublime_plugin

SEEN = []


class Focus(sublime_plugin.EventListener):
    def on_activated(self, view):
        SEEN.append(("activated", view.element() or view.id()))

    def on_deactivated(self, view):
        SEEN.append(("deactivated", view.element() or view.id()))
'''


def test_a_second_quick_panel_is_refused_with_no_callback(sim_host: SimulatedHost) -> None:
    window = sim_host.window
    first: list[int] = []
    second: list[int] = []
    window.show_quick_panel(["the user's"], first.append)
    window.show_quick_panel(["the agent's question"], second.append)
    sim_host.wait_idle()
    assert [q.items for q in sim_host.quick_panels] == [["the user's"]]  # the first stays, the second never shows
    assert sim_host.console[-1] == "Quick Panel Unavailable"
    sim_host.user.cancel_quick_panel()
    assert first == [-1] and second == []  # the refused one is never called back
    window.show_quick_panel(["now"], second.append)  # once the first closed, a panel shows
    sim_host.user.choose_quick_panel(0)
    assert second == [0]


def test_the_command_palettes_input_refuses_a_quick_panel_too(sim_host: SimulatedHost) -> None:
    write_package(sim_host.packages_dir, "Ask", {"ask.py": '''
import sublime_plugin

class AskNameCommand(sublime_plugin.WindowCommand):
    def run(self, name):
        pass

    def input(self, args):
        return NameInputHandler()

class NameInputHandler(sublime_plugin.TextInputHandler):
    pass
'''})
    sim_host.load_package("Ask")
    sim_host.user.run_command("ask_name")  # the palette asks its input
    got: list[int] = []
    sim_host.window.show_quick_panel(["a"], got.append)
    assert sim_host.quick_panels == [] and sim_host.console[-1] == "Quick Panel Unavailable"
    sim_host.user.cancel_command_input()
    sim_host.window.show_quick_panel(["a"], got.append)
    assert len(sim_host.quick_panels) == 1


def test_a_quick_panels_input_takes_the_keys_and_gives_them_back(sim_host: SimulatedHost, packages_dir: Path) -> None:
    code = sim_host.window.new_file()
    write_package(packages_dir, "Focus", {"focus.py": FOCUS_EVENTS})
    sim_host.load_package("Focus")
    seen: list[Any] = sys.modules["Focus.focus"].SEEN
    seen.clear()
    sim_host.window.show_quick_panel(["a"], lambda index: seen.append(("picked", index)))
    assert seen == [("deactivated", code.id()), ("activated", "goto_anything:input")]
    seen.clear()
    sim_host.user.choose_quick_panel(0)
    assert seen == [("deactivated", "goto_anything:input"), ("activated", code.id()), ("picked", 0)]


@pytest.mark.parametrize(("keep_open", "answers"), [(False, [-1]), (True, [])])
def test_sublime_losing_the_keys_closes_a_quick_panel_unless_it_keeps_open(
        sim_host: SimulatedHost, packages_dir: Path, keep_open: bool, answers: list[int]) -> None:
    sublime = sim_host.sublime
    code = sim_host.window.new_file()
    write_package(packages_dir, "Focus", {"focus.py": FOCUS_EVENTS})
    sim_host.load_package("Focus")
    seen: list[Any] = sys.modules["Focus.focus"].SEEN
    got: list[int] = []
    flags = sublime.QuickPanelFlags.KEEP_OPEN_ON_FOCUS_LOST if keep_open else sublime.QuickPanelFlags.NONE
    sim_host.window.show_quick_panel(["Allow", "Refuse"], got.append, flags)
    seen.clear()
    sim_host.user.leave_app()  # the user looks at their browser
    sim_host.wait_idle()
    assert seen[0] == ("deactivated", "goto_anything:input")  # the keys were in the panel
    assert got == answers
    sim_host.user.return_to_app()
    if keep_open:
        assert seen[-1] == ("activated", "goto_anything:input")  # back in the panel kept open
        sim_host.user.choose_quick_panel(1)
        assert got == [1]
    else:
        assert seen[-1] == ("activated", code.id())


def test_a_want_event_panel_gets_the_event_with_a_pick_only(sim_host: SimulatedHost) -> None:
    sublime = sim_host.sublime
    calls: list[tuple[Any, ...]] = []
    for _ in range(2):
        sim_host.window.show_quick_panel(["a"], lambda *args: calls.append(args), sublime.QuickPanelFlags.WANT_EVENT)
        sim_host.user.choose_quick_panel(0, modifiers=("shift",)) if not calls else sim_host.user.cancel_quick_panel()
    assert calls == [(0, {"modifier_keys": {"shift": True}}), (-1,)]


def test_the_command_palette_takes_the_keys_from_the_view_and_gives_them_back(
        sim_host: SimulatedHost, packages_dir: Path) -> None:
    """Opening the palette deactivates the view, then activates the palette's
    input; Esc the other way round; a quick panel meanwhile is refused."""
    code = sim_host.window.new_file()
    write_package(packages_dir, "Focus", {"focus.py": FOCUS_EVENTS})
    sim_host.load_package("Focus")
    seen: list[Any] = sys.modules["Focus.focus"].SEEN
    seen.clear()
    sim_host.user.open_command_palette()
    assert seen == [("deactivated", code.id()), ("activated", "command_palette:input")]
    got: list[int] = []
    sim_host.window.show_quick_panel(["a"], got.append)
    assert sim_host.quick_panels == [] and sim_host.console[-1] == "Quick Panel Unavailable"
    seen.clear()
    sim_host.user.close_command_palette()
    assert seen == [("deactivated", "command_palette:input"), ("activated", code.id())]
    sim_host.user.open_command_palette()
    seen.clear()
    sim_host.user.leave_app()  # the palette closes when Sublime loses the keys
    sim_host.wait_idle()
    assert seen == [("deactivated", "command_palette:input")]
    sim_host.user.return_to_app()
    assert seen[-1] == ("activated", code.id())
