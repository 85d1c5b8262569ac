"""The package's key bindings: each runs a command that exists, and each
context key of the package's own is answered by its listeners."""

from __future__ import annotations

import re
from typing import Any

import sublime
import sublime_plugin
from unittesting import DeferrableTestCase

from .helpers import PACKAGE, Workspace, query_context

KEYMAP = f"Packages/{PACKAGE}/Default.sublime-keymap"
# Context keys Sublime itself answers (its documented key binding contexts), not the package's listeners.
SUBLIME_KEYS = re.compile(
    r"^(setting\..+|auto_complete_visible|has_next_field|has_prev_field|num_selections|overlay_visible"
    r"|overlay_has_focus|panel_visible|panel_has_focus|panel|popup_visible|selector|selection_empty|text"
    r"|preceding_text|following_text|last_command|last_modifying_command|is_recording_macro|read_only"
    r"|group_has_multiselect|group_has_transient_sheet|has_snippet|eol_selector)$"
)


def command_name(cls: type) -> str:
    """The name Sublime gives a command class (sublime_plugin.Command.name)."""
    name = cls.__name__
    if name.endswith("Command"):
        name = name[: -len("Command")]
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def package_commands() -> set[str]:
    return {
        command_name(cls)
        for classes in sublime_plugin.all_command_classes
        for cls in classes
        if cls.__module__.startswith(PACKAGE + ".")
    }


def bindings() -> list[dict[str, Any]]:
    loaded = sublime.decode_value(sublime.load_resource(KEYMAP))
    assert isinstance(loaded, list)
    return loaded


class KeyBindings(DeferrableTestCase):
    def test_every_binding_runs_a_command_of_the_package_or_sublime(self) -> None:
        known = package_commands() | {"insert"}
        unknown = [b["command"] for b in bindings() if b["command"] not in known]
        self.assertEqual(unknown, [])
        self.assertIn("qwen_accept_diff", known)

    def test_the_packages_context_keys_are_answered_by_its_listeners(self) -> Any:
        workspace = Workspace()
        try:
            yield from workspace.open()
            view = yield from workspace.open_file("plain.txt", "nothing to review\n")
            own_keys = {
                (entry["key"], entry.get("operator", "equal"), entry.get("operand", True))
                for binding in bindings()
                for entry in binding.get("context", [])
                if not SUBLIME_KEYS.match(entry["key"])
            }
            self.assertIn(("qwen_companion.open_review", "equal", True), own_keys)
            for key, operator, operand in sorted(own_keys, key=str):
                # In a plain file no review, chat or permission is waiting: answered, and false.
                self.assertIs(query_context(view, key, operator, operand), False, key)
        finally:
            workspace.close()
