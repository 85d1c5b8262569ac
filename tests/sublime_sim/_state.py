"""Plain records of the editor's state (the part Sublime keeps in C++).

The public ``sublime`` classes are thin id wrappers over these, so
``sublime.View(view_id)`` built by a plugin behaves like the real one.
Tests may read these records through ``SimulatedHost.view_state`` and
friends; they should not write them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ._minihtml import Rendered, render
from ._region import Span
from ._rope import EMPTY, Rope
from ._syntax import PLAIN_TEXT, SyntaxInfo


@dataclass
class RegionsRecord:
    """One ``add_regions`` key: kept so tests can read and "click" it."""

    key: str
    regions: list[Span]
    scope: str = ""
    icon: str = ""
    flags: int = 0
    annotations: list[str] = field(default_factory=list)
    annotation_color: str = ""
    on_navigate: Callable[[str], None] | None = None
    on_close: Callable[[], None] | None = None


@dataclass
class PhantomRecord:
    id: int
    key: str
    region: Span
    content: str
    layout: int
    on_navigate: Callable[[str], None] | None = None


@dataclass
class PopupRecord:
    content: str
    flags: int
    location: int
    max_width: float
    max_height: float
    on_navigate: Callable[[str], None] | None
    on_hide: Callable[[], None] | None


@dataclass
class BufferState:
    id: int
    rope: Rope = EMPTY  # the text: an edit shares what it does not touch (see _rope)
    file_name: str | None = None
    name: str = ""
    encoding: str = "UTF-8"
    line_endings: str = "Unix"
    read_only: bool = False
    scratch: bool = False
    change_count: int = 0
    saved_change_count: int = 0
    saved_rope: Rope | None = None  # the text when last loaded or saved (None: never): what on-save trimming compares with
    loading: bool = False
    syntax: SyntaxInfo = PLAIN_TEXT
    reference_document: str | None = None
    # (change_count after, pos, removed, inserted): replayed by transform_region_from
    change_log: list[tuple[int, int, int, int]] = field(default_factory=list)
    view_ids: list[int] = field(default_factory=list)
    text_listeners: list[Any] = field(default_factory=list)
    # Texts before each outermost text command that changed the buffer, newest
    # last: Sublime undoes one such command (one undo group) at a time.
    undo_texts: list[Rope] = field(default_factory=list)

    @property
    def text(self) -> str:
        return str(self.rope)

    @text.setter
    def text(self, value: str) -> None:
        self.rope = Rope.of(value)


@dataclass
class ViewState:
    id: int
    buffer: BufferState
    settings_id: int
    window_id: int = 0
    sheet_id: int = 0
    element: str | None = None
    panel_name: str | None = None
    sel: list[Span] = field(default_factory=lambda: [(0, 0)])
    regions: dict[str, RegionsRecord] = field(default_factory=dict)
    phantoms: dict[int, PhantomRecord] = field(default_factory=dict)
    status: dict[str, str] = field(default_factory=dict)
    popup: PopupRecord | None = None
    auto_complete: list[Any] | None = None  # the auto-complete popup's items while shown
    popup_menu: tuple[list[str], Callable[[int], None]] | None = None
    folded: list[Span] = field(default_factory=list)
    shown: list[tuple[str, Span]] = field(default_factory=list)
    viewport: tuple[float, float] = (0.0, 0.0)
    overwrite: bool = False
    valid: bool = True
    edit_tokens: set[int] = field(default_factory=set)
    command_depth: int = 0
    pending_position: tuple[int, int] | None = None
    pending_changes: list[Any] = field(default_factory=list)
    inline_diffs: list[Span] = field(default_factory=list)  # the hunks whose original text is shown inline


@dataclass
class SheetState:
    id: int
    kind: str  # "text", "html" or "image"
    window_id: int
    view_id: int = 0
    name: str = ""
    contents: str = ""
    file_name: str | None = None
    transient: bool = False
    semi_transient: bool = False
    valid: bool = True


@dataclass
class QuickPanelRecord:
    """A quick panel shown by a plugin, answered by the test."""

    window_id: int
    items: list[Any]
    on_select: Callable[..., None]
    flags: int
    selected_index: int
    on_highlight: Callable[[int], None] | None
    placeholder: str | None
    done: bool = False
    chosen: int | None = None
    view_id: int = 0  # its input: the widget that holds the keys while it is open
    has_keys: bool = False  # the keys are in it (a view clicked meanwhile took them from a panel kept open)

    def details_shown(self, index: int) -> Rendered:
        """What the panel shows of row `index`'s details: Sublime renders them as minihtml."""
        details = getattr(self.items[index], "details", "")
        return render("<br>".join(details) if isinstance(details, (list, tuple)) else str(details or ""))


@dataclass
class InputPanelRecord:
    window_id: int
    view_id: int
    caption: str
    initial_text: str
    on_done: Callable[[str], None] | None
    on_change: Callable[[str], None] | None
    on_cancel: Callable[[], None] | None
    done: bool = False


@dataclass
class CommandInputRecord:
    """The command palette asking a command's input handler for an argument."""

    window_id: int
    command: str
    args: dict[str, Any]
    handler: Any
    done: bool = False


@dataclass
class WindowState:
    id: int
    settings_id: int
    template_settings_id: int
    groups: list[list[int]] = field(default_factory=lambda: [[]])  # sheet ids per group
    selected: list[int] = field(default_factory=lambda: [0])  # active sheet id per group (0: none)
    active_group: int = 0
    layout: dict[str, Any] = field(default_factory=lambda: {"cols": [0.0, 1.0], "rows": [0.0, 1.0], "cells": [[0, 0, 1, 1]]})
    panels: dict[str, int] = field(default_factory=dict)  # name -> view id
    unlisted_panels: set[str] = field(default_factory=set)
    active_panel: str | None = None
    focused_panel: str | None = None  # the shown panel ("output.x") that has input focus
    project_file: str | None = None
    project_data: dict[str, Any] | None = None
    sidebar_visible: bool = True
    minimap_visible: bool = True
    status_bar_visible: bool = True
    tabs_visible: bool = True
    menu_visible: bool = True
    mru: list[int] = field(default_factory=list)  # sheet ids, most recent last
    valid: bool = True
