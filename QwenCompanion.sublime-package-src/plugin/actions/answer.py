"""The window's "Qwen Code" answer view: a Markdown scratch tab the answer
streams into, at most `FLUSH_MS` apart whatever the rate of the pieces."""

from __future__ import annotations

import threading

import sublime

ANSWER_SETTING = "qwen_actions.answer"
MARKDOWN = "Packages/Markdown/Markdown.sublime-syntax"
FLUSH_MS = 34  # a little over 1/30 s: at most 30 view updates a second


def answer_view(window: sublime.Window) -> sublime.View:
    """The window's answer view, opened if it has none (main thread)."""
    for view in window.views():
        if view.settings().get(ANSWER_SETTING):
            return view
    view = window.new_file()
    view.set_name("Qwen Code")
    view.set_scratch(True)
    view.settings().set(ANSWER_SETTING, True)
    view.settings().set("word_wrap", True)
    if sublime.find_syntax_by_scope("text.html.markdown"):
        view.assign_syntax(MARKDOWN)
    view.set_read_only(True)
    return view


def set_text(view: sublime.View, text: str) -> None:
    view.set_read_only(False)
    view.run_command("qwen_replace_report", {"text": text})
    view.set_read_only(True)


def append(view: sublime.View, text: str) -> None:
    view.run_command("append", {"characters": text, "force": True, "scroll_to_end": True})


class AnswerStream:
    """Pieces of an answer from any thread, appended on the main thread in
    batches."""

    def __init__(self, view: sublime.View) -> None:
        self.view = view
        self._lock = threading.Lock()
        self._pending: list[str] = []
        self._scheduled = False
        self.updates = 0  # view updates made (the bench counts them)

    def add(self, piece: str) -> None:
        with self._lock:
            self._pending.append(piece)
            if self._scheduled:
                return
            self._scheduled = True
        sublime.set_timeout(self.flush, FLUSH_MS)

    def flush(self) -> None:
        with self._lock:
            text = "".join(self._pending)
            self._pending.clear()
            self._scheduled = False
        if text and self.view.is_valid():
            append(self.view, text)
            self.updates += 1
