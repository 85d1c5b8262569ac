"""Window lifecycle events that start, stop and re-describe the servers."""

from __future__ import annotations

from typing import Any

import sublime
import sublime_plugin

from .companions import companions

# Window commands after which the window's folders may differ.
FOLDER_COMMANDS = frozenset({
    "prompt_add_folder", "remove_folder", "prompt_open_folder", "open_dir",
    "prompt_select_workspace", "open_project_or_workspace", "switch_project_or_workspace",
    "close_folder_list", "close_workspace", "close_project",
})


class CompanionWindowListener(sublime_plugin.EventListener):
    def on_new_window_async(self, window: sublime.Window) -> None:
        companions.ensure_window_soon(window)

    def on_pre_close_window(self, window: sublime.Window) -> None:
        companions.window_closing(window.id())

    def on_load_project_async(self, window: sublime.Window) -> None:
        companions.sync_folders(window)

    def on_post_window_command(self, window: sublime.Window, command_name: str, args: dict[str, Any] | None) -> None:
        if command_name in FOLDER_COMMANDS:
            sublime.set_timeout_async(lambda: companions.sync_folders(window))

    def on_activated_async(self, view: sublime.View) -> None:
        window = view.window()
        if window is not None:
            companions.sync_folders(window)

    def on_exit(self) -> None:
        companions.stop_soon()
