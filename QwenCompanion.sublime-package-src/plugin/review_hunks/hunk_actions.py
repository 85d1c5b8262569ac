"""Keep and Undo in the review view, a hunk, a file or all of them. Keep
only changes what the rest is compared with. Undo writes through the write
path: in an open view one undo step, saved only when the view was clean;
on disk the file's own encoding and newlines kept. Either is refused,
nothing changed, when the lines the hunk covers no longer hold what the
review showed (the user typed or saved over them since); the user's edits
elsewhere in the file stay. The new text is made on a thread of ours."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

import sublime

from ...core import threads
from ...core.files.agent_files import Refused, decode, encode, read_bytes
from ...core.files.user_files import replace_bytes
from ...core.review_hunks.review import Stale
from ..background import in_background
from ..editor import view_text
from ..placement import code_group
from ..settings import fallback_encoding
from .review_view import OpenHunkReview, settle_if_done, show, show_file

log = logging.getLogger(__name__)

UNDO_THREAD = "review undo"  # the headless driver waits for this name
Done = Callable[[str | None], None]  # told None when done, else why not


def _told(window: sublime.Window | None, path: str, why_not: str | None) -> None:
    if why_not is not None and window is not None:
        window.status_message(f"Qwen Code: not undone: {path}: {why_not}")


def _waits_for_undo(record: OpenHunkReview) -> bool:
    """An undo is on its way: the hunks' numbers must not change under it."""
    if record.busy:
        sublime.status_message("Qwen Code: an undo is on its way; try again once it is done")
    return record.busy


@threads.on_main
def keep(record: OpenHunkReview, file_index: int, hunk: int | None) -> None:
    """Keep hunk `hunk` of the file (None: all of the file's)."""
    if _waits_for_undo(record):
        return
    review_file = record.review.files[file_index]
    window = record.window()
    if review_file.whole_only and window is not None:
        record.source.keep_whole(window, review_file.path)
    if hunk is None:
        review_file.keep_all()
    else:
        review_file.keep(hunk)
    settle_if_done(record, review_file)
    show_file(record, file_index)


@threads.on_main
def keep_all(record: OpenHunkReview) -> None:
    if _waits_for_undo(record):
        return
    window = record.window()
    for review_file in record.review.files:
        review_file.keep_all()
    if window is not None:
        record.source.keep_whole(window, None)
    show(record)


@threads.on_main
def undo(record: OpenHunkReview, file_index: int, hunk: int | None, done: Done | None = None) -> None:
    """Undo hunk `hunk` of the file (None: all of the file's pending hunks);
    `done` is told the outcome on the main thread."""
    review_file = record.review.files[file_index]
    window = record.window()
    path = review_file.path

    def finish(why_not: str | None) -> None:
        record.busy = False
        if why_not is None:
            if hunk is None:
                review_file.undone_all()
            else:
                review_file.undone_hunk(hunk)
            settle_if_done(record, review_file)
        _told(window, path, why_not)
        if record.view.is_valid() and record.review.files[file_index:file_index + 1] == [review_file]:
            show_file(record, file_index)
        if done is not None:
            done(why_not)

    if _waits_for_undo(record) or window is None:
        if done is not None:
            done("another undo is on its way")
        return
    if review_file.whole_only or (hunk is None and not review_file.existed and review_file.undone == 0):
        record.source.undo_whole(window, path)  # byte-exact, or the file the changes made removed
        finish(None)
        return
    record.busy = True

    def new_text(actual: str) -> str:
        return review_file.undo_all_text(actual) if hunk is None else review_file.undo_text(hunk, actual)

    view = record.source.view_of(window, path)
    if view is not None and not view.is_loading():
        _undo_in_view(view, new_text, record.source.write_view, finish)
    else:
        encoding = fallback_encoding()
        in_background(lambda: _undo_on_disk(path, new_text, encoding, finish), UNDO_THREAD)


def _undo_in_view(view: sublime.View, new_text: Callable[[str], str],
                  write: Callable[[sublime.View, str, str], str | None], finish: Done) -> None:
    read = view_text(view)

    def work() -> None:
        try:
            text = new_text(read)
        except Stale as error:
            why_not = str(error)
            sublime.set_timeout(lambda: finish(why_not))
            return
        sublime.set_timeout(lambda: finish(write(view, text, read) if view.is_valid() else "its view closed"))

    in_background(work, UNDO_THREAD)


@threads.may_block
def _undo_on_disk(path: str, new_text: Callable[[str], str], encoding: str, finish: Done) -> None:
    """The file read, its new text made and written in its own encoding and newlines."""
    why_not: str | None = None
    try:
        data = read_bytes(path)
        mode = os.stat(path).st_mode & 0o7777
        found = decode(data, encoding)
        replace_bytes(path, encode(new_text(found.text), found.shape), mode)
    except (Stale, Refused, OSError) as error:
        log.warning("review: %s was not undone: %s", path, error)
        why_not = str(error)
    sublime.set_timeout(lambda: finish(why_not))


@threads.on_main
def undo_all(record: OpenHunkReview, done: Done | None = None) -> None:
    """Every file's pending hunks undone, one file after another; `done` is told the first refusal, if any."""
    pending = [index for index, each in enumerate(record.review.files) if each.pending]
    refused: list[str] = []

    def next_file(why_not: str | None) -> None:
        if why_not is not None:
            refused.append(why_not)
        if not pending:
            if done is not None:
                done(refused[0] if refused else None)
            return
        undo(record, pending.pop(0), None, next_file)

    next_file(None)


@threads.on_main
def open_at(record: OpenHunkReview, file_index: int, hunk: int | None) -> sublime.View | None:
    """The file at the hunk's first changed line, in the code's group (the user asked: it takes the keys)."""
    window = record.window()
    if window is None:
        return None
    review_file = record.review.files[file_index]
    line = review_file.hunks[hunk].first_changed_line + 1 if hunk is not None and review_file.hunks else 1
    return window.open_file(f"{review_file.path}:{line}:1", sublime.NewFileFlags.ENCODED_POSITION,
                            group=code_group(window))
