"""Focus only by the user: the focus guard, and what a focus change does to an
open quick panel (Sublime closes it, its callback getting -1, unless it was
shown with KEEP_OPEN_ON_FOCUS_LOST)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.sublime_sim import SimulatedHost
from tests.sublime_sim.fixtures import write_package

TWO_COLUMNS = {"cols": [0.0, 0.5, 1.0], "rows": [0.0, 1.0], "cells": [[0, 0, 1, 1], [1, 0, 2, 1]]}


def from_a_plugin_thread(sim_host: SimulatedHost, fn: Callable[[], object]) -> None:
    """`fn` on the main thread by `set_timeout` from a thread of the plugin's own
    (a reply arriving from an agent): nothing the user did."""
    thread = threading.Thread(target=lambda: sim_host.sublime.set_timeout(fn))
    thread.start()
    thread.join()
    sim_host.wait_idle()


def violations(sim_host: SimulatedHost) -> list[str]:
    return [v.what for v in sim_host.app.focus_guard.take()]


@pytest.mark.parametrize("move", ["focus_view", "focus_group", "set_view_index", "focus_command", "new_file"])
def test_a_callback_the_user_did_not_start_may_not_move_the_keys(sim_host: SimulatedHost, move: str) -> None:
    window = sim_host.window
    window.set_layout(TWO_COLUMNS)
    code = window.new_file()
    window.focus_group(1)
    other = window.new_file()
    sim_host.user.focus(code)
    assert violations(sim_host) == []  # everything the test did, the user did
    moves: dict[str, Callable[[], object]] = {
        "focus_view": lambda: window.focus_view(other),
        "focus_group": lambda: window.focus_group(1),
        "set_view_index": lambda: window.set_view_index(other, 0, 0),  # a tab brought in front of the keys' one
        "focus_command": lambda: window.run_command("focus_group", {"group": 1}),
        "new_file": window.new_file,  # a new tab takes the keys and nobody gives them back
    }
    from_a_plugin_thread(sim_host, moves[move])
    found = violations(sim_host)
    assert len(found) == 1 and "sublime-main" in found[0]
    sim_host.user.focus(code)


def test_the_keys_may_go_along_with_their_view_to_another_group(sim_host: SimulatedHost) -> None:
    window = sim_host.window
    window.set_layout(TWO_COLUMNS)
    code = window.new_file()
    from_a_plugin_thread(sim_host, lambda: window.set_view_index(code, 1, 0))
    assert violations(sim_host) == [] and sim_host.app.focused_view_id() == code.id()


def test_showing_a_tab_and_giving_the_keys_back_is_no_violation(sim_host: SimulatedHost) -> None:
    window = sim_host.window
    window.set_layout(TWO_COLUMNS)
    code = window.new_file()

    def review() -> None:  # what a review does: a new tab beside, the keys back in the code
        window.focus_group(1)
        window.new_file()
        window.focus_view(code)

    from_a_plugin_thread(sim_host, review)
    assert violations(sim_host) == []
    assert sim_host.app.focused_view_id() == code.id() and window.active_view_in_group(1) is not None


def test_closing_the_view_with_the_keys_lets_them_go_to_another_but_no_further(sim_host: SimulatedHost) -> None:
    """When the view (or empty group) with the keys closes, Sublime must give
    them to another view: that takes nothing from the user. A later move
    away from where they landed is a violation again."""
    window = sim_host.window
    window.set_layout(TWO_COLUMNS)
    code = window.new_file()
    window.focus_group(1)
    beside = window.new_file()
    other = window.new_file()
    sim_host.user.focus(beside)

    def close_and_fold() -> None:  # what a closing review does: its tab goes, then its group
        beside.close()
        other.close()
        window.set_layout({"cols": [0.0, 1.0], "rows": [0.0, 1.0], "cells": [[0, 0, 1, 1]]})

    from_a_plugin_thread(sim_host, close_and_fold)
    assert violations(sim_host) == [] and sim_host.app.focused_view_id() == code.id()
    third = window.new_file()
    sim_host.user.focus(code)
    from_a_plugin_thread(sim_host, lambda: window.focus_view(third))
    assert len(violations(sim_host)) == 1
    sim_host.user.focus(code)


def test_keys_taken_and_given_back_only_after_the_user_moved_them_stay_a_violation(sim_host: SimulatedHost) -> None:
    window = sim_host.window
    window.set_layout(TWO_COLUMNS)
    code = window.new_file()
    window.focus_group(1)
    other = window.new_file()
    sim_host.user.focus(code)
    from_a_plugin_thread(sim_host, lambda: window.focus_view(other))
    sim_host.user.focus(code)  # the user takes them back: the move stands
    assert len(violations(sim_host)) == 1


FOCUS_LATER = """
import sublime, sublime_plugin

class FocusLaterCommand(sublime_plugin.WindowCommand):
    def run(self, first, then, twice=False):
        self.window.focus_view(sublime.View(first))  # the command itself
        sublime.set_timeout(lambda: self.later(first, then, twice))

    def later(self, first, then, twice):
        self.window.focus_view(sublime.View(then))  # its continuation, once the main thread is free
        if twice:  # a timer of the continuation (a polling loop): no longer the user's
            sublime.set_timeout(lambda: self.window.focus_view(sublime.View(first)))
"""


def test_a_command_the_user_runs_may_focus_now_and_in_its_own_continuation_only(sim_host: SimulatedHost) -> None:
    write_package(sim_host.packages_dir, "FocusLater", {"focus_later.py": FOCUS_LATER})
    sim_host.load_package("FocusLater")
    window = sim_host.window
    window.set_layout(TWO_COLUMNS)
    code = window.new_file()
    window.focus_group(1)
    other = window.new_file()
    sim_host.user.focus(code)
    sim_host.user.run_command("focus_later", {"first": other.id(), "then": code.id()})
    sim_host.wait_idle()
    assert violations(sim_host) == [] and sim_host.app.focused_view_id() == code.id()
    sim_host.user.run_command("focus_later", {"first": other.id(), "then": code.id(), "twice": True})
    sim_host.wait_idle()
    assert len(violations(sim_host)) == 1
    sim_host.user.focus(code)


def test_the_guard_fails_the_test_when_the_host_closes(packages_dir: Path) -> None:
    host = SimulatedHost(packages_dir)
    window = host.window
    window.set_layout(TWO_COLUMNS)
    window.new_file()
    from_a_plugin_thread(host, lambda: window.focus_group(1))
    with pytest.raises(AssertionError, match="not made by the user"):
        host.close()


@pytest.mark.parametrize(("keep_open", "answers"), [(False, [-1]), (True, [])])
def test_a_focus_change_closes_an_open_quick_panel_unless_it_keeps_open(
    sim_host: SimulatedHost, keep_open: bool, answers: list[int]
) -> None:
    sublime = sim_host.sublime
    window = sim_host.window
    window.set_layout(TWO_COLUMNS)
    code = window.new_file()
    window.focus_group(1)
    other = window.new_file()
    got: list[int] = []
    flags = sublime.QuickPanelFlags.KEEP_OPEN_ON_FOCUS_LOST if keep_open else sublime.QuickPanelFlags.NONE
    window.show_quick_panel(["Allow", "Reject"], got.append, flags)
    sim_host.user.focus(code)  # a click on another tab
    sim_host.wait_idle()
    assert got == answers
    if keep_open:
        sim_host.user.choose_quick_panel(1)
        assert got == [1]
    window.show_quick_panel(["a"], got.append)
    sim_host.user.focus(code)  # the tab that has the keys already: nothing moves
    sim_host.wait_idle()
    assert [q.done for q in sim_host.quick_panels][-1] is False
    sim_host.user.focus(other)
    sim_host.wait_idle()
    assert got[-1] == -1
