"""The window's "Qwen Code" answer view: Markdown the answer streams into,
at most `FLUSH_MS` apart whatever the rate of the pieces. It opens where
`actions_answer_place` says, the code staying visible: "beside" (a group
split off the code's, given back when the answer closes), "panel" (the
bottom panel, as Sublime's build output; Esc hides it) or "tab" (a tab in
the code's group). One answer view a window: the next answer reuses it,
and the earlier ones stay a key away (`RecentAnswers`)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import sublime

from ...core import threads
from ..editor import end_visible
from ..placement import code_group, new_view_beside, show_without_focus
from ..settings import userprefs

ANSWER_LABEL = "qwen_actions.answer"
PANEL = "qwen_answer"  # the output panel "output.qwen_answer"
MARKDOWN = "Packages/Markdown/Markdown.sublime-syntax"
FLUSH_MS = 34  # a little over 1/30 s: at most 30 view updates a second
ANSWERS_KEPT = 20


_answer_views: set[int] = set()  # the ids of the answer tabs this load of the package made


def is_answer_view(view: sublime.View) -> bool:
    """One of our answer views, from our own record: never from its settings,
    which a project's settings set on every view of its window."""
    window = view.window()
    panel = window.find_output_panel(PANEL) if window is not None else None
    return view.id() in _answer_views or (panel is not None and panel.id() == view.id())


def _answer_tab(window: sublime.Window) -> sublime.View | None:
    return next((view for view in window.views() if view.id() in _answer_views), None)


def answer_place() -> str:
    return userprefs().actions_answer_place


def find_answer(window: sublime.Window) -> sublime.View | None:
    """The window's answer view, in the place the setting names first."""
    tab = _answer_tab(window)
    panel = window.find_output_panel(PANEL)
    return (panel or tab) if answer_place() == "panel" else (tab or panel)


def _prepare(view: sublime.View) -> sublime.View:
    view.set_scratch(True)
    _answer_views.add(view.id())
    settings = view.settings()
    settings.set(ANSWER_LABEL, True)  # for tools and tests to find it; the package itself reads its record
    settings.set("word_wrap", True)
    if sublime.find_syntax_by_scope("text.html.markdown"):
        view.assign_syntax(MARKDOWN)
    view.set_read_only(True)
    return view


def _new_tab(window: sublime.Window, group: int) -> sublime.View:
    view = window.new_file()
    window.set_view_index(view, group, window.num_views_in_group(group))
    return view


@threads.on_main
def show_answer(window: sublime.Window, code: sublime.View) -> sublime.View:
    """The window's answer view, opened where the setting says and made
    visible; the focus stays in `code` except in a tab of the code's group."""
    place = answer_place()
    if place == "panel":
        panel = window.find_output_panel(PANEL) or _prepare(window.create_output_panel(PANEL))
        window.run_command("show_panel", {"panel": f"output.{PANEL}"})
        return panel
    view = _answer_tab(window)  # a tab, wherever it is now
    if view is None:
        view = _prepare(new_view_beside(window, code) if place == "beside" else _new_tab(window, code_group(window, code)))
        view.set_name("Qwen Code")
    if place == "tab":
        window.focus_view(view)
    else:
        show_without_focus(window, view, code)
    return view


@dataclass
class RecentAnswers:
    """A window's finished answers, oldest first, and which one the view shows."""

    answers: list[str] = field(default_factory=list)
    shown: int = 0

    def add(self, text: str) -> None:
        self.answers = [*self.answers, text][-ANSWERS_KEPT:]
        self.shown = len(self.answers) - 1

    def step(self, by: int) -> str | None:
        """The answer `by` steps older (-1) or newer (+1), or None past either end."""
        target = self.shown + by
        if not 0 <= target < len(self.answers):
            return None
        self.shown = target
        return self.answers[target]

    def label(self) -> str:
        return f"answer {self.shown + 1} of {len(self.answers)}"


recent_answers: dict[int, RecentAnswers] = {}  # window id -> its answers


def set_text(view: sublime.View, text: str) -> None:
    view.set_read_only(False)
    view.run_command("qwen_replace_report", {"text": text})
    view.set_read_only(True)


def append(view: sublime.View, text: str) -> None:
    """Add `text` at the end; the view follows only while its end is on screen
    (the user scrolled up to read: it stays there)."""
    view.run_command("append", {"characters": text, "force": True, "scroll_to_end": end_visible(view)})


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
