"""Attachments to the next prompt: Add Selection to Chat, and `@` in the
composer picking a mention, an open file or a project file."""

from __future__ import annotations

import contextvars
import os
from typing import TYPE_CHECKING

import sublime
import sublime_plugin

from ....core import threads
from ....core.chat.prompts.prompt_context import ActiveFile, active_file_blocks, attached_file_block
from ...background import in_background
from ...editor import view_text
from ...quick_panel_items import panel_item
from ..command_bases import ActiveChatCommand, chat_for
from ..transcript.chat_views import open_chat
from ..window_chats import WindowChat, is_chat_view
from .mentions import MENTIONS, PASTE_IMAGE, pick
from .prompt_context import context_options, editor_view

if TYPE_CHECKING:
    from ....core.json_types import JsonObject

MAX_PROJECT_FILES = 5000
SKIPPED_FOLDERS = frozenset({".git", "node_modules", "__pycache__", ".venv", "venv", ".hg", ".svn", "dist", "build"})


class QwenChatAddSelectionCommand(sublime_plugin.TextCommand):
    """Qwen Code: Add Selection to Chat — attach the selection to the next prompt."""

    def run(self, edit: sublime.Edit) -> None:
        view, window = self.view, self.view.window()
        chat = chat_for(window)
        if window is None or chat is None:
            return
        region = next((r for r in view.sel() if not r.empty()), None)
        if region is None:
            sublime.status_message("Qwen Code: select some text to add to the chat")
            return
        path = view.file_name() or view.name() or f"untitled-{view.id()}"
        first, last = view.rowcol(region.begin())[0] + 1, view.rowcol(region.end())[0] + 1
        active = ActiveFile(path, first, 1, view.substr(region), (first, last))
        options = context_options()
        blocks = [b for b in active_file_blocks(active, options) if b["type"] == "resource"]
        if not blocks:
            sublime.status_message("Qwen Code: this file is excluded from what is sent (excluded_file_patterns)")
            return
        token = f"{os.path.basename(path)}:{first}-{last}"
        chat.attachments[token] = blocks[0]
        composer = open_chat(window, chat)
        composer.run_command("append", {"characters": f"@{token} "})


@threads.may_block
def project_files(folders: list[str]) -> list[str]:
    """Up to MAX_PROJECT_FILES files under `folders`: a walk that takes seconds
    on a big or network project, so never on Sublime's main or worker thread."""
    files: list[str] = []
    for folder in folders:
        for root, dirs, names in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_FOLDERS and not d.startswith("."))
            files.extend(os.path.join(root, n) for n in sorted(names))
            if len(files) >= MAX_PROJECT_FILES:
                return files[:MAX_PROJECT_FILES]
    return files


class QwenChatAttachFileCommand(ActiveChatCommand):
    """`@` in the composer: pick an open or project file to attach."""

    def run(self, typed: bool = False) -> None:
        window = self.window
        chat = self.active_chat()
        composer = chat.composer_view if chat is not None else None
        if chat is None or composer is None or not composer.is_valid():
            return
        if typed:
            composer.run_command("insert", {"characters": "@"})
        open_views = {v.file_name(): v for v in window.views() if v.file_name() and not is_chat_view(v)}
        folders = window.folders()

        def relative(path: str) -> str:
            for folder in folders:
                if path.startswith(folder.rstrip(os.sep) + os.sep):
                    return os.path.relpath(path, folder).replace(os.sep, "/")
            return os.path.basename(path)

        def gathered() -> None:
            paths = list(dict.fromkeys([p for p in open_views if p] + project_files(folders)))
            choices = [*MENTIONS, PASTE_IMAGE]  # the mentions first, then the files
            items = [panel_item(f"@{c}", annotation=MENTIONS.get(c, "the clipboard's image")) for c in choices]
            items += [panel_item(relative(p), annotation="open" if p in open_views else "") for p in paths]

            def picked(index: int) -> None:
                if index < 0:
                    return
                if index < len(choices):
                    pick(window, chat, choices[index], "token" if typed else "@", editor_view(window))
                    return
                index -= len(choices)
                self._attach(chat, composer, paths[index], open_views.get(paths[index]), relative(paths[index]), typed)

            sublime.set_timeout(lambda: window.show_quick_panel(items, picked, placeholder="Attach which file?"))

        in_background(gathered, "attach file list")

    @staticmethod
    def _attach(chat: WindowChat, composer: sublime.View, path: str, view: sublime.View | None, name: str, typed: bool) -> None:
        """Attach the open tab's text, or the file as on disk, read on a thread of
        its own (an image of many MB is not read on the main thread)."""
        text = view_text(view) if view is not None and view.is_valid() else None
        options = context_options()

        def make() -> tuple[JsonObject | None, str | None]:
            try:
                return attached_file_block(path, text, options), None
            except (OSError, ValueError) as error:
                return None, f"Qwen Code: cannot attach {name}: {error}"

        def finish(block: JsonObject | None, problem: str | None) -> None:
            if problem is not None:
                sublime.status_message(problem)
            elif block is None:
                sublime.status_message(f"Qwen Code: {name} is excluded from what is sent (excluded_file_patterns)")
            else:
                chat.attachments[name] = block
                composer.run_command("insert", {"characters": f"{name} " if typed else f"@{name} "})
                composer.window() and composer.window().focus_view(composer)  # type: ignore[union-attr]

        if text is not None:
            finish(*make())
            return

        command = contextvars.copy_context()  # the keys back in the composer: part of the user's pick

        @threads.may_block
        def read() -> None:
            made = make()
            sublime.set_timeout(lambda: command.run(finish, *made))

        in_background(read, "attach")
