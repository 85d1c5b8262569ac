"""Qwen Code: Mention… and Paste Image into Chat, and the composer's part:
a mention completed in the popup is made, Paste with no text on the
clipboard pastes its image."""

from __future__ import annotations

from typing import Any, ClassVar

import sublime
import sublime_plugin

from ...quick_panel_items import panel_item
from ..command_bases import WindowChatCommand, chat_for
from ..window_chats import chat_role, chats
from .mentions import COMPLETED, MENTIONS, PASTE_IMAGE, mention, paste_image, pick
from .prompt_context import editor_view


class QwenChatMentionCommand(WindowChatCommand):
    """Qwen Code: Mention… — `kind` (symbol, diagnostics, diagnostics:window,
    diff, terminal, image), `name` for a symbol; without `kind`, a picker."""

    def run(self, kind: str | None = None, name: str | None = None) -> None:
        window = self.window
        chat = self.window_chat()
        if chat is None:
            return
        editor = editor_view(window)
        if kind is not None:
            mention(window, chat, kind, name, "@", editor)
            return
        choices = [*MENTIONS, PASTE_IMAGE]
        items = [panel_item(f"@{c}" if c != PASTE_IMAGE else "Paste image",
                            annotation=MENTIONS.get(c, "the clipboard's image")) for c in choices]

        def picked(index: int) -> None:
            if index >= 0:
                pick(window, chat, choices[index], "@", editor)

        window.show_quick_panel(items, picked, placeholder="Mention what?")


# What Paste in the composer reads of the clipboard to tell text from an
# image: past `get_clipboard`'s default 16 MiB Sublime answers "" as if there
# were no text, and a long text pasted would be taken for an image and lost.
CLIPBOARD_LIMIT = 2**31 - 1


class _PastingText:
    views: ClassVar[set[int]] = set()  # composers whose next Paste is text, already checked


class QwenChatPasteImageCommand(sublime_plugin.TextCommand):
    """Qwen Code: Paste Image into Chat — the clipboard's image, through the
    platform's tool (a text command). Paste in the composer becomes it with
    `text_first`: the clipboard's text, if it holds any, is pasted instead."""

    def run(self, edit: sublime.Edit, text_first: bool = False) -> None:
        view = self.view
        if not text_first:
            chat = chat_for(view.window())
            if chat is not None:
                paste_image(chat, "@")
            return

        def got(text: str) -> None:
            if not view.is_valid():
                return
            if text:
                _PastingText.views.add(view.id())
                view.run_command("paste")
            else:
                view.run_command("qwen_chat_paste_image")

        sublime.get_clipboard_async(got, CLIPBOARD_LIMIT)


class MentionListener(sublime_plugin.EventListener):
    def on_post_text_command(self, view: sublime.View, command_name: str, args: dict[str, Any] | None) -> None:
        """A mention completed in the composer is made now (`@symbol:` first lists the names)."""
        if command_name != "commit_completion" or not _is_composer(view):
            return
        window, selection = view.window(), view.sel()
        chat = chats.get(window)
        if window is None or chat is None or len(selection) == 0:
            return
        point = selection[0].b
        before = view.substr(sublime.Region(view.line(point).begin(), point))
        if before.endswith("@symbol:"):
            view.run_command("auto_complete")  # now the names
            return
        completed = COMPLETED.search(before)
        if completed is None or completed[1] in chat.attachments:
            return
        kind, _, name = completed[1].partition(":")
        mention(window, chat, completed[1] if kind == "diagnostics" else kind, name or None, "", editor_view(window))

    def on_text_command(self, view: sublime.View, command_name: str, args: dict[str, Any] | None) -> Any:
        """Paste in the composer: its text, or with no text on the clipboard its
        image (the clipboard read without blocking, whatever its size)."""
        if command_name != "paste" or not _is_composer(view):
            return None
        if view.id() in _PastingText.views:
            _PastingText.views.discard(view.id())
            return None
        return ("qwen_chat_paste_image", {"text_first": True})


def _is_composer(view: sublime.View) -> bool:
    return chat_role(view) == "composer"
