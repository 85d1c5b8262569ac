"""Generate Unit Tests in two steps: the model recommends cases, the user
picks one or more in a quick panel (each pick toggles a case; the first item
generates), then the model writes the tests, proposed as a test file in the
shared review. Accept opens that text as an unsaved tab with the test
file's path (an existing test file's tab gets the new text, unsaved)."""

from __future__ import annotations

import contextvars
import os
from dataclasses import replace

import sublime

from ...core.actions.proposal import last_code_block, test_cases, test_file_for
from ...core.reviews import UnreadableFile
from ..editor import find_open_view, view_text
from ..paths import shown_path
from ..reviews.review_tabs import reviews
from ..view_writes import apply_proposal
from .finished_job import FinishedJob

CHOSEN, NOT_CHOSEN = "☑", "☐"
LOAD_POLL_MS = 50


def choose_cases(job: FinishedJob, answer: str) -> str:
    """Offer the answer's cases; the observers' outcome of this step."""
    cases = test_cases(answer)
    if not cases:
        job.say("\n\n*No test cases in the answer.*\n")
        return "answered"
    CasePicker(job, cases).show()
    return "answered"


class CasePicker:
    def __init__(self, job: FinishedJob, cases: list[str]) -> None:
        self.job = job
        self.cases = cases
        self.chosen = [True] * len(cases)

    def show(self, selected: int = 0) -> None:
        count = sum(self.chosen)
        items = [f"Generate tests for the {count} chosen case{'s' if count != 1 else ''}"] + [
            f"{CHOSEN if chosen else NOT_CHOSEN} {case}" for case, chosen in zip(self.cases, self.chosen, strict=True)
        ]
        self.job.window.show_quick_panel(items, self._picked, selected_index=selected,
                                         placeholder="Pick the cases to test (each pick toggles one)")

    def _picked(self, index: int) -> None:
        if index < 0:
            return
        if index > 0:
            self.chosen[index - 1] = not self.chosen[index - 1]
            sublime.set_timeout(lambda: self.show(index))
            return
        cases = tuple(case for case, chosen in zip(self.cases, self.chosen, strict=True) if chosen)
        if not cases:
            self.job.window.status_message("Qwen Code: choose at least one case")
            sublime.set_timeout(lambda: self.show(0))
            return
        self.job.follow_up("unit_tests_code", lambda context: replace(context, cases=cases))


def propose_test_file(job: FinishedJob, answer: str) -> str:
    """Open the review of the test file the answer ends with; the outcome."""
    block = last_code_block(answer)
    source = job.view.file_name()
    if block is None:
        job.say("\n\n*No code block in the answer: nothing to propose.*\n")
        return "answered"
    if source is None:
        job.say("\n\n*Not proposed: the tab has no file; save it first.*\n")
        return "answered"
    path = test_file_for(source, job.window.folders())
    try:
        disk = job.disk_of(path)
    except UnreadableFile as error:
        job.say(f"\n\n*Not proposed: {error}*\n")
        return "answered"
    existing = find_open_view(path)
    before = view_text(existing) if existing is not None else disk.text
    block = block if block.endswith("\n") else block + "\n"  # a file ends with a newline
    proposed = f"{before.rstrip()}\n\n\n{block}" if before.strip() else block
    reviews.show(*reviews.propose(path, proposed, TestFileReviewOwner(job.window, path, before), disk))
    return "proposed"


class TestFileReviewOwner:
    """The owner of a test file's review (a `ReviewOwner`): Accept puts the
    text in the test file's tab, unsaved."""

    note = "Accept opens this in the test file's tab, unsaved: saving it stays your choice."

    def __init__(self, window: sublime.Window, path: str, made_from: str) -> None:
        self.window = window
        self.path = path
        self.made_from = made_from  # the test file's text (tab or disk) the proposal adds to

    @property
    def alive(self) -> bool:
        return self.window.is_valid()

    def rejected(self) -> None:
        pass  # nothing was opened

    def accepted(self, text: str) -> None:
        if not self.window.is_valid():
            return
        view = self.window.find_open_file(self.path)
        if view is None:
            if os.path.exists(self.path):
                view = self.window.open_file(self.path)
            else:
                view = self.window.new_file()
                view.retarget(self.path)
                syntax = sublime.find_syntax_for_file(self.path, text.split("\n", 1)[0])
                if syntax is not None:
                    view.assign_syntax(syntax)
        _fill_when_loaded(view, text, self.made_from, contextvars.copy_context())


def _fill_when_loaded(view: sublime.View, text: str, made_from: str, command: contextvars.Context) -> None:
    """Fill the test file's tab once loaded and focus it: the Accept the user
    clicked goes on (`command`, its context, carried over each wait). A tab
    that no longer holds what the proposal was made from keeps its text."""
    if not view.is_valid():
        return
    if view.is_loading():
        sublime.set_timeout(lambda: command.run(_fill_when_loaded, view, text, made_from, command), LOAD_POLL_MS)
        return
    refusal = apply_proposal(view, text, made_from)
    window = view.window()
    if window is None:
        return
    window.focus_view(view)
    where = shown_path(window, view.file_name() or "")
    window.status_message(f"Qwen Code: {where} {refusal}" if refusal
                          else f"Qwen Code: the tests are in {where} (not saved yet)")
