"""The clipboard as Sublime's API reference gives it: `get_clipboard(size_limit
=16777216)` returns "" when the clipboard holds more than `size_limit`;
`get_clipboard_async(callback, size_limit=16777216)` passes the text (or ""
past the limit) to `callback` later, on the main thread, never during the call."""

from __future__ import annotations

import threading

from tests.sublime_sim import SimulatedHost

LIMIT = 16 * 1024 * 1024


def test_get_clipboard_answers_empty_past_its_size_limit(sim_host: SimulatedHost) -> None:
    sublime = sim_host.sublime
    sublime.set_clipboard("x" * LIMIT)
    assert len(sublime.get_clipboard()) == LIMIT  # at the limit: the text
    sublime.set_clipboard("x" * (LIMIT + 1))
    assert sublime.get_clipboard() == ""
    assert len(sublime.get_clipboard(LIMIT + 1)) == LIMIT + 1  # a larger limit asked for
    sublime.set_clipboard("words")
    assert sublime.get_clipboard(4) == "" and sublime.get_clipboard(5) == "words"


def test_get_clipboard_async_answers_later_on_the_main_thread_with_the_same_limit(sim_host: SimulatedHost) -> None:
    sublime = sim_host.sublime
    got: list[tuple[int, bool]] = []

    def ask(size_limit: int | None = None) -> None:
        def callback(text: str) -> None:
            got.append((len(text), threading.current_thread() is sim_host.main_thread))

        before = len(got)
        if size_limit is None:
            sublime.get_clipboard_async(callback)
        else:
            sublime.get_clipboard_async(callback, size_limit)
        assert len(got) == before  # never answered during the call

    sublime.set_clipboard("x" * (LIMIT + 1))
    sim_host.run_on_main(lambda: ask())
    sim_host.wait_for(lambda: len(got) == 1)
    assert got == [(0, True)]  # past the default limit: ""
    sim_host.run_on_worker(lambda: ask(LIMIT + 1))
    sim_host.wait_for(lambda: len(got) == 2)
    assert got[1] == (LIMIT + 1, True)
