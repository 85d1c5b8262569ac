"""Key bindings: keymap files, contexts (built-in and on_query_context), dispatch."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.sublime_sim import SimulatedHost
from tests.sublime_sim.fixtures import write_package

PLUGIN = '''
import sublime
import sublime_plugin

RAN = []


class KeyedCommand(sublime_plugin.TextCommand):
    def run(self, edit, which):
        RAN.append((which, self.view.id()))


class KeyedWindowCommand(sublime_plugin.WindowCommand):
    def run(self):
        RAN.append(("window", self.window.id()))


class Context(sublime_plugin.EventListener):
    def on_query_context(self, view, key, operator, operand, match_all):
        if key != "keyed.armed":
            return None
        armed = view.settings().get("keyed_armed", False)
        return armed == operand if operator == sublime.OP_EQUAL else armed != operand
'''

KEYMAP = '''[
    // later bindings win when several match
    {"keys": ["ctrl+alt+k"], "command": "keyed", "args": {"which": "plain"}},
    {"keys": ["ctrl+alt+k"], "command": "keyed", "args": {"which": "armed"},
     "context": [{"key": "keyed.armed", "operator": "equal", "operand": true}]},
    {"keys": ["ctrl+alt+k"], "command": "keyed", "args": {"which": "markdown"},
     "context": [{"key": "selector", "operand": "text.html.markdown"},
                 {"key": "selection_empty", "operand": true, "match_all": true}]},
    {"keys": ["primary+k", "primary+w"], "command": "keyed_window"},
    {"keys": ["f5"], "command": "keyed", "args": {"which": "setting"},
     "context": [{"key": "setting.keyed_mode", "operator": "regex_match", "operand": "on|yes"}]},
]'''


def test_press_key_evaluates_contexts(sim_host: SimulatedHost, packages_dir: Path) -> None:
    write_package(packages_dir, "Keyed", {"keyed.py": PLUGIN, "Default.sublime-keymap": KEYMAP})
    sim_host.load_package("Keyed")
    ran = sys.modules["Keyed.keyed"].RAN
    view = sim_host.user.new_file()

    binding = sim_host.user.press_key("ctrl+alt+k")
    assert binding is not None and binding.args == {"which": "plain"} and ran[-1] == ("plain", view.id())
    view.settings().set("keyed_armed", True)
    sim_host.user.press_key("alt+ctrl+k")  # modifier order does not matter
    assert ran[-1] == ("armed", view.id())
    view.assign_syntax("scope:text.html.markdown")
    sim_host.user.press_key("ctrl+alt+k")
    assert ran[-1] == ("markdown", view.id())
    sim_host.user.type(view, "abc")
    sim_host.user.set_selection(view, [(0, 2)])  # not empty: the markdown binding fails
    sim_host.user.press_key("ctrl+alt+k")
    assert ran[-1] == ("armed", view.id())

    sim_host.user.press_key("ctrl+k, ctrl+w")
    assert ran[-1] == ("window", sim_host.window.id())
    assert sim_host.user.press_key("f5") is None
    view.settings().set("keyed_mode", "yes")
    assert sim_host.user.press_key("f5") is not None and ran[-1] == ("setting", view.id())

    sim_host.user.click(view, view.size())
    assert sim_host.user.press_key("x") is None  # unbound printable key: typed
    assert view.substr(sim_host.sublime.Region(0, view.size())) == "abcx"
    sim_host.assert_no_errors()


def test_keymaps_in_a_package_subfolder_load_and_later_packages_win(sim_host: SimulatedHost, packages_dir: Path) -> None:
    write_package(packages_dir, "Keyed", {"keyed.py": PLUGIN, "Default.sublime-keymap": KEYMAP})
    # Loads after "Keyed" (alphabetical), its platform keymap in a subfolder, no context.
    write_package(packages_dir, "Linted", {"keymaps/Default (Linux).sublime-keymap": '[{"keys": ["ctrl+alt+k"], "command": "lint"}]',
                                           "keymaps/Default (OSX).sublime-keymap": '[{"keys": ["ctrl+alt+k"], "command": "lint_mac"}]',
                                           "keymaps/Other.sublime-keymap": '[{"keys": ["f5"], "command": "ignored"}]'})
    sim_host.load_package("Keyed")
    view = sim_host.user.new_file()
    view.settings().set("keyed_armed", True)
    binding = sim_host.user.press_key("ctrl+alt+k")
    assert binding is not None and (binding.command, binding.source) == ("lint", "Packages/Linted/keymaps/Default (Linux).sublime-keymap")
    assert sim_host.user.press_key("f5") is None  # only Default[ (<Platform>)].sublime-keymap files are keymaps


def test_sublimes_own_esc_tab_enter_and_arrows_are_bound(sim_host: SimulatedHost) -> None:
    view = sim_host.user.new_file()
    sim_host.user.type(view, "one two")
    user = sim_host.user

    def command(keys: str) -> str | None:
        binding = user.press_key(keys)
        return binding.command if binding else None

    assert command("escape") is None
    user.set_selection(view, [0, 4])
    assert command("escape") == "single_selection"
    user.set_selection(view, [0])
    sim_host.run_on_main(lambda: sim_host.window.show_quick_panel(["a"], lambda index: None))
    assert command("escape") == "hide_overlay"
    user.cancel_quick_panel()
    sim_host.run_on_main(lambda: sim_host.window.run_command("show_panel", {"panel": "console"}))
    assert command("escape") == "hide_panel" and sim_host.window.active_panel() is None
    assert command("up") == "move" and command("down") == "move"
    assert command("tab") == "insert_best_completion"
    assert command("enter") is None  # typed as a newline by Sublime itself
    assert sim_host.app.buffer_text(view.id()) == "\none two"  # at the caret, left at 0
    sim_host.run_on_main(lambda: view.show_popup("<p>hover</p>"))
    assert command("escape") is None and not view.is_popup_visible()  # Sublime closes a popup on Esc


def test_a_selector_context_is_matched_against_the_scope_at_the_caret(sim_host: SimulatedHost, packages_dir: Path) -> None:
    write_package(packages_dir, "Heads", {"Default.sublime-keymap": '[{"keys": ["f6"], "command": "on_heading", '
                                          '"context": [{"key": "selector", "operand": "markup.heading"}]}]'})
    view = sim_host.run_on_main(lambda: sim_host.window.new_file(syntax="Packages/Markdown/Markdown.sublime-syntax"))
    sim_host.user.type(view, "prose\n# Title\n")
    sim_host.user.set_selection(view, [2])
    assert sim_host.user.press_key("f6") is None
    sim_host.user.set_selection(view, [10])
    assert sim_host.user.press_key("f6").command == "on_heading"  # type: ignore[union-attr]


REWRITER = '''
import sublime
import sublime_plugin

SEEN = []


class Rewriter(sublime_plugin.EventListener):
    def on_text_command(self, view, command_name, args):
        SEEN.append(command_name)
        if command_name == "paste" and view.settings().get("rewrite_paste"):
            return ("insert", {"characters": "[rewritten]"})
        return None
'''


def test_copy_cut_and_paste_keys_run_sublimes_text_commands(sim_host: SimulatedHost, packages_dir: Path) -> None:
    write_package(packages_dir, "Rewriting", {"rewriter.py": REWRITER})
    sim_host.load_package("Rewriting")
    view = sim_host.user.new_file()
    sim_host.user.type(view, "alpha beta")
    user = sim_host.user
    user.set_selection(view, [sim_host.sublime.Region(0, 5)])
    assert user.press_key("primary+c").command == "copy"  # type: ignore[union-attr]
    assert sim_host.sublime.get_clipboard() == "alpha"
    user.set_selection(view, [10])
    assert user.press_key("primary+v").command == "paste"  # type: ignore[union-attr]
    assert sim_host.app.buffer_text(view.id()) == "alpha betaalpha"
    user.set_selection(view, [sim_host.sublime.Region(0, 6)])
    assert user.press_key("primary+x").command == "cut"  # type: ignore[union-attr]
    assert sim_host.app.buffer_text(view.id()) == "betaalpha" and sim_host.sublime.get_clipboard() == "alpha "
    sim_host.run_on_main(lambda: view.settings().set("rewrite_paste", True))
    user.press_key("primary+v")  # a package may turn Paste into a command of its own
    assert sim_host.app.buffer_text(view.id()) == "[rewritten]betaalpha"
    assert sys.modules["Rewriting.rewriter"].SEEN[-4:] == ["copy", "paste", "cut", "paste"]
