"""The auto-complete popup opens, lists, commits and closes as Sublime's does."""

from __future__ import annotations

from pathlib import Path

from tests.sublime_sim import SimulatedHost
from tests.sublime_sim.fixtures import write_package

LISTENER = '''
import sublime
import sublime_plugin


class Slash(sublime_plugin.EventListener):
    def on_query_completions(self, view, prefix, locations):
        flags = sublime.INHIBIT_WORD_COMPLETIONS if view.settings().get("inhibit") else 0
        line = view.substr(sublime.Region(view.line(locations[0]).begin(), locations[0]))
        items = [sublime.CompletionItem("/help", completion="/help")] if line.startswith("/") else []
        return sublime.CompletionList(items, flags)
'''


def _view(sim_host: SimulatedHost, **settings: object) -> object:
    write_package(sim_host.packages_dir, "Slash", {"slash.py": LISTENER})
    sim_host.load_package("Slash")
    view = sim_host.run_on_main(lambda: sim_host.window.new_file(syntax="Packages/Markdown/Markdown.sublime-syntax"))
    view.settings().update(settings)
    return view


def test_words_pop_up_where_the_selector_matches_and_enter_commits_the_first(sim_host: SimulatedHost) -> None:
    view = _view(sim_host, auto_complete_selector="text")
    user = sim_host.user
    user.type(view, "hello world ")
    assert not view.is_auto_complete_visible()  # a space closes / does not open it
    user.type(view, "he")
    assert view.is_auto_complete_visible()
    binding = user.press_key("enter")
    assert binding is not None and binding.command == "commit_completion"
    assert sim_host.app.buffer_text(view.id()) == "hello world hello" and not view.is_auto_complete_visible()
    user.type(view, " wo")
    assert user.press_key("escape").command == "hide_auto_complete"  # type: ignore[union-attr]
    assert not view.is_auto_complete_visible()


def test_outside_the_selector_only_a_trigger_opens_it_and_inhibit_drops_words(sim_host: SimulatedHost) -> None:
    view = _view(sim_host, auto_complete_selector="source", inhibit=True,
                 auto_complete_triggers=[{"selector": "text.html.markdown", "characters": "/"}])
    user = sim_host.user
    user.type(view, "hello he")
    assert not view.is_auto_complete_visible()
    user.run_command("auto_complete")  # Ctrl+Space: asked for, but every word is inhibited
    assert not view.is_auto_complete_visible()
    user.type(view, "\n/")
    assert view.is_auto_complete_visible()
    user.click(view, 0)
    assert not view.is_auto_complete_visible()


def test_the_default_selector_leaves_prose_alone(sim_host: SimulatedHost, packages_dir: Path) -> None:
    view = _view(sim_host)
    sim_host.user.type(view, "hello he")
    assert not view.is_auto_complete_visible()


LATER = '''
import threading
import time

import sublime
import sublime_plugin


class Later(sublime_plugin.EventListener):
    def on_query_completions(self, view, prefix, locations):
        later = sublime.CompletionList()  # None: nothing shown until set_completions
        if view.settings().get("answer"):
            def answer():
                time.sleep(0.2)
                later.set_completions([sublime.CompletionItem("stats", completion="stats")])

            threading.Thread(target=answer).start()  # set from any thread (API reference)
        return later
'''


def test_a_completion_list_set_later_shows_once_it_is_set(sim_host: SimulatedHost) -> None:
    write_package(sim_host.packages_dir, "Later", {"later.py": LATER})
    sim_host.load_package("Later")
    view = sim_host.run_on_main(lambda: sim_host.window.new_file())
    view.settings().set("answer", True)
    assert [item.trigger for item in sim_host.user.query_completions(view)] == ["stats"]


def test_a_completion_list_never_set_shows_nothing(sim_host: SimulatedHost, monkeypatch: object) -> None:
    from tests.sublime_sim import sublime_plugin

    monkeypatch.setattr(sublime_plugin, "PENDING_COMPLETIONS_S", 0.3)  # type: ignore[attr-defined]
    write_package(sim_host.packages_dir, "Later", {"later.py": LATER})
    sim_host.load_package("Later")
    view = sim_host.run_on_main(lambda: sim_host.window.new_file())
    assert sim_host.user.query_completions(view) == []
