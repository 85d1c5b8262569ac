"""The agent's questions about a file (may it read an excluded file, write
outside the folders or into `.git`) as the user meets them.

Sublime refuses a quick panel while another is open (the user's Goto
Anything, Chat History, a form…): "Quick Panel Unavailable" in its console,
and the callback is never called (sublime_text#6832). A question shown by
itself could so vanish, the agent waiting for ever. So each question is told
in the chat's transcript and the status bar, its panel is shown when asked,
shown again whenever the keys come back to a view of the window (the user's
panel closed: a refused show has no effect, so trying again is harmless), and
Qwen Code: Answer File Access… opens it at any time."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import sublime
import sublime_plugin

from ....core import threads

RETRY_MS = 100  # after the keys came back: a panel the user chains from theirs opens first


@dataclass(eq=False)
class FileQuestion:
    """One question waiting for the user's answer, answered once."""

    window: sublime.Window
    items: list[list[str]]
    placeholder: str
    chosen: Callable[[int], None]  # the pick (-1: Esc), called once
    answered: bool = field(default=False)

    @threads.on_main
    def show(self) -> None:
        """Show its panel (main thread); refused by Sublime while another is open."""
        if not self.answered and self.window.is_valid():
            self.window.show_quick_panel(self.items, self._picked, sublime.QuickPanelFlags.KEEP_OPEN_ON_FOCUS_LOST,
                                         selected_index=0, placeholder=self.placeholder)

    def _picked(self, index: int) -> None:
        if not self.answered:
            self.answered = True
            waiting.discard(self)
            self.chosen(index)

    def drop(self) -> None:
        """Answered another way (the turn was cancelled, the chat closed)."""
        self.answered = True
        waiting.discard(self)


class _Waiting:
    """The questions not answered yet, in the order asked (any thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._questions: list[FileQuestion] = []

    def add(self, question: FileQuestion) -> None:
        with self._lock:
            self._questions.append(question)

    def discard(self, question: FileQuestion) -> None:
        with self._lock:
            if question in self._questions:
                self._questions.remove(question)

    def first_in(self, window: sublime.Window) -> FileQuestion | None:
        with self._lock:
            questions = list(self._questions)
        return next((q for q in questions if q.window.id() == window.id() and not q.answered), None)


waiting = _Waiting()


def ask(question: FileQuestion) -> None:
    """Show `question` now (any thread), and again until it is answered (see the module's doc)."""
    waiting.add(question)
    sublime.set_timeout(question.show)


class FileQuestionListener(sublime_plugin.EventListener):
    def on_activated(self, view: sublime.View) -> None:
        window = view.window()
        if window is None or view.settings().get("is_widget"):
            return  # the keys went into a panel's input, not back to a view
        question = waiting.first_in(window)
        if question is not None:
            sublime.set_timeout(question.show, RETRY_MS)


class QwenChatAnswerFileAccessCommand(sublime_plugin.WindowCommand):
    """Qwen Code: Answer File Access…: the agent's waiting question about a file, in its panel."""

    def run(self) -> None:
        question = waiting.first_in(self.window)
        if question is None:
            self.window.status_message("Qwen Code: no question about a file is waiting")
        else:
            question.show()

    def is_enabled(self) -> bool:
        return waiting.first_in(self.window) is not None
