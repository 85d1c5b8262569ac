"""The review view: one read-only tab per set of changes, in the code's
group, showing every pending hunk (a header line per file, removed and
added lines scoped as Sublime's Diff syntax scopes them). Which views are
review views is our record (`_open`), never a view setting. A view opened
by anything but the user (a live turn, the driver, a permission) leaves the
keys where they were. While its source changes (a running turn writes),
the view follows: what was kept or undone stays so."""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Protocol

import sublime
import sublime_plugin

from ...core import threads
from ...core.review_hunks.review import KEPT, UNDONE, ChangedFile, HunkReview, ReviewFile
from ...core.review_hunks.review_text import (
    Comment,
    ReviewText,
    comments_by_line,
    join,
    render_file,
    render_parts,
    render_title,
)
from ..background import in_background
from ..editor import replace_text
from ..paths import path_display
from ..placement import code_group, keys_kept

log = logging.getLogger(__name__)

READ_THREAD = "review read"  # reading the changes and diffing them (the headless driver waits for this name)
# Each line's first character gives its scope (removed, added, a file's header): no regions to move.
SYNTAX = "Packages/QwenCompanion/syntaxes/QwenReview.sublime-syntax"
REPLACE_COMMAND = "qwen_review_view_replace"
VIEW_LABEL = "qwen_review_hunks.view"  # for tools and tests to find it; the package itself reads its record


class ReviewSource(Protocol):
    """Where a review's changes come from, and what keeping or undoing a whole file means there."""

    @property
    def key(self) -> tuple[object, ...]: ...
    @property
    def title(self) -> str: ...
    def changes(self) -> list[ChangedFile]: ...
    def comments(self) -> list[Comment]: ...
    def watch(self, wrote: Callable[[str], None]) -> Callable[[], None]: ...
    def settled(self, window: sublime.Window, path: str, state: str) -> None: ...
    def keep_whole(self, window: sublime.Window, path: str | None) -> None: ...
    def undo_whole(self, window: sublime.Window, path: str | None) -> None: ...
    def view_of(self, window: sublime.Window, path: str) -> sublime.View | None:
        """The view an undo of `path` goes into; None: the file on disk."""
    def write_view(self, view: sublime.View, text: str, read: str) -> str | None:
        """An undo's text into that view while it holds `read`: None when done, else why not."""


@dataclass
class OpenHunkReview:
    view: sublime.View
    window_id: int
    source: ReviewSource
    review: HunkReview = field(default_factory=HunkReview)
    head: str = ""  # the view's first lines: what it reviews, the keys
    parts: list[ReviewText] = field(default_factory=list)  # each file's part of the view, in order
    busy: bool = False  # an undo is on its way: one action at a time
    refresh_due: bool = False
    unwatch: Callable[[], None] | None = None

    def window(self) -> sublime.Window | None:
        return self.view.window()

    def target(self, line: int) -> tuple[int, int] | None:
        """(file index, hunk index or NO_HUNK) of the view's `line`; None on the lines of no file."""
        line -= self.head.count("\n")
        for part in self.parts:
            if 0 <= line < len(part.targets):
                return part.targets[line]
            line -= len(part.targets)
        return None

    def hunk_lines(self) -> list[int]:
        """The view's line of each hunk's header, in order."""
        lines, found = self.head.count("\n"), []
        for part in self.parts:
            found += [line + lines for line in part.hunk_lines]
            lines += len(part.targets)
        return found


_open: dict[int, OpenHunkReview] = {}  # view id -> its review: which views are review views


def is_review_view(view: sublime.View) -> bool:
    return view.id() in _open


def review_of(view: sublime.View) -> OpenHunkReview | None:
    return _open.get(view.id())


def reviews_of(source_key: tuple[object, ...]) -> OpenHunkReview | None:
    return next((each for each in _open.values() if each.source.key == source_key and each.view.is_valid()), None)


@threads.on_main
def open_review(window: sublime.Window, source: ReviewSource, by_user: bool,
                done: Callable[[OpenHunkReview], None] | None = None) -> OpenHunkReview:
    """The review of `source` in a tab of the code's group (the one already
    open for it, refreshed); focused only when the user asked for it. The
    changes are read and diffed on a thread of ours, then shown (and `done`)."""
    record = reviews_of(source.key)
    if record is None:
        group = code_group(window)
        with nullcontext() if by_user else keys_kept(window):
            view = window.new_file()
            window.set_view_index(view, group, window.num_views_in_group(group))
        _prepare(view, source.title)
        record = OpenHunkReview(view, window.id(), source)
        _open[view.id()] = record
        record.unwatch = source.watch(lambda path: sublime.set_timeout(lambda: refresh_soon(record)))
    if by_user:
        window.focus_view(record.view)
    display = path_display(window)

    def read() -> None:
        review = HunkReview(source.changes())
        parts = render_parts(review, display, source.comments())
        sublime.set_timeout(lambda: _shown(record, review, parts, done))

    in_background(read, READ_THREAD)
    return record


def _prepare(view: sublime.View, title: str) -> None:
    view.set_scratch(True)
    view.set_name(f"Review: {title}")
    settings = view.settings()
    settings.set(VIEW_LABEL, True)
    for name, value in (("word_wrap", False), ("line_numbers", False), ("gutter", True),
                        ("draw_white_space", "none"), ("highlight_line", True), ("scroll_past_end", False)):
        settings.set(name, value)
    view.assign_syntax(SYNTAX)
    view.set_read_only(True)


@threads.on_main
def _shown(record: OpenHunkReview, review: HunkReview, parts: list[ReviewText],
           done: Callable[[OpenHunkReview], None] | None) -> None:
    if not record.view.is_valid():
        return
    record.review = review
    show(record, parts)
    if done is not None:
        done(record)


def _display(record: OpenHunkReview) -> Callable[[str], str]:
    window = record.window()
    return path_display(window) if window is not None else str


@threads.on_main
def show(record: OpenHunkReview, parts: list[ReviewText] | None = None) -> None:
    """The whole review in its view (its parts made again unless given); the caret stays on its line."""
    view = record.view
    line = _caret_line(view)
    record.head = render_title(record.source.title, record.review)
    record.parts = parts if parts is not None else render_parts(record.review, _display(record),
                                                                record.source.comments())
    whole = join(record.head, record.parts)
    _edit(view, lambda: replace_text(view, whole.text))
    _caret_to(view, line)


@threads.on_main
def show_file(record: OpenHunkReview, index: int) -> None:
    """File `index`'s part of the view made again (a hunk of it kept or
    undone): only that part and the first line are replaced."""
    view = record.view
    line = _caret_line(view)
    start = len(record.head) + sum(len(part.text) for part in record.parts[:index])
    old = record.parts[index]
    review_file = record.review.files[index]
    comments = comments_by_line(record.source.comments()).get(review_file.path, {})
    part = render_file(index, review_file, _display(record), comments)
    record.parts[index] = part
    head = render_title(record.source.title, record.review)
    _edit(view, lambda: view.run_command(REPLACE_COMMAND, {"begin": start, "end": start + len(old.text),
                                                           "text": part.text}))
    _edit(view, lambda: view.run_command(REPLACE_COMMAND, {"begin": 0, "end": len(record.head), "text": head}))
    record.head = head
    _caret_to(view, line)


def _edit(view: sublime.View, change: Callable[[], None]) -> None:
    view.set_read_only(False)
    change()
    view.set_read_only(True)


def _caret_line(view: sublime.View) -> int:
    selection = view.sel()
    return view.rowcol(selection[0].b)[0] if len(selection) else 0


def _caret_to(view: sublime.View, line: int) -> None:
    last = view.rowcol(view.size())[0]
    point = view.text_point(min(line, max(last - 1, 0)), 0)
    selection = view.sel()
    selection.clear()
    selection.add(sublime.Region(point))


class QwenReviewViewReplaceCommand(sublime_plugin.TextCommand):
    """Internal: a range of the review view's own text replaced (one file's part, the first line)."""

    def run(self, edit: sublime.Edit, begin: int, end: int, text: str) -> None:
        self.view.replace(edit, sublime.Region(begin, end), text)

    def is_visible(self) -> bool:
        return False


@threads.on_main
def refresh_soon(record: OpenHunkReview) -> None:
    """The source changed (a running turn wrote): the view follows once, however many writes came."""
    if record.refresh_due or not record.view.is_valid():
        return
    record.refresh_due = True
    sublime.set_timeout(lambda: refresh(record))


@threads.on_main
def refresh(record: OpenHunkReview) -> None:
    """The source's changes again, diffed on a thread of ours: a file given as
    before is not diffed again; what was kept or undone stays so. Put off
    while an undo is on its way (its hunk's number must stay true)."""
    record.refresh_due = False
    if not record.view.is_valid():
        return
    if record.busy:
        sublime.set_timeout(lambda: refresh_soon(record), 100)
        return
    earlier = record.review
    display = _display(record)

    def read() -> None:
        review = earlier.refreshed(record.source.changes())
        parts = render_parts(review, display, record.source.comments())
        sublime.set_timeout(lambda: _shown(record, review, parts, None))

    in_background(read, READ_THREAD)


@threads.on_main
def settle_if_done(record: OpenHunkReview, review_file: ReviewFile) -> None:
    """A file with no hunk pending any more is settled at its source: undone
    when none of its hunks was kept, else kept."""
    window = record.window()
    if window is not None and not review_file.whole_only and not review_file.pending:
        record.source.settled(window, review_file.path, UNDONE if review_file.kept == 0 else KEPT)


def forget(view: sublime.View) -> None:
    record = _open.pop(view.id(), None)
    if record is not None and record.unwatch is not None:
        record.unwatch()
