"""Listener details: on_init and on_activated at load, text changes, hover, completions."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.sublime_sim import SimulatedHost
from tests.sublime_sim.fixtures import write_package

LISTENERS = '''
import sublime
import sublime_plugin

SEEN = []


class Global(sublime_plugin.EventListener):
    def on_init(self, views):
        SEEN.append(("on_init", [v.id() for v in views]))

    def on_activated(self, view):
        SEEN.append(("on_activated", view.id()))

    def on_hover(self, view, point, hover_zone):
        SEEN.append(("on_hover", point, hover_zone))

    def on_query_completions(self, view, prefix, locations):
        return [("%sable" % prefix, "x")], sublime.INHIBIT_WORD_COMPLETIONS


class Changes(sublime_plugin.TextChangeListener):
    def on_text_changed(self, changes):
        SEEN.append(("changes", [(c.a.pt, c.b.pt, c.str) for c in changes]))

    def on_revert(self):
        SEEN.append(("revert", self.buffer.id()))


class PerView(sublime_plugin.ViewEventListener):
    def on_query_completions(self, prefix, locations):
        return sublime.CompletionList([sublime.CompletionItem(prefix + "ful")])
'''


def test_listener_catch_up_changes_hover_completions(sim_host: SimulatedHost, packages_dir: Path, tmp_path: Path) -> None:
    sublime = sim_host.sublime
    path = tmp_path / "f.txt"
    path.write_text("abc\n")
    view = sim_host.user.open_file(path)  # exists before the package loads
    write_package(packages_dir, "Listen", {"listen.py": LISTENERS})
    sim_host.load_package("Listen")
    seen = sys.modules["Listen.listen"].SEEN
    assert seen[:2] == [("on_init", [view.id()]), ("on_activated", view.id())]

    sim_host.user.set_selection(view, [(0, 1), 3])
    sim_host.user.type(view, "Z")
    assert ("changes", [(3, 3, "Z"), (0, 1, "Z")]) in seen
    assert view.substr(sublime.Region(0, view.size())) == "ZbcZ\n"
    view.run_command("revert")
    assert seen[-1] == ("revert", view.buffer_id())

    sim_host.user.hover(view, 2, sublime.HOVER_GUTTER)
    assert seen[-1] == ("on_hover", 2, sublime.HOVER_GUTTER)
    completions = sim_host.user.query_completions(view, "read")
    assert completions[0] == ("readable", "x") and completions[1].trigger == "readful"
    sim_host.assert_no_errors()


MARKDOWN_ONLY = '''
import sublime_plugin

SEEN = []


class MarkdownChanges(sublime_plugin.TextChangeListener):
    @classmethod
    def is_applicable(cls, buffer):
        return (buffer.file_name() or "").endswith(".md")

    def on_text_changed(self, changes):
        SEEN.append([c.str for c in changes])
'''


def test_a_buffer_that_takes_a_file_asks_text_change_listeners_again(
        sim_host: SimulatedHost, packages_dir: Path, tmp_path: Path) -> None:
    """Sublime's on_associate_buffer re-checks is_applicable: Save As can
    attach a listener the new buffer did not have."""
    write_package(packages_dir, "Markdown", {"markdown.py": MARKDOWN_ONLY})
    sim_host.load_package("Markdown")
    seen = sys.modules["Markdown.markdown"].SEEN
    view = sim_host.user.new_file()
    sim_host.user.type(view, "a")
    assert seen == []
    sim_host.user.save(view, tmp_path / "notes.md")
    sim_host.user.type(view, "b")
    assert seen == [["b"]]
    (tmp_path / "plain.txt").write_text("")
    plain = sim_host.user.open_file(tmp_path / "plain.txt")
    sim_host.user.type(plain, "c")
    assert seen == [["b"]]
    sim_host.assert_no_errors()
