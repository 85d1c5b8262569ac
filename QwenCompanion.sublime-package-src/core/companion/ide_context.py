"""What the user is looking at in one editor window, as `ide/contextUpdate`
payloads (spec section 4).

The editor layer describes the window's views and focus changes, this
module keeps the ordered list of open files and builds the `IdeContext`
(what may be sent at all: `core.context_rules`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..context_rules import ContextOptions, cut_selected_text
from .ide_messages import MAX_OPEN_FILES, Cursor, IdeContext, OpenFile, WorkspaceState


@dataclass(frozen=True)
class ViewInfo:
    """One tab of the window. `path` is None for views that are not files on
    disk the CLI may see (untitled, scratch, terminals, the package's diffs)."""

    view_id: int
    path: str | None


@dataclass(frozen=True)
class ActiveDetails:
    """The focused view's primary caret (1-based) and selected text."""

    line: int
    character: int
    selected_text: str | None = None


ReadActive = Callable[[int, bool], ActiveDetails | None]
"""(view id, whether to read the selected text) -> details, None if the view is gone."""


@dataclass
class _File:
    path: str
    timestamp_ms: int  # last focus, or when first seen for a file never focused
    focus_order: int = 0  # higher is more recent; 0 means never focused here


class WindowFiles:
    """The open files of one window, most recently focused first."""

    def __init__(self) -> None:
        self._views: dict[int, str | None] = {}  # view id -> path, in tab order
        self._files: dict[str, _File] = {}
        self._active_view: int | None = None
        self._counter = itertools.count(1)
        # ordered(), kept until a file or a focus changes: sorting a thousand
        # tabs again on every caret move would delay each context update.
        self._order: list[str] | None = None

    # --- what the window holds ---------------------------------------------

    def sync(self, views: Sequence[ViewInfo], now_ms: int) -> None:
        """Reconcile with the window's current tabs: opened, closed and renamed files."""
        self._order = None
        previous, self._views = self._views, {v.view_id: v.path for v in views}
        for view_id, old_path in previous.items():
            new_path = self._views.get(view_id)
            if old_path is not None and new_path is not None and new_path != old_path:
                self._renamed(old_path, new_path)
        shown = {p for p in self._views.values() if p is not None}
        for gone in [p for p in self._files if p not in shown]:
            del self._files[gone]
        for path in shown - self._files.keys():
            self._files[path] = _File(path, now_ms)
        if self._active_view not in self._views:
            self._active_view = None

    def _renamed(self, old_path: str, new_path: str) -> None:
        """Saved under a new name, or renamed on disk: the focus history moves along."""
        old = self._files.get(old_path)
        existing = self._files.get(new_path)
        if old is not None and (existing is None or existing.focus_order < old.focus_order):
            self._files[new_path] = _File(new_path, old.timestamp_ms, old.focus_order)

    def focus(self, view_id: int, at_ms: int) -> None:
        """The view got the focus at `at_ms` (apply in the order they happened)."""
        path = self._views.get(view_id)
        if path is not None and path in self._files:
            self._files[path] = _File(path, at_ms, next(self._counter))
            self._order = None

    def activate(self, view_id: int | None, now_ms: int) -> None:
        """The window's focused tab is `view_id` (None: no tab, or not a text view).

        A file that is active but was not seen getting the focus (start-up, a
        missed event) counts as focused now, so it always comes first."""
        self._active_view = view_id if view_id in self._views else None
        path = self.active_path
        if path is None:
            return
        order = self._files[path].focus_order
        if order == 0 or order != max(f.focus_order for f in self._files.values()):
            self._files[path] = _File(path, now_ms, next(self._counter))
            self._order = None

    @property
    def active_view(self) -> int | None:
        return self._active_view

    @property
    def active_path(self) -> str | None:
        return None if self._active_view is None else self._views[self._active_view]

    @property
    def view_ids(self) -> frozenset[int]:
        return frozenset(self._views)

    def ordered(self) -> list[str]:
        """Paths of focused files by recency, then of files never focused in tab order."""
        if self._order is None:
            tab_order = {path: i for i, path in enumerate(dict.fromkeys(self._views.values()))}
            files = sorted(self._files.values(), key=lambda f: (-f.focus_order, tab_order.get(f.path, 0)))
            self._order = [f.path for f in files]
        return list(self._order)

    # --- the payload ---------------------------------------------------------

    def context(self, options: ContextOptions, *, exists: Callable[[str], bool], read_active: ReadActive) -> IdeContext:
        """The `IdeContext` for the CLI: at most MAX_OPEN_FILES existing, not
        excluded files, timestamps never increasing down the list (the CLI
        re-sorts by timestamp and trusts only the first file's `isActive`)."""
        files: list[OpenFile] = []
        previous: int | None = None
        for path in self.ordered():
            if len(files) == MAX_OPEN_FILES:
                break
            if options.excludes(path) or not exists(path):
                continue
            own = self._files[path].timestamp_ms
            previous = max(0, own if previous is None else min(own, previous))
            files.append(self._entry(path, previous, options, read_active))
        return IdeContext(workspaceState=WorkspaceState(openFiles=files, isTrusted=options.trusted))

    def _entry(self, path: str, timestamp: int, options: ContextOptions, read_active: ReadActive) -> OpenFile:
        if path != self.active_path or self._active_view is None:
            return OpenFile(path=path, timestamp=timestamp)
        details = read_active(self._active_view, options.send_selected_text)
        if details is None:
            return OpenFile(path=path, timestamp=timestamp, isActive=True)
        text = details.selected_text if options.send_selected_text else None
        return OpenFile(
            path=path,
            timestamp=timestamp,
            isActive=True,
            cursor=Cursor(line=details.line, character=details.character),
            selectedText=cut_selected_text(text) if text else None,
        )

