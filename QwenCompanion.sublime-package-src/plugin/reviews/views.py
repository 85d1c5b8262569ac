"""Review views: the Sublime side of `openDiff` / `closeDiff` (spec section 5).

A review is a pair of scratch tabs side by side in the code's place (the
file's group split in two; other groups, the chat's column, untouched): the
file's current text on the left (read-only) and the proposal on the right (editable, with the
current text as its reference document, so Sublime's gutter and inline diff
show every change). Accept / Reject links sit in an annotation beside the first line.

The backend's coroutines run on the server thread: they update the registry
and answer at once; everything that touches views runs on the main thread.
Nothing here writes the file (the CLI does) or touches the user's own buffers.
"""

from __future__ import annotations

import html
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

import sublime

from ...core.memory import LARGE_TEXT, release_freed_memory
from ...core.paths import deepest_root, path_identity, path_style
from ..placement import code_group, open_beside
from ..settings import fallback_encoding

# The core needs pydantic, which may be missing: it is imported when a
# companion starts (worker thread), never when Sublime loads this module.
if TYPE_CHECKING:
    import asyncio

    from sublime_types import WindowLayout

    from ...core.companion.diffs import DiffRegistry, DiskFile, Notice, Review, UnreadableFile
    from ...core.companion.runtime import Companion

    DiffReview = Review[Companion]

log = logging.getLogger(__name__)

DIFF_VIEW = "qwen_companion.diff_view"
"""True on every review view: the editor context leaves these out."""
REVIEW_ID = "qwen_companion.review_id"
SIDE = "qwen_companion.diff_side"  # "original" or "proposed"
BANNER_KEY = "qwen_companion.review"
NOTE_KEY = "qwen_companion.review_note"  # on a proposal left open after its review ended
FILL_COMMAND = "qwen_review_fill"

TERMINAL_SETTING = "terminus_view"  # Terminus marks its terminal views (tabs and panels) with it
RELEASE_DELAY_MS = 200  # after a large review closes: the CLI's answer has been written by then

REPLACED_NOTE = "A newer proposal for this file replaced this one, so your edits here were not applied."
ORIGINAL_CLOSED_NOTE = "You closed the file's side of this review, which rejected it, so your edits here were not applied."
CLOSED_NOTE = "Qwen Code closed this review (it was answered in the terminal), so your edits here were not applied."
RELOADED_NOTE = "Qwen Companion was reloaded, so this review ended without an answer. Nothing was applied."

_STYLE = """
<style>
    .qwen-review { padding: 0.4rem 0.6rem; border-radius: 0.3rem; background-color: color(var(--background) blend(var(--bluish) 85%)); }
    .qwen-review .note { margin-top: 0.3rem; color: var(--yellowish); }
    .qwen-review a { font-weight: bold; text-decoration: none; }
</style>
"""


@dataclass
class OpenReview:
    """A review that has its two tabs."""

    review: DiffReview
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
        return whole_text(self.proposed)


@dataclass
class SavedLayout:
    """A window's arrangement before its first review, restored after its last."""

    layout: WindowLayout
    active_view: sublime.View | None
    active_group: int
    positions: list[tuple[sublime.View, int, int]]  # (view, group, index)
    sides: tuple[int, int]  # the groups of the reviews' original and proposal tabs


class DiffReviews:
    """Every review of every window; the view methods run on the main thread."""

    def __init__(self) -> None:
        self._registry: DiffRegistry[Companion] | None = None
        self._by_id: dict[int, OpenReview] = {}
        self._by_view: dict[int, OpenReview] = {}
        self._layouts: dict[int, SavedLayout] = {}
        self._focused: dict[int, sublime.View] = {}  # window id -> the view (tab or panel) last given focus
        # (event, details) for tools that watch reviews come and go (the headless driver).
        self.observers: list[Callable[[str, dict[str, object]], None]] = []

    def _tell(self, event: str, details: dict[str, object]) -> None:
        for observer in list(self.observers):
            observer(event, details)

    @property
    def registry(self) -> DiffRegistry[Companion]:
        if self._registry is None:
            from ...core.companion.diffs import DiffRegistry

            self._registry = DiffRegistry()
        return self._registry

    # --- queries ----------------------------------------------------------

    def for_view(self, view: sublime.View) -> OpenReview | None:
        return self._by_view.get(view.id())

    # --- focus (main thread) ----------------------------------------------

    def view_activated(self, view: sublime.View) -> None:
        window = view.window()
        if window is not None:
            self._focused[window.id()] = view

    def _terminal_with_focus(self, window: sublime.Window) -> sublime.View | None:
        """The qwen terminal (a Terminus tab or panel) the user is typing in, if any:
        the CLI asks "Apply this change?" there as the review opens, so keys typed
        in that moment must keep going to it (VS Code's `preserveFocus`)."""
        view = self._focused.get(window.id())
        if view is not None and view.is_valid() and view.settings().get(TERMINAL_SETTING):
            return view
        return None

    # --- opening (main thread) ------------------------------------------

    def propose(
        self, path: str, text: str, key: str, owner: object, disk: DiskFile | None = None
    ) -> tuple[DiffReview, DiffReview | None]:
        """Register the review of an edit the editor's own features propose (a
        chat permission, a quick action) rather than the CLI's openDiff:
        `owner` stands where a companion stands; `disk`, the file as already
        read. Then `show` it with the review it replaced. Raises `UnreadableFile`."""
        from ...core.companion.diffs import read_disk_file

        if disk is None:
            disk = read_disk_file(path, fallback_encoding())
        review, replaced, notice = self.registry.open(path, text, key, cast("Companion", owner), disk)
        if notice is not None:
            deliver(notice)
        return review, replaced

    def show(self, review: DiffReview, replaced: DiffReview | None) -> None:
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
            original = buffer.substr(sublime.Region(0, buffer.size()))
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
        own_note = getattr(review.owner, "review_note", None)  # a quick action's proposal: the tab, not the disk
        if isinstance(own_note, str):
            notes = [own_note]

        terminal = self._terminal_with_focus(window)
        left_group, right_group = self._enter_layout(window, buffer)
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
        window.focus_view(right if terminal is None else terminal)
        self._tell(
            "diff_opened",
            {"filePath": review.file_path, "original_view": left.id(), "proposed_view": right.id()},
        )

    def _new_view(
        self,
        window: sublime.Window,
        group: int,
        name: str,
        text: str,
        syntax: sublime.Syntax | None,
        review: DiffReview,
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
        view.run_command(FILL_COMMAND, {"text": text})
        view.clear_undo_stack()  # undo must not empty the proposal
        return view

    @staticmethod
    def _show_first_change(left: sublime.View, right: sublime.View, original: str, proposed: str) -> None:
        from ...core.companion.diffs import first_change

        point = first_change(original, proposed)
        right.sel().clear()
        right.sel().add(sublime.Region(point))
        right.show(point)
        left.show(left.text_point(proposed.count("\n", 0, point), 0))

    def _enter_layout(self, window: sublime.Window, buffer: sublime.View | None) -> tuple[int, int]:
        """The groups of a review's two tabs: the code's group split in two
        (the file's group when it is open in this window), saved to restore."""
        saved = self._layouts.get(window.id())
        if saved is not None:
            return saved.sides
        positions = []
        for group in range(window.num_groups()):
            for index, view in enumerate(window.views_in_group(group)):
                positions.append((view, group, index))
        code = code_group(window, buffer if buffer is not None and buffer.window() == window else None)
        sides = (code, window.num_groups())
        self._layouts[window.id()] = SavedLayout(window.layout(), window.active_view(), window.active_group(), positions, sides)
        open_beside(window, code)
        return sides

    # --- decisions (main thread) ------------------------------------------

    def accept(self, item: OpenReview, disk_checked: bool = False) -> None:
        review = item.review
        text = whole_text(item.proposed)
        refusal = review.refusal(text)
        if refusal is not None:
            if refusal not in item.notes:
                item.notes.append(refusal)
                self._render(item)
            item.window.status_message(f"Qwen Code: {refusal}")
            return
        if not (disk_checked or self._orphan_check(item) or item.warned_of_disk_change):
            from ...core.companion.diffs import changed_by_stamp

            changed = changed_by_stamp(review.file_path, review.disk)
            if changed is None:  # only its time moved: its text is compared off the main thread
                read_off_main(review.file_path, lambda now: self._accept_after_read(item, now))
                return
            if changed:
                self._warn_disk_changed(item)
                return
        if not self._orphan_check(item):
            notice = self.registry.accept(review, text)
            if notice is None:  # closeDiff took it meanwhile (answered off the main thread)
                self.dismiss(review.id, CLOSED_NOTE, "closed")
                return
            deliver(notice)
            item.window.status_message(f"Qwen Code: accepted the change to {item.name}")
            self._close(item, "accepted")
            return
        # Nobody is waiting for this answer: write nothing, keep the text to copy.
        self.registry.reject(review)
        self._close(
            item,
            "orphaned",
            keep=(
                f"The Qwen Code session that proposed this change to {item.name} has ended, so accepting did "
                "nothing: the file was not changed. The proposed text stays here for you to copy."
            ),
        )

    def _accept_after_read(self, item: OpenReview, now: DiskFile | UnreadableFile) -> None:
        if self._by_id.get(item.review.id) is not item:
            return  # decided meanwhile
        before = item.review.disk
        if isinstance(now, Exception) or (now.exists, now.text) != (before.exists, before.text):
            self._warn_disk_changed(item)
        else:
            self.accept(item, disk_checked=True)

    def _warn_disk_changed(self, item: OpenReview) -> None:
        from ...core.companion.diffs import disk_changed_warning

        item.warned_of_disk_change = True
        item.notes.append(disk_changed_warning(item.name))
        self._render(item)
        item.window.status_message(f"Qwen Code: {item.name} changed on disk since this was proposed; not accepted")

    def reject(self, review: DiffReview, *, later: bool = False, keep: str | None = None) -> None:
        notice = self.registry.reject(review)
        if notice is not None:
            deliver(notice)
        item = self._by_id.get(review.id)
        if item is not None:
            item.window.status_message(f"Qwen Code: rejected the change to {item.name}")
            self._close(item, "rejected", keep, later=later)

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

    def close_from_cli(self, review: DiffReview, suppress: bool) -> str | None:
        """closeDiff (any thread): the proposed side's current text as the CLI gets it, or None."""
        item = self._by_id.get(review.id)
        text = item.proposal_text() if item is not None else review.proposed
        was_open, notice = self.registry.close(review, suppress=suppress)
        if notice is not None:
            deliver(notice)
        return review.text_for_cli(text) if was_open else None

    # --- the CLI's sessions -----------------------------------------------

    def check_orphans(self) -> None:
        for item in list(self._by_id.values()):
            if not item.orphaned and self._orphan_check(item):
                self._render(item)

    def _orphan_check(self, item: OpenReview) -> bool:
        companion = item.review.owner
        item.orphaned = item.orphaned or not (companion.running and companion.has_session(item.review.session_id))
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
                self._restore_layout(item.window)
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

    def _restore_layout(self, window: sublime.Window) -> None:
        saved = self._layouts.pop(window.id(), None)
        if saved is None or not window.is_valid():
            return
        groups = len(saved.layout["cells"])
        target = min(saved.active_group, groups - 1)
        # Views in columns that are about to go (a kept proposal) join the group that had focus.
        for group in range(groups, window.num_groups()):
            for view in window.views_in_group(group):
                window.set_view_index(view, target, window.num_views_in_group(target))
        window.set_layout(saved.layout)
        # Only views out of place move, and where the views are is read a group
        # at a time: a call per view made closing a review in a window of a
        # thousand tabs cost the main thread a thousand API calls.
        current = view_positions(window)
        for view, group, index in saved.positions:
            where = current.get(view.id())  # None: closed or in another window
            if where is not None and where != (group, index) and group < len(saved.layout["cells"]):
                window.set_view_index(view, group, min(index, window.num_views_in_group(group)))
                current = view_positions(window)
        if saved.active_view is not None and saved.active_view.is_valid():
            window.focus_view(saved.active_view)
        else:
            window.focus_group(target)

    # --- drawing ----------------------------------------------------------

    def _render(self, item: OpenReview) -> None:
        if item.proposed.settings().get(REVIEW_ID) != item.review.id:
            return  # a newer load of the package took the tab over (see adopt_stale)
        name = html.escape(item.name)
        notes = list(item.notes)
        if item.orphaned:
            notes.insert(
                0,
                "Orphaned: the Qwen Code session that proposed this change has ended. Accepting now "
                "sends nothing and changes no file.",
            )
        body = (
            f"Qwen Code proposes this change to <b>{name}</b>. Edit it here if you like, then "
            f'<a href="accept">Accept</a> &nbsp; <a href="reject">Reject</a>'
        )
        body += "".join(f'<div class="note">{html.escape(note)}</div>' for note in notes)
        review = item.review

        def on_navigate(href: str) -> None:
            current = self._by_id.get(review.id)
            if current is None:
                return
            if href == "accept":
                self.accept(current)
            elif href == "reject":
                self.reject(current.review)

        show_banner(item.proposed, BANNER_KEY, body, on_navigate)

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


# Drawn, not part of the text: no fill, no outline, no undo step.
_BANNER_FLAGS = sublime.RegionFlags.DRAW_NO_FILL | sublime.RegionFlags.DRAW_NO_OUTLINE | sublime.RegionFlags.NO_UNDO


def show_banner(view: sublime.View, key: str, body: str, on_navigate: Callable[[str], None] | None = None) -> None:
    """The banner as an annotation beside the first line, the top of the tab.
    Sublime draws a block phantom below the line of its region, so a phantom
    at 0 would sit between the first line and the rest of the proposal."""
    content = f'<body id="qwen-review">{_STYLE}<div class="qwen-review">{body}</div></body>'
    view.add_regions(key, [sublime.Region(0, 0)], annotations=[content], flags=_BANNER_FLAGS, on_navigate=on_navigate)


def add_note(view: sublime.View, text: str) -> None:
    """A banner on a proposal left open after its review ended."""
    show_banner(view, NOTE_KEY, html.escape(text))


def view_positions(window: sublime.Window) -> dict[int, tuple[int, int]]:
    """Each view's (group, index) in `window`, read a group at a time."""
    return {
        view.id(): (group, index)
        for group in range(window.num_groups())
        for index, view in enumerate(window.views_in_group(group))
    }


def whole_text(view: sublime.View) -> str:
    return view.substr(sublime.Region(0, view.size()))


def deliver(notice: Notice[Companion]) -> None:
    notice.owner.notify(notice.method, notice.params, session_id=notice.session_id)


def window_for(path: str) -> sublime.Window:
    """The window with the deepest folder holding `path`, else the active one.
    Compared by identity: the CLI sends physical paths, Sublime keeps spellings."""
    style = path_style(sublime.platform())
    candidates = [(window, folder) for window in sublime.windows() for folder in window.folders()]
    best = deepest_root(path, [folder for _, folder in candidates], style)
    return candidates[best][0] if best is not None else sublime.active_window()


def find_open_view(path: str) -> sublime.View | None:
    """The view of `path`, however either is spelled (a symlinked folder,
    `/var` for `/private/var`, another case where the file system ignores it)."""
    for window in sublime.windows():
        view = window.find_open_file(path)
        if view is not None:
            return view
    style = path_style(sublime.platform())
    target = path_identity(path, style)
    # Resolving touches the disk: only views whose name could be the file's.
    names = {path_identity(os.path.basename(path), style, str), path_identity(os.path.basename(target), style, str)}
    for window in sublime.windows():
        for view in window.views():
            name = view.file_name()
            if name and path_identity(os.path.basename(name), style, str) in names and path_identity(name, style) == target:
                return view
    return None


def read_off_main(path: str, done: Callable[[DiskFile | UnreadableFile], None]) -> None:
    """Read `path` as a review shows it on a thread of its own (never the main
    thread nor Sublime's shared worker: a file of many MB would freeze the
    editor), then hand `done` the file or why it cannot be read, on the main thread."""
    from ...core.companion.diffs import UnreadableFile, read_disk_file

    encoding = fallback_encoding()

    def read() -> None:
        try:
            result: DiskFile | UnreadableFile = read_disk_file(path, encoding)
        except UnreadableFile as error:
            result = error
        sublime.set_timeout(lambda: done(result))

    threading.Thread(target=read, name="QwenCompanion file read", daemon=True).start()


reviews = DiffReviews()


def install_backend(window: sublime.Window, companion: Companion) -> None:
    from .backend import SublimeDiffBackend

    companion.diff_backend = SublimeDiffBackend(companion)


def check_orphans_soon(window_id: int, connected: int) -> None:
    """A session that ends (expired, deleted, server stopped) may orphan a review."""
    sublime.set_timeout(reviews.check_orphans)
