"""Review tabs: the Sublime side of `openDiff` / `closeDiff` (spec section 5)
and of every other edit a feature proposes.

A review is a pair of scratch tabs side by side in the code's place (see
`layout`): the file's current text on the left (read-only) and the proposal
on the right (editable, with the current text as its reference document, so
Sublime's gutter and inline diff show every change). Accept / Reject links sit
in a banner beside the first line. The user's decision goes to the review's
owner (`ReviewOwner`); nothing here writes the file or touches the user's own
buffers. The view methods run on the main thread.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field

import sublime

from ...core import threads
from ...core.memory import LARGE_TEXT, release_freed_memory
from ...core.reviews import (
    DiffRegistry,
    DiskFile,
    Review,
    ReviewOwner,
    UnreadableFile,
    changed_by_stamp,
    disk_changed_warning,
    first_change,
)
from ..editor import find_open_view, read_off_main, view_text, window_for
from ..placement import keys_kept
from .banner import BANNER_KEY, add_note, show_review_banner
from .marks import DIFF_VIEW, REVIEW_ID, SIDE
from .review_layout import ReviewLayouts

log = logging.getLogger(__name__)

FILL_COMMAND = "qwen_review_fill"

TERMINAL_SETTING = "terminus_view"  # Terminus marks its terminal views (tabs and panels) with it
RELEASE_DELAY_MS = 200  # after a large review closes: the CLI's answer has been written by then

REPLACED_NOTE = "A newer proposal for this file replaced this one, so your edits here were not applied."
ORIGINAL_CLOSED_NOTE = "You closed the file's side of this review, which rejected it, so your edits here were not applied."
CLOSED_NOTE = "Qwen Code closed this review (it was answered in the terminal), so your edits here were not applied."
RELOADED_NOTE = "Qwen Companion was reloaded, so this review ended without an answer. Nothing was applied."


@dataclass
class OpenReview:
    """A review that has its two tabs."""

    review: Review
    window: sublime.Window
    original: sublime.View
    proposed: sublime.View
    notes: list[str] = field(default_factory=list)
    orphaned: bool = False
    filled_at: int = -1  # the proposal view's change count once it showed the proposal
    warned_of_disk_change: bool = False  # a second Accept after that warning writes anyway

    @property
    def name(self) -> str:
        return os.path.basename(self.review.file_path)

    def proposal_text(self) -> str:
        """The proposal tab's text (any thread); not copied out of the view while unedited."""
        if not self.proposed.is_valid() or self.proposed.change_count() == self.filled_at:
            return self.review.proposed
        return view_text(self.proposed)


class DiffReviews:
    """Every review of every window; the view methods run on the main thread."""

    def __init__(self) -> None:
        self.registry = DiffRegistry()
        self._by_id: dict[int, OpenReview] = {}
        self._by_view: dict[int, OpenReview] = {}
        self._layouts = ReviewLayouts()
        self._focused: dict[int, sublime.View] = {}  # window id -> the view (tab or panel) last given focus
        # view id -> the text its fill command puts in: the command takes it from
        # here, as Sublime would hand its arguments over as JSON (a 1 MB side:
        # milliseconds of encoding and decoding on the main thread).
        self._fills: dict[int, str] = {}
        # (event, details) for tools that watch reviews come and go (the headless driver).
        self.observers: list[Callable[[str, dict[str, object]], None]] = []

    def _tell(self, event: str, details: dict[str, object]) -> None:
        for observer in list(self.observers):
            observer(event, details)

    # --- queries ----------------------------------------------------------

    def take_fill(self, view: sublime.View) -> str | None:
        """The text waiting for `view`'s fill command, if one does (only while
        the tab is being opened)."""
        return self._fills.pop(view.id(), None)

    def for_view(self, view: sublime.View) -> OpenReview | None:
        return self._by_view.get(view.id())

    def is_review_view(self, view: sublime.View) -> bool:
        return view.id() in self._by_view

    # --- focus --------------------------------------------------------------

    @threads.on_main
    def view_activated(self, view: sublime.View) -> None:
        window = view.window()
        if window is not None:
            self._focused[window.id()] = view

    @threads.on_main
    def _terminal_with_focus(self, window: sublime.Window) -> sublime.View | None:
        """The qwen terminal (a Terminus tab or panel) the user is typing in, if any:
        the CLI asks "Apply this change?" there as the review opens, so keys typed
        in that moment must keep going to it (VS Code's `preserveFocus`)."""
        view = self._focused.get(window.id())
        if view is not None and view.is_valid() and view.settings().get(TERMINAL_SETTING):
            return view
        return None

    # --- opening ----------------------------------------------------------

    def propose(
        self, path: str, text: str, owner: ReviewOwner, disk: DiskFile,
        refusal: Callable[[Review | None, list[Review]], str | None] | None = None,
    ) -> tuple[Review, Review | None]:
        """Register the review of `text` proposed for `path`, whose decision goes
        to `owner`; `disk`, the file as read off the main thread (any thread);
        `refusal` may refuse it (ReviewRefused, see DiffRegistry.open).
        Then `show` it with the review it replaced."""
        return self.registry.open(path, text, owner, disk, refusal)

    @threads.on_main
    def show(self, review: Review, replaced: Review | None) -> None:
        if replaced is not None:
            self.dismiss(replaced.id, REPLACED_NOTE, "replaced")
        if not review.is_open:
            return  # the CLI closed it before its tabs came up
        window = window_for(review.file_path)
        if not window.is_valid():
            log.error("no window to show the review of %s in", review.file_path)
            self.reject(review)
            return
        name = os.path.basename(review.file_path)
        buffer = find_open_view(review.file_path)
        notes = []
        if buffer is not None:
            original = view_text(buffer)
            syntax = buffer.syntax()
            if buffer.is_dirty():
                notes.append(
                    f"{name} has unsaved changes in Sublime. The left side shows them, but Qwen Code "
                    "proposed this from the file on disk, so they are not part of it. Accepting lets Qwen Code "
                    "write this text to disk; your unsaved changes stay in their tab, neither saved nor discarded."
                )
        else:
            original = review.disk.text
            syntax = sublime.find_syntax_for_file(review.file_path, original.split("\n", 1)[0])
        if not review.disk.exists and buffer is None:
            notes.append(f"{name} does not exist yet: accepting lets Qwen Code create it.")
        if review.owner.note is not None:  # a quick action's proposal: the tab, not the disk
            notes = [review.owner.note]

        # An agent's review never takes the keys: what the user types keeps going where it went.
        with keys_kept(window, self._terminal_with_focus(window)):
            left_group, right_group = self._layouts.enter(window, buffer)
            left_name = f"{name} (original)" if review.disk.exists or buffer is not None else f"{name} (new file)"
            left = self._new_view(window, left_group, left_name, original, syntax, review, "original")
            left.set_read_only(True)
            right = self._new_view(window, right_group, f"{name} (Qwen Code proposal)", review.proposed, syntax, review, "proposed")
            right.set_reference_document(original)
            self._show_first_change(left, right, original, review.proposed)
            item = OpenReview(review, window, left, right, notes, filled_at=right.change_count())
            self._by_id[review.id] = item
            self._by_view[left.id()] = self._by_view[right.id()] = item
            self._orphan_check(item)
            self._render(item)
        self._tell(
            "diff_opened",
            {"filePath": review.file_path, "original_view": left.id(), "proposed_view": right.id()},
        )

    @threads.on_main
    def _new_view(
        self,
        window: sublime.Window,
        group: int,
        name: str,
        text: str,
        syntax: sublime.Syntax | None,
        review: Review,
        side: str,
    ) -> sublime.View:
        view = window.new_file()
        window.set_view_index(view, group, window.num_views_in_group(group))
        view.set_scratch(True)
        view.set_name(name)
        if syntax is not None:
            view.assign_syntax(syntax)
        # Saving a kept proposal with Save As writes the file's own style.
        view.set_line_endings("windows" if review.disk.line_ending == "\r\n" else "unix")
        settings = view.settings()
        settings.set(DIFF_VIEW, True)
        settings.set(REVIEW_ID, review.id)
        settings.set(SIDE, side)
        self._fills[view.id()] = text
        try:
            view.run_command(FILL_COMMAND)
        finally:
            self._fills.pop(view.id(), None)
        view.clear_undo_stack()  # undo must not empty the proposal
        return view

    @staticmethod
    @threads.on_main
    def _show_first_change(left: sublime.View, right: sublime.View, original: str, proposed: str) -> None:
        point = first_change(original, proposed)
        right.sel().clear()
        right.sel().add(sublime.Region(point))
        right.show(point)
        left.show(left.text_point(proposed.count("\n", 0, point), 0))

    # --- decisions --------------------------------------------------------

    @threads.on_main
    def accept(self, item: OpenReview, disk_checked: bool = False) -> None:
        review = item.review
        text = view_text(item.proposed)
        refusal = review.refusal(text)
        if refusal is not None:
            if refusal not in item.notes:
                item.notes.append(refusal)
                self._render(item)
            item.window.status_message(f"Qwen Code: {refusal}")
            return
        if not (disk_checked or self._orphan_check(item) or item.warned_of_disk_change):
            changed = changed_by_stamp(review.file_path, review.disk)
            if changed is None:  # only its time moved: its text is compared off the main thread
                read_off_main(review.file_path, lambda now: self._accept_after_read(item, now))
                return
            if changed:
                self._warn_disk_changed(item)
                return
        if not self._orphan_check(item):
            if not self.registry.accept(review, text):  # closeDiff took it meanwhile (answered off the main thread)
                self.dismiss(review.id, CLOSED_NOTE, "closed")
                return
            item.window.status_message(f"Qwen Code: accepted the change to {item.name}")
            self._close(item, "accepted")
            return
        # Nobody is waiting for this answer: write nothing, keep the text to copy.
        self.registry.abandon(review)
        self._close(
            item,
            "orphaned",
            keep=(
                f"The Qwen Code session that proposed this change to {item.name} has ended, so accepting did "
                "nothing: the file was not changed. The proposed text stays here for you to copy."
            ),
        )

    @threads.on_main
    def _accept_after_read(self, item: OpenReview, now: DiskFile | UnreadableFile) -> None:
        if self._by_id.get(item.review.id) is not item:
            return  # decided meanwhile
        before = item.review.disk
        if isinstance(now, Exception) or (now.exists, now.text) != (before.exists, before.text):
            self._warn_disk_changed(item)
        else:
            self.accept(item, disk_checked=True)

    @threads.on_main
    def _warn_disk_changed(self, item: OpenReview) -> None:
        item.warned_of_disk_change = True
        item.notes.append(disk_changed_warning(item.name))
        self._render(item)
        item.window.status_message(f"Qwen Code: {item.name} changed on disk since this was proposed; not accepted")

    @threads.on_main
    def reject(self, review: Review, *, later: bool = False, keep: str | None = None) -> None:
        self.registry.reject(review)
        item = self._by_id.get(review.id)
        if item is not None:
            item.window.status_message(f"Qwen Code: rejected the change to {item.name}")
            self._close(item, "rejected", keep, later=later)

    @threads.on_main
    def view_closed(self, view_id: int) -> None:
        """A view closed: if it was a tab of a review, that rejects it."""
        for window_id, focused in list(self._focused.items()):
            if focused.id() == view_id:
                del self._focused[window_id]
        item = self._by_view.get(view_id)
        if item is None:
            return
        keep = None
        if view_id == item.original.id() and item.review.edited(item.proposal_text()):
            keep = ORIGINAL_CLOSED_NOTE  # the user's edits in the proposal are not thrown away
        # Sublime may be closing the other tab itself (a whole window): close it afterwards.
        self.reject(item.review, later=True, keep=keep)

    def proposal_text(self, review: Review) -> str:
        """The proposal's current text, the user's edits included (any thread)."""
        item = self._by_id.get(review.id)
        return item.proposal_text() if item is not None else review.proposed

    # --- owners that went away --------------------------------------------

    def check_orphans(self) -> None:
        for item in list(self._by_id.values()):
            if not item.orphaned and self._orphan_check(item):
                self._render(item)

    def _orphan_check(self, item: OpenReview) -> bool:
        item.orphaned = item.orphaned or not item.review.owner.alive
        return item.orphaned

    # --- closing ----------------------------------------------------------

    def dismiss(self, review_id: int, reason: str, outcome: str) -> None:
        """Close a review decided elsewhere; edits the user made stay reachable."""
        item = self._by_id.get(review_id)
        if item is not None:
            self._close(item, outcome, keep=reason if item.review.edited(item.proposal_text()) else None)

    def _close(self, item: OpenReview, outcome: str, keep: str | None = None, *, later: bool = False) -> None:
        """Close both tabs, or all but the proposal when `keep` says why it stays.

        `outcome` (accepted, rejected, closed, replaced, orphaned) goes to the observers.
        """
        self._tell("diff_closed", {"filePath": item.review.file_path, "outcome": outcome})
        self._by_id.pop(item.review.id, None)
        self._by_view.pop(item.original.id(), None)
        self._by_view.pop(item.proposed.id(), None)

        def close() -> None:
            terminal = self._terminal_with_focus(item.window)
            if item.original.is_valid():
                item.original.close()
            if keep is not None:
                self._leave_open(item, keep)
            elif item.proposed.is_valid():
                item.proposed.close()
            if not any(other.window.id() == item.window.id() for other in self._by_id.values()):
                self._layouts.restore(item.window)
            if terminal is not None and terminal.is_valid():
                item.window.focus_view(terminal)  # the user answered in the terminal: they type on there
            if len(item.review.proposed) >= LARGE_TEXT:
                # Once the CLI's answer is out, the texts are garbage: give their pages back.
                sublime.set_timeout_async(release_freed_memory, RELEASE_DELAY_MS)

        if later:
            sublime.set_timeout(close)
        else:
            close()

    def _leave_open(self, item: OpenReview, reason: str) -> None:
        view = item.proposed
        settings = view.settings()
        for key in (DIFF_VIEW, REVIEW_ID, SIDE):
            settings.erase(key)
        view.set_name(f"{item.name} (not applied)")
        view.erase_regions(BANNER_KEY)
        add_note(view, reason)
        item.window.status_message(f"Qwen Code: {reason}")

    # --- drawing ----------------------------------------------------------

    def _render(self, item: OpenReview) -> None:
        if item.proposed.settings().get(REVIEW_ID) != item.review.id:
            return  # a newer load of the package took the tab over (see adopt_stale)
        review = item.review

        def on_navigate(href: str) -> None:
            current = self._by_id.get(review.id)
            if current is None:
                return
            if href == "accept":
                self.accept(current)
            elif href == "reject":
                self.reject(current.review)

        show_review_banner(item.proposed, item.name, item.notes, item.orphaned, on_navigate)

    # --- package reloads --------------------------------------------------

    def adopt_stale(self, views: list[sublime.View]) -> None:
        """Review tabs left by an earlier load of the package have nobody behind them."""
        for view in views:
            settings = view.settings()
            if not settings.get(DIFF_VIEW) or self.for_view(view) is not None:
                continue
            side = settings.get(SIDE)
            for key in (DIFF_VIEW, REVIEW_ID, SIDE):
                settings.erase(key)
            view.erase_regions(BANNER_KEY)  # its links lead to the unloaded code
            if side == "original":
                view.close()
            else:
                view.set_name(f"{view.name()} (not applied)")
                add_note(view, RELOADED_NOTE)


reviews = DiffReviews()

