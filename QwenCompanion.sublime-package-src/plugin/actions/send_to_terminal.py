"""Qwen Code: Send Selection to Terminal — types qwen's file reference for
the selection (`@path lines a-b `) into the window's running qwen terminal,
for the user to ask about it there."""

from __future__ import annotations

import sublime
import sublime_plugin

from ...core.actions.mention import file_mention, selected_lines
from ...core.cli.terminal import terminal_tag
from ..companion.terminal import live_terminal, window_cwd
from .action_commands import has_selection

NO_TERMINAL = "Qwen Code: no qwen runs in a terminal of this window; start one with Open in Terminal"
NO_FILE = "Qwen Code: save the file first; qwen reads files from disk"


class QwenSendSelectionToTerminalCommand(sublime_plugin.TextCommand):
    def run(self, edit: sublime.Edit, only_with_selection: bool = False) -> None:
        window = self.view.window()
        path = self.view.file_name()
        if window is None:
            return
        if path is None:
            window.status_message(NO_FILE)
            return
        live = live_terminal(window, terminal_tag(window.id()), serials=True)
        if live is None:
            window.status_message(NO_TERMINAL)
            return
        terminal, panel = live
        region = self.view.sel()[0] if len(self.view.sel()) else sublime.Region(0)
        first, last = selected_lines(self.view.rowcol(region.begin()), self.view.rowcol(region.end()))
        mention = file_mention(path, window_cwd(window), first, last, windows=sublime.platform() == "windows")
        window.run_command("terminus_send_string", {"string": mention, "tag": terminal.settings().get("terminus_view.tag")})
        if panel is not None:
            window.run_command("show_panel", {"panel": f"output.{panel}"})
        window.focus_view(terminal)

    def is_visible(self, only_with_selection: bool = False) -> bool:
        return not only_with_selection or has_selection(self.view)
