"""The incremental diff: a view's reference document and Sublime's commands on
its hunks (revert_hunk, toggle_inline_diff, next_/prev_modification) and keys."""

from __future__ import annotations

from typing import Any

import pytest

from tests.sublime_sim import SimulatedHost

REFERENCE = "one\ntwo\nthree\nfour\nfive\n"


def text(host: SimulatedHost, view: Any) -> str:
    return host.run_on_main(lambda: view.substr(host.sublime.Region(0, view.size())))  # type: ignore[no-any-return]


def edited(host: SimulatedHost, now: str) -> Any:
    """A view whose reference is REFERENCE and whose text is `now` (one command)."""
    view = host.user.new_file()
    host.run_on_main(lambda: view.run_command("append", {"characters": REFERENCE}))
    host.run_on_main(lambda: view.set_reference_document(REFERENCE))
    host.run_on_main(lambda: view.run_command("select_all"))
    host.run_on_main(lambda: view.run_command("insert", {"characters": now}))
    return view


def carets(host: SimulatedHost, view: Any) -> list[int]:
    return host.run_on_main(lambda: [r.b for r in view.sel()])  # type: ignore[no-any-return]


def buffer_state(host: SimulatedHost, view: Any) -> Any:
    return host.app.view(view.id())


def test_revert_hunk_restores_the_reference_lines_under_the_caret_only(sim_host: SimulatedHost) -> None:
    view = edited(sim_host, "one\nTWO\nthree\nfour\nFIVE\n")
    sim_host.user.click(view, 5)  # on "TWO"
    binding = sim_host.user.press_key("ctrl+k, ctrl+z")
    assert binding is not None and binding.command == "revert_hunk"
    assert text(sim_host, view) == "one\ntwo\nthree\nfour\nFIVE\n"  # the other hunk stays
    sim_host.run_on_main(lambda: view.run_command("undo"))  # one undo step
    assert text(sim_host, view) == "one\nTWO\nthree\nfour\nFIVE\n"


def test_revert_hunk_brings_back_deleted_lines_and_removes_added_ones(sim_host: SimulatedHost) -> None:
    view = edited(sim_host, "one\nthree\nfour\nadded\nfive\n")
    sim_host.run_on_main(lambda: view.run_command("select_all"))
    sim_host.run_on_main(lambda: view.run_command("revert_hunk"))
    assert text(sim_host, view) == REFERENCE


def test_without_a_reference_the_diff_commands_do_nothing(sim_host: SimulatedHost) -> None:
    view = sim_host.user.new_file()
    sim_host.user.type(view, "text\n")
    sim_host.run_on_main(lambda: view.run_command("select_all"))
    sim_host.run_on_main(lambda: view.run_command("revert_hunk"))
    sim_host.run_on_main(lambda: view.run_command("next_modification"))
    assert text(sim_host, view) == "text\n"


def test_reference_must_be_a_str_and_reset_forgets_it(sim_host: SimulatedHost) -> None:
    view = edited(sim_host, "one\nTWO\nthree\nfour\nfive\n")
    with pytest.raises(TypeError):
        sim_host.run_on_main(lambda: view.set_reference_document(None))
    assert buffer_state(sim_host, view).buffer.reference_document == REFERENCE  # a refusal changes nothing
    sim_host.run_on_main(lambda: view.reset_reference_document())
    sim_host.run_on_main(lambda: view.run_command("select_all"))
    sim_host.run_on_main(lambda: view.run_command("revert_hunk"))
    assert text(sim_host, view) == "one\nTWO\nthree\nfour\nfive\n"


def test_next_and_prev_modification_walk_the_hunks_and_stop_at_the_ends(sim_host: SimulatedHost) -> None:
    view = edited(sim_host, "one\nTWO\nthree\nfour\nFIVE\n")
    sim_host.user.click(view, 0)
    assert sim_host.user.press_key("ctrl+.") is not None
    assert carets(sim_host, view) == [4]
    sim_host.user.press_key("ctrl+.")
    assert carets(sim_host, view) == [19]
    sim_host.user.press_key("ctrl+.")  # no further hunk: the caret stays
    assert carets(sim_host, view) == [19]
    sim_host.user.press_key(["ctrl+,"])  # a list: "," separates chords in a string
    assert carets(sim_host, view) == [4]
    sim_host.user.press_key(["ctrl+,"])  # a list: "," separates chords in a string
    assert carets(sim_host, view) == [4]


def test_toggle_inline_diff_shows_and_hides_hunks(sim_host: SimulatedHost) -> None:
    view = edited(sim_host, "one\nTWO\nthree\nfour\nFIVE\n")
    shown = lambda: list(buffer_state(sim_host, view).inline_diffs)  # noqa: E731
    sim_host.user.click(view, 5)
    sim_host.user.press_key("ctrl+k, ctrl+/")
    assert shown() == [(4, 8)]
    sim_host.user.click(view, 20)
    sim_host.user.press_key("ctrl+k, ctrl+/")
    assert shown() == [(4, 8), (19, 24)]
    sim_host.user.press_key("ctrl+k, ctrl+/")  # shown: toggled off
    assert shown() == [(4, 8)]
    sim_host.user.set_selection(view, [5, 20])  # one hunk shown, one hidden
    sim_host.user.press_key("ctrl+k, ctrl+;")  # Sublime's keymap: prefer_hide, so both hide
    assert shown() == []
    sim_host.user.set_selection(view, [5])
    sim_host.user.press_key("ctrl+k, ctrl+/")
    sim_host.user.set_selection(view, [5, 20])
    sim_host.user.press_key("ctrl+k, ctrl+/")  # not all shown: all show
    assert shown() == [(4, 8), (19, 24)]
    sim_host.user.click(view, 20)
    sim_host.user.press_key("ctrl+k, ctrl+/")
    assert shown() == [(4, 8)]
    sim_host.user.click(view, 5)
    sim_host.user.press_key("ctrl+k, ctrl+/")
    assert shown() == []
    sim_host.user.click(view, 0)  # "one" is no hunk: nothing to toggle
    sim_host.user.press_key("ctrl+k, ctrl+/")
    assert shown() == []
    assert text(sim_host, view) == "one\nTWO\nthree\nfour\nFIVE\n"  # toggling never edits
