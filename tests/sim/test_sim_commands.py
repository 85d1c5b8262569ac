"""Command classes, naming, dispatch and the command events."""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.sublime_sim import SimulatedHost
from tests.sublime_sim.fixtures import write_package

COMMANDS = '''
import threading

import sublime
import sublime_plugin

LOG = []
KEPT = {}


class SaySomethingCommand(sublime_plugin.TextCommand):
    def run(self, edit, text="hi"):
        KEPT["edit"] = edit
        LOG.append(("say", threading.current_thread().name))
        self.view.insert(edit, self.view.size(), text)


class HTTPServerRestartCommand(sublime_plugin.WindowCommand):
    def run(self):
        LOG.append(("restart", self.window.id()))


class A1BCommand(sublime_plugin.ApplicationCommand):
    def run(self, value):
        LOG.append(("a1b", value))


class DisabledCommand(sublime_plugin.WindowCommand):
    def is_enabled(self):
        return False

    def run(self):
        LOG.append(("disabled ran",))


class BrokenCommand(sublime_plugin.TextCommand):
    def run(self, edit):
        raise ValueError("broken on purpose")


class Rewriter(sublime_plugin.EventListener):
    def on_text_command(self, view, name, args):
        if name == "say_something" and args == {"text": "swap"}:
            return ("say_something", {"text": "swapped"})

    def on_window_command(self, window, name, args):
        if name == "old_name":
            return ("http_server_restart", None)

    def on_post_text_command(self, view, name, args):
        LOG.append(("post_text", name, args))

    def on_post_window_command(self, window, name, args):
        LOG.append(("post_window", name))

    def on_modified(self, view):
        LOG.append(("modified", view.id()))

    def on_selection_modified(self, view):
        LOG.append(("selection", view.id()))
'''


@pytest.fixture
def plugin(sim_host: SimulatedHost, packages_dir: Path) -> Any:
    write_package(packages_dir, "Cmds", {"cmds.py": COMMANDS})
    assert sim_host.load_package("Cmds") == ["Cmds.cmds"]
    return sys.modules["Cmds.cmds"]


def test_names_derive_from_class_names(sim_host: SimulatedHost, plugin: Any) -> None:
    sp = sim_host.sublime_plugin
    view = sim_host.window.new_file()
    assert plugin.SaySomethingCommand(view).name() == "say_something"
    assert plugin.HTTPServerRestartCommand(sim_host.window).name() == "http_server_restart"
    assert plugin.A1BCommand().name() == "a1_b"

    class FooBarInputHandler(sp.TextInputHandler):
        pass

    assert FooBarInputHandler().name() == "foo_bar"


def test_text_command_and_edit_lifetime(sim_host: SimulatedHost, plugin: Any) -> None:
    view = sim_host.window.new_file()
    view.run_command("say_something", {"text": "abc"})
    assert view.substr(sim_host.sublime.Region(0, view.size())) == "abc"
    assert ("say", "MainThread") in plugin.LOG  # commands run on the caller's thread
    with pytest.raises(ValueError, match="Edit objects may not be used"):
        view.insert(plugin.KEPT["edit"], 0, "late")
    assert not view.is_in_edit()
    sim_host.run_on_main(lambda: view.run_command("say_something"))
    assert ("say", "sublime-main") in plugin.LOG
    sim_host.assert_no_errors()


def test_modification_events_follow_commands_not_api_selection(sim_host: SimulatedHost, plugin: Any) -> None:
    view = sim_host.window.new_file()
    sim_host.wait_idle()
    plugin.LOG.clear()
    view.run_command("say_something")
    assert ("modified", view.id()) in plugin.LOG and ("selection", view.id()) in plugin.LOG
    assert not [entry for entry in plugin.LOG if entry[0] == "post_text"]  # not from the API
    plugin.LOG.clear()
    view.sel().clear()
    view.sel().add(0)  # API selection changes fire nothing
    assert plugin.LOG == []
    sim_host.user.click(view, 1)  # a user click does
    assert [("selection", view.id())] == plugin.LOG


def test_text_command_rewrite_applies_to_menus(sim_host: SimulatedHost, plugin: Any) -> None:
    view = sim_host.user.new_file()
    sim_host.user.run_command("say_something", {"text": "swap"}, via="menu")
    assert view.substr(sim_host.sublime.Region(0, view.size())) == "swapped"
    assert sim_host.commands[-1].name == "say_something" and sim_host.commands[-1].args == {"text": "swapped"}
    assert plugin.LOG[-1] == ("post_text", "say_something", {"text": "swapped"})


@pytest.mark.parametrize("source", ["palette", "api"])
def test_the_palette_and_the_api_bypass_the_text_command_hooks(sim_host: SimulatedHost, plugin: Any, source: str) -> None:
    # Sublime calls on_text_command / on_post_text_command only for what the user
    # runs by a key or a menu: a plugin cannot intercept the palette or the API.
    view = sim_host.user.new_file()
    plugin.LOG.clear()
    if source == "palette":
        sim_host.user.run_command("say_something", {"text": "swap"})
    else:
        view.run_command("say_something", {"text": "swap"})
    assert view.substr(sim_host.sublime.Region(0, view.size())) == "swap"
    assert not [entry for entry in plugin.LOG if entry[0] == "post_text"]


def test_keys_pass_through_the_text_command_hooks(sim_host: SimulatedHost, plugin: Any) -> None:
    view = sim_host.user.new_file()
    plugin.LOG.clear()
    sim_host.user.press_key("x")  # typing runs `insert` from the character's key
    assert view.substr(sim_host.sublime.Region(0, view.size())) == "x"
    assert plugin.LOG[-1] == ("post_text", "insert", {"characters": "x"})


def test_window_run_command_dispatch(sim_host: SimulatedHost, plugin: Any) -> None:
    window = sim_host.window
    view = window.new_file()
    window.run_command("http_server_restart")
    assert ("restart", window.id()) in plugin.LOG and ("post_window", "http_server_restart") in plugin.LOG
    window.run_command("old_name")  # rewritten by on_window_command
    assert plugin.LOG.count(("restart", window.id())) == 2
    window.run_command("say_something", {"text": "via window"})  # falls back to the active view
    assert view.substr(sim_host.sublime.Region(0, view.size())) == "via window"
    window.run_command("insert", {"characters": "!"})  # built-in text command, same route
    assert view.size() == len("via window!")
    window.run_command("a1_b", {"value": 3})  # and then to application commands
    assert ("a1b", 3) in plugin.LOG
    window.run_command("disabled")
    assert ("disabled ran",) not in plugin.LOG and sim_host.commands[-1].handler == "disabled"
    window.run_command("no_such_command", {"x": 1})  # a silent no-op, recorded
    assert [c.name for c in sim_host.unknown_commands] == ["no_such_command"]
    sim_host.assert_no_errors()


def test_command_exceptions_are_recorded_not_raised(sim_host: SimulatedHost, plugin: Any) -> None:
    view = sim_host.window.new_file()
    view.run_command("broken")
    assert len(sim_host.errors) == 1 and "broken on purpose" in sim_host.errors[0].traceback
    assert not view.is_in_edit()


def test_builtin_commands(sim_host: SimulatedHost) -> None:
    sublime = sim_host.sublime
    view = sim_host.window.new_file()
    view.run_command("append", {"characters": "one two"})
    view.run_command("select_all")
    assert list(view.sel()) == [sublime.Region(0, 7)]
    view.run_command("copy")
    assert sublime.get_clipboard() == "one two"
    view.run_command("move_to", {"to": "eof"})
    view.run_command("paste")
    view.run_command("left_delete")
    assert view.substr(sublime.Region(0, view.size())) == "one twoone tw"
    sublime.run_command("new_window")
    assert len(sublime.windows()) == 2 and sublime.active_window() != view.window()
    sublime.active_window().run_command("close_window")
    assert len(sublime.windows()) == 1
    sim_host.assert_no_errors()


ASKING = '''
import sublime_plugin

RAN = []


class WhatInputHandler(sublime_plugin.TextInputHandler):
    def validate(self, text):
        return bool(text)


class AskCommand(sublime_plugin.TextCommand):
    def run(self, edit, what):
        RAN.append(("ask", what))

    def input(self, args):
        return WhatInputHandler() if "what" not in args else None


class DefaultedCommand(sublime_plugin.TextCommand):
    def run(self, edit, what=""):
        RAN.append(("defaulted", what))

    def input(self, args):
        return WhatInputHandler()
'''


def test_a_missing_positional_argument_opens_the_input_and_a_default_does_not(sim_host: SimulatedHost) -> None:
    write_package(sim_host.packages_dir, "Asking", {"asking.py": ASKING})
    sim_host.load_package("Asking")
    ran = sys.modules["Asking.asking"].RAN
    sim_host.user.new_file()
    user = sim_host.user
    user.run_command("ask", via="menu")
    assert ran == [] and sim_host.sublime.active_window().active_view() is not None
    assert not user.submit_command_input("")  # refused by validate: stays open
    assert user.submit_command_input("why")
    assert ran == [("ask", "why")]
    user.run_command("defaulted", via="menu")  # `run` succeeds: no input is asked
    assert ran[-1] == ("defaulted", "") and not [c for c in sim_host.app.command_inputs if not c.done]
    user.run_command("ask", via="menu")
    user.cancel_command_input()
    assert not [c for c in sim_host.app.command_inputs if not c.done] and len(ran) == 2
    sim_host.assert_no_errors()


def test_the_command_log_keeps_arguments_packed_not_as_python_containers(sim_host: SimulatedHost) -> None:
    # Sublime keeps a command's arguments in its own process: the log must not
    # add lists and dicts per command for the plugin host's garbage collector.
    view = sim_host.window.new_file()
    edits = [[0, 0, "ab"], [2, 0, "cd"]]
    sim_host.run_on_main(lambda: view.run_command("insert", {"characters": "x", "edits": edits}))
    record = sim_host.commands[-1]
    assert record.args == {"characters": "x", "edits": [[0, 0, "ab"], [2, 0, "cd"]]}
    assert not gc.is_tracked(record.packed_args)
    assert not any(gc.is_tracked(value) for value in vars(record).values())
    record.args["edits"].clear()  # type: ignore[index]  # a copy each read: the log cannot be changed
    edits.clear()
    assert record.args == {"characters": "x", "edits": [[0, 0, "ab"], [2, 0, "cd"]]}
