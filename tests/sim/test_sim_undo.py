"""Undo: each outermost text command that changed the buffer is one undo
step (a plugin command making several edits included), as in Sublime."""

from __future__ import annotations

from tests.sublime_sim import SimulatedHost
from tests.sublime_sim.fixtures import write_package

PLUGIN = '''
import sublime, sublime_plugin

class TwoEditsCommand(sublime_plugin.TextCommand):
    def run(self, edit):
        self.view.insert(edit, 0, "a")
        self.view.insert(edit, self.view.size(), "z")
'''


def text(host: SimulatedHost, view: object) -> str:
    return host.run_on_main(lambda: view.substr(host.sublime.Region(0, view.size())))  # type: ignore[attr-defined]


def test_undo_reverts_one_command_at_a_time(sim_host: SimulatedHost) -> None:
    write_package(sim_host.packages_dir, "Edits", {"edits.py": PLUGIN})
    sim_host.load_package("Edits")
    view = sim_host.run_on_main(lambda: sim_host.window.new_file())
    sim_host.run_on_main(lambda: view.run_command("append", {"characters": "mid"}))
    sim_host.run_on_main(lambda: view.run_command("two_edits"))
    assert text(sim_host, view) == "amidz"
    sim_host.run_on_main(lambda: view.run_command("undo"))
    assert text(sim_host, view) == "mid"
    sim_host.run_on_main(lambda: view.run_command("undo"))
    assert text(sim_host, view) == ""
    sim_host.run_on_main(lambda: view.run_command("undo"))  # nothing left: nothing happens
    assert text(sim_host, view) == ""


def test_clear_undo_stack_forgets_the_history(sim_host: SimulatedHost) -> None:
    view = sim_host.run_on_main(lambda: sim_host.window.new_file())
    sim_host.run_on_main(lambda: view.run_command("append", {"characters": "kept"}))
    sim_host.run_on_main(lambda: view.clear_undo_stack())
    sim_host.run_on_main(lambda: view.run_command("undo"))
    assert text(sim_host, view) == "kept"
