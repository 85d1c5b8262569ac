"""Qwen Code: Export Chat… (Markdown, HTML or JSON Lines, into a new tab or a
file the user picks) and the transcript's Copy Conversation / Copy Answer.

The main thread only reads the settings and the chat's name; the transcript
is read, turned into the format (core/chat/history/export.py, which leaves out what
excluded files gave) and written to its file on a thread of our own."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import sublime

from ....core.chat.history.export import FORMATS, answer, export
from ...background import in_background, when_done
from ...editor import replace_text
from ..command_bases import ActiveChatCommand, ChatViewCommand
from ..prompts.prompt_context import context_options
from ..window_chats import WindowChat, chat_role
from .rewind_commands import TURN_OF_BLOCK

FORMAT_NAMES = {"markdown": "Markdown", "html": "HTML", "jsonl": "JSON Lines"}
# The syntax Sublime ships for each format (JSON Lines reads as JSON, one object a line): a new tab has none of its own.
FORMAT_SYNTAXES = {"markdown": "Packages/Markdown/Markdown.sublime-syntax", "html": "Packages/HTML/HTML.sublime-syntax",
                   "jsonl": "Packages/JSON/JSON.sublime-syntax"}


def _off_main(work: Callable[[], str]) -> Future[str]:
    done: Future[str] = Future()

    def run() -> None:
        try:
            done.set_result(work())
        except Exception as error:
            done.set_exception(error)
            raise

    in_background(run, "chat export")
    return done


def exported(chat: WindowChat, fmt: str) -> Future[str]:
    """The chat in `fmt`, made off the main thread (call on the main thread)."""
    excludes, transcript, title, session_id = context_options().excludes, chat.transcript, chat.title, chat.session_id
    return _off_main(lambda: export(transcript.blocks(), fmt, title, session_id, excludes, chat.requests_shown()))


def write_export(path: str, text: str) -> None:
    """A file the user picked for the export (not a file of the project the agent changes)."""
    with open(path, "w", encoding="utf-8", newline="\n") as out:
        out.write(text)


class QwenChatExportCommand(ActiveChatCommand):
    """`format` markdown (default), html or jsonl (asked when left out); `to`
    "tab" (a new tab) or "file" (a file the user picks)."""

    def run(self, chat: int | None = None, format: str | None = None, to: str = "tab") -> None:
        window = self.window
        found = self.active_chat(chat)
        if found is None:
            window.status_message("Qwen Code: no chat to export")
            return
        if format not in FORMATS:
            names = list(FORMAT_NAMES)

            def picked(index: int) -> None:
                if index >= 0:
                    self.run(found.chat_id, names[index], to)

            window.show_quick_panel([FORMAT_NAMES[n] for n in names], picked, placeholder="Export the chat as…")
            return
        fmt = format
        if to == "file":
            extension = FORMATS[fmt]

            def chosen(path: str | None) -> None:
                if path is not None:
                    self._to_file(found, fmt, path)

            sublime.save_dialog(chosen, file_types=[(FORMAT_NAMES[fmt], [extension])], name=f"{found.title}.{extension}",
                                extension=extension)
            return
        when_done(exported(found, fmt), lambda done: self._to_tab(found, fmt, done))

    def _to_file(self, chat: WindowChat, fmt: str, path: str) -> None:
        window = self.window

        def written(done: Future[str]) -> None:
            error = done.exception()
            window.status_message(f"Qwen Code: could not export the chat: {error}" if error is not None
                                  else f"Qwen Code: chat exported to {path}")

        text = exported(chat, fmt)

        def write() -> str:
            write_export(path, text.result())  # on our thread: waiting for the text blocks no thread of Sublime's
            return path

        when_done(_off_main(write), written)

    def _to_tab(self, chat: WindowChat, fmt: str, done: Future[str]) -> None:
        window = self.window
        error = done.exception()
        if error is not None:
            window.status_message(f"Qwen Code: could not export the chat: {error}")
            return
        if not window.is_valid():
            return
        view = window.new_file()  # the user's own command: the new tab comes to the front
        view.set_name(f"{chat.title}.{FORMATS[fmt]}")
        view.assign_syntax(FORMAT_SYNTAXES[fmt])
        view.set_scratch(True)
        replace_text(view, done.result())


class QwenChatCopyCommand(ChatViewCommand):
    """The transcript's context menu: Copy Conversation (Markdown) or Copy
    Answer (the agent's words of the turn under the mouse, else the last)."""

    def run(self, edit: sublime.Edit, what: str = "conversation", event: dict[str, Any] | None = None) -> None:
        chat = self.view_chat()
        window = self.view.window()
        if chat is None or window is None:
            return
        if what == "answer":
            turn = None
            if event is not None:
                block = chat.transcript.block_at(self.view.window_to_text((event["x"], event["y"])))
                match = TURN_OF_BLOCK.match(block or "")
                turn = int(match[1]) if match else None
            excludes, transcript = context_options().excludes, chat.transcript
            future = _off_main(lambda: answer(transcript.blocks(), turn, excludes, chat.requests_shown()))
        else:
            future = exported(chat, "markdown")

        def copied(done: Future[str]) -> None:
            text = "" if done.exception() is not None else done.result()
            if text:
                sublime.set_clipboard(text)
                window.status_message("Qwen Code: copied")
            else:
                window.status_message("Qwen Code: nothing to copy")

        when_done(future, copied)

    def want_event(self) -> bool:
        return True

    def is_visible(self, what: str = "conversation", event: dict[str, Any] | None = None) -> bool:
        return chat_role(self.view) == "transcript"
