"""Editor context for the CLIs: what the user looks at in a window reaches that
window's sessions as `ide/contextUpdate` (spec section 4).

Event handlers run on Sublime's main thread and only note which window
changed; after a quiet debounce, the worker thread reads the window, updates
its `core.context.WindowFiles` and publishes the payload. Identical payloads
are dropped by `Companion.publish_context`.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import sublime
import sublime_plugin

from ...core import threads
from ...core.context_rules import ContextOptions, debounce_ms, selection_read_end
from ..reviews.marks import DIFF_VIEW
from ..settings import userprefs
from .companions import companions

if TYPE_CHECKING:
    from ...core.companion.companion import Companion
    from ...core.companion.ide_context import ActiveDetails, ViewInfo, WindowFiles

log = logging.getLogger(__name__)

# Views that show no file of the user's, whatever their file_name says: the
# package's own diff views and Terminus terminals.
HIDDEN_VIEW_SETTINGS = (DIFF_VIEW, "terminus_view")


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class _Pending:
    """What happened in one window since its last refresh."""

    structure: bool = False  # views opened, closed, saved, moved or focused
    focus: list[tuple[int, int]] = field(default_factory=list)  # (view id, unix ms), in order


class ContextTracker:
    def __init__(self) -> None:
        # Held briefly by the event handlers: never around an API call.
        self._lock = threading.Lock()
        self._delay_ms: int | None = None  # None until a server runs: nothing to send before
        self._pending: dict[int, _Pending] = {}
        self._armed = False
        self._last_event = 0.0
        self._view_windows: dict[int, int] = {}  # every tracked view -> its window
        self._active_views: dict[int, int] = {}  # each window's active view -> window
        # One refresh at a time (worker thread); the handlers never wait on it.
        self._build_lock = threading.Lock()
        self._models: dict[int, WindowFiles] = {}

    # --- events: record and arm, nothing more --------------------------------

    @threads.on_main
    def changed(self, window_id: int, *, structure: bool = False, focused_view: int | None = None) -> None:
        with self._lock:
            if self._delay_ms is None:
                return  # each server reads its window when it starts
            pending = self._pending.setdefault(window_id, _Pending())
            pending.structure |= structure
            if focused_view is not None:
                pending.focus.append((focused_view, now_ms()))
            self._last_event = time.monotonic()
            if self._armed:
                return
            self._armed = True
            delay = self._delay_ms
        sublime.set_timeout_async(self._fire, delay)

    @threads.on_main
    def selection_moved(self, view_id: int) -> None:
        """Only the active view's caret is sent; other views' moves cost a lookup."""
        with self._lock:
            window_id = self._active_views.get(view_id)
        if window_id is not None:
            self.changed(window_id)

    @threads.on_main
    def view_gone(self, view_id: int) -> None:
        """Closed or moved away: its window is no longer known from the view."""
        with self._lock:
            window_id = self._view_windows.get(view_id)
        if window_id is not None:
            self.changed(window_id, structure=True)

    @threads.on_main
    def window_closing(self, window_id: int) -> None:
        with self._lock:
            self._pending.pop(window_id, None)
        # The model goes on the worker thread: a refresh may be holding it.
        sublime.set_timeout_async(lambda: self._forget(window_id))

    @threads.runs_on(threads.WORKER, threads.OURS)  # as `_refresh`, which calls it for a window closed meanwhile
    def _forget(self, window_id: int) -> None:
        with self._build_lock:
            self._models.pop(window_id, None)
            self._index(window_id, frozenset(), None)

    # --- settings -------------------------------------------------------------

    @threads.may_block
    def companion_started(self, window: sublime.Window, companion: Companion) -> None:
        """A new server gets its window's context at once (on the thread that
        started it, where the core and its dependencies are imported)."""
        self._read_delay()
        self._refresh(window.id(), _Pending(structure=True))

    def _read_delay(self) -> None:
        delay = debounce_ms(userprefs().context_debounce_ms)
        with self._lock:
            self._delay_ms = delay

    def settings_changed(self) -> None:
        """Live settings: a new debounce applies to the next event, new privacy
        settings to every window's payload at once (nothing before a server runs)."""
        with self._lock:
            if self._delay_ms is None:
                return
        self._read_delay()
        for window_id in companions.all():
            self.changed(window_id)

    def _options(self) -> ContextOptions:
        return ContextOptions.from_settings(userprefs().context_values())

    # --- refresh --------------------------------------------------------------

    @threads.on_worker
    def _fire(self) -> None:
        with self._lock:
            remaining_ms = math.ceil((self._last_event - time.monotonic()) * 1000) + (self._delay_ms or 0)
            if remaining_ms > 0:  # events kept coming: wait for the quiet period
                pending = None
            else:
                self._armed = False
                pending, self._pending = self._pending, {}
        if pending is None:
            sublime.set_timeout_async(self._fire, remaining_ms)
            return
        for window_id, changes in pending.items():
            try:
                self._refresh(window_id, changes)
            except Exception:
                log.exception("could not update the editor context of window %d", window_id)

    @threads.runs_on(threads.WORKER, threads.OURS)
    def _refresh(self, window_id: int, changes: _Pending) -> None:
        window = sublime.Window(window_id)
        if not window.is_valid():
            self._forget(window_id)
            return
        companion = companions.get(window)
        if companion is None:  # no server yet: it reads the window when it starts
            return
        from ...core.companion.ide_context import WindowFiles

        with self._build_lock:
            model = self._models.get(window_id)
            if model is None:
                model = self._models[window_id] = WindowFiles()
                changes.structure = True
            now = now_ms()
            if changes.structure:
                model.sync([_view_info(view) for view in window.views(include_transient=True)], now)
            for view_id, at in changes.focus:
                model.focus(view_id, at)
            if changes.structure or changes.focus:
                sheet = window.active_sheet()  # not active_view(): that may be a panel
                view = sheet.view() if sheet is not None else None
                model.activate(view.id() if view is not None else None, now)
                self._index(window_id, model.view_ids, model.active_view)  # a caret move changes neither
            companion.publish_context(
                model.context(self._options(), exists=os.path.isfile, read_active=_read_active)
            )

    def _index(self, window_id: int, view_ids: frozenset[int], active_view: int | None) -> None:
        """Let the event handlers find a window from a view without an API call."""
        with self._lock:
            self._view_windows = {v: w for v, w in self._view_windows.items() if w != window_id}
            self._view_windows.update(dict.fromkeys(view_ids, window_id))
            self._active_views = {v: w for v, w in self._active_views.items() if w != window_id}
            if active_view is not None:
                self._active_views[active_view] = window_id


def _view_info(view: sublime.View) -> ViewInfo:
    from ...core.companion.ide_context import ViewInfo

    path = view.file_name()
    if path is not None and view.is_scratch():
        path = None
    if path is not None:
        settings = view.settings()
        if any(settings.get(key) for key in HIDDEN_VIEW_SETTINGS):
            path = None
    return ViewInfo(view.id(), path)


def _read_active(view_id: int, with_text: bool) -> ActiveDetails | None:
    """The primary caret (the first region of `sel()`) and its selected text;
    other regions of a multiple selection are not sent."""
    from ...core.companion.ide_context import ActiveDetails

    view = sublime.View(view_id)
    if not view.is_valid():
        return None
    selection = view.sel()
    if len(selection) == 0:
        return None
    region = selection[0]
    # UTF-16 units, as a JavaScript string (and VS Code's Position) counts them.
    row, column = view.rowcol_utf16(region.b)
    text = None
    if with_text and not region.empty():
        begin = region.begin()
        text = view.substr(sublime.Region(begin, selection_read_end(begin, region.end())))
    return ActiveDetails(line=row + 1, character=column + 1, selected_text=text)


tracker = ContextTracker()


class ContextListener(sublime_plugin.EventListener):
    def on_activated(self, view: sublime.View) -> None:
        window = view.window()
        if window is not None:
            tracker.changed(window.id(), structure=True, focused_view=view.id())

    def on_load(self, view: sublime.View) -> None:
        window = view.window()
        if window is not None:
            tracker.changed(window.id(), structure=True)

    def on_post_save(self, view: sublime.View) -> None:
        # A save may give the view a new name or create the file on disk.
        window = view.window()
        if window is not None:
            tracker.changed(window.id(), structure=True)

    def on_post_move(self, view: sublime.View) -> None:
        tracker.view_gone(view.id())
        window = view.window()
        if window is not None:
            tracker.changed(window.id(), structure=True)

    def on_close(self, view: sublime.View) -> None:
        tracker.view_gone(view.id())

    def on_selection_modified(self, view: sublime.View) -> None:
        tracker.selection_moved(view.id())

    def on_pre_close_window(self, window: sublime.Window) -> None:
        tracker.window_closing(window.id())
