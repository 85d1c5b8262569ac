"""``sublime.Window``: a handle on a window id."""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from typing import Any, TypeVar

from . import _runtime
from ._api_objects import Sheet, SymbolLocation, make_sheet
from ._api_view import View
from ._constants import KindId, NewFileFlags, QuickPanelFlags, SymbolSource, SymbolType
from ._settings import Settings
from ._state import WindowState

T = TypeVar("T")


class Window:
    def __init__(self, id: int) -> None:
        self.window_id = id
        self.settings_object: Settings | None = None
        self.template_settings_object: Settings | None = None

    def __hash__(self) -> int:
        return self.window_id

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Window) and other.window_id == self.window_id

    def __bool__(self) -> bool:
        return self.window_id != 0

    def __repr__(self) -> str:
        return f"Window({self.window_id!r})"

    def _read(self, fn: Callable[[WindowState], T], default: Any = None) -> T:
        app = _runtime.app()
        with app.lock:
            win = app.window(self.window_id)
            return fn(win) if win is not None else default

    def id(self) -> int:
        return self.window_id

    def is_valid(self) -> bool:
        return self._read(lambda w: True, False)

    def hwnd(self) -> int:
        return 0

    # ----------------------------------------------------------------- sheets
    def active_sheet(self) -> Sheet | None:
        sid = _runtime.app().active_sheet_id(self.window_id)
        return make_sheet(sid) if sid else None

    def active_view(self) -> View | None:
        vid = _runtime.app().active_view_id(self.window_id)
        return View(vid) if vid else None

    def new_html_sheet(self, name: str, contents: str, flags: NewFileFlags = NewFileFlags.NONE, group: int = -1) -> Sheet:
        sid = _runtime.app().new_html_sheet(self.window_id, name, contents, int(flags), group)
        return make_sheet(sid) or Sheet(0)

    def run_command(self, cmd: str, args: Any = None) -> None:
        _runtime.app().run_window_command(self.window_id, cmd, args)

    def new_file(self, flags: NewFileFlags = NewFileFlags.NONE, syntax: str = "") -> View:
        return View(_runtime.app().new_file(self.window_id, int(flags), syntax))

    def open_file(self, fname: str, flags: NewFileFlags = NewFileFlags.NONE, group: int = -1) -> View:
        return View(_runtime.app().open_file(self.window_id, fname, int(flags), group))

    def find_open_file(self, fname: str, group: int = -1) -> View | None:
        vid = _runtime.app().find_open_view(self.window_id, fname, group)
        return View(vid) if vid else None

    def file_history(self) -> list[str]:
        app = _runtime.app()
        with app.lock:
            return list(reversed(app.file_history))

    def num_groups(self) -> int:
        return self._read(lambda w: len(w.groups), 0)

    def active_group(self) -> int:
        return self._read(lambda w: w.active_group, 0)

    def focus_group(self, idx: int) -> None:
        _runtime.app().focus_group(self.window_id, idx)

    def focus_sheet(self, sheet: Sheet) -> None:
        if sheet is not None and self._owns(sheet.sheet_id):
            _runtime.app().focus_sheet(sheet.sheet_id)

    def focus_view(self, view: View) -> None:
        if view is None:
            return
        if view.sheet_id():
            self.focus_sheet(Sheet(view.sheet_id()))
        else:  # an output panel's view
            _runtime.app().focus_panel_view(self.window_id, view.id())

    def select_sheets(self, sheets: list[Sheet]) -> None:
        if sheets:
            self.focus_sheet(sheets[-1])  # multi-selection is not modelled

    def bring_to_front(self) -> None:
        _runtime.app().focus_window(self.window_id)

    def _owns(self, sid: int) -> bool:
        return self._read(lambda w: any(sid in g for g in w.groups), False)

    def get_sheet_index(self, sheet: Sheet) -> tuple[int, int]:
        if sheet is None or not self._owns(sheet.sheet_id):
            return (-1, -1)
        return _runtime.app().sheet_location(sheet.sheet_id)

    def get_view_index(self, view: View) -> tuple[int, int]:
        return self.get_sheet_index(Sheet(view.sheet_id()))

    def set_sheet_index(self, sheet: Sheet, group: int, index: int) -> None:
        if sheet is not None and self._owns(sheet.sheet_id):
            _runtime.app().move_sheet(sheet.sheet_id, group, index)

    def set_view_index(self, view: View, group: int, index: int) -> None:
        if view is not None:
            self.set_sheet_index(Sheet(view.sheet_id()), group, index)

    def move_sheets_to_group(self, sheets: list[Sheet], group: int, insertion_idx: int = -1, select: bool = True) -> None:
        for offset, sheet in enumerate(sheets):
            self.set_sheet_index(sheet, group, -1 if insertion_idx < 0 else insertion_idx + offset)

    def _sheet_ids(self, group: int | None = None) -> list[int]:
        def go(w: WindowState) -> list[int]:
            groups = w.groups if group is None else ([w.groups[group]] if 0 <= group < len(w.groups) else [])
            return [s for g in groups for s in g]

        return self._read(go, [])

    def sheets(self) -> list[Sheet]:
        return [s for s in map(make_sheet, self._sheet_ids()) if s is not None]

    def views(self, *, include_transient: bool = False) -> list[View]:
        return [View(v) for v in _runtime.app().window_view_ids(self.window_id, include_transient)]

    def selected_sheets(self) -> list[Sheet]:
        return self.selected_sheets_in_group(self.active_group())

    def selected_sheets_in_group(self, group: int) -> list[Sheet]:
        sheet = self.active_sheet_in_group(group)
        return [sheet] if sheet else []

    def active_sheet_in_group(self, group: int) -> Sheet | None:
        sid = _runtime.app().active_sheet_id(self.window_id, group)
        return make_sheet(sid) if sid else None

    def active_view_in_group(self, group: int) -> View | None:
        vid = _runtime.app().active_view_id(self.window_id, group)
        return View(vid) if vid else None

    def sheets_in_group(self, group: int) -> list[Sheet]:
        return [s for s in map(make_sheet, self._sheet_ids(group)) if s is not None]

    def views_in_group(self, group: int) -> list[View]:
        return [v for v in (s.view() for s in self.sheets_in_group(group)) if v is not None]

    def num_sheets_in_group(self, group: int) -> int:
        return len(self._sheet_ids(group))

    def num_views_in_group(self, group: int) -> int:
        app = _runtime.app()
        with app.lock:  # counted without making an API object per tab
            return sum(1 for sid in self._sheet_ids(group) if (sheet := app.sheet(sid)) is not None and sheet.view_id)

    def transient_sheet_in_group(self, group: int) -> Sheet | None:
        return next((s for s in self.sheets_in_group(group) if s.is_transient()), None)

    def transient_view_in_group(self, group: int) -> View | None:
        sheet = self.transient_sheet_in_group(group)
        return sheet.view() if sheet else None

    def promote_sheet(self, sheet: Sheet) -> None:
        app = _runtime.app()
        with app.lock:
            sh = app.sheet(sheet.sheet_id)
            if sh is not None:
                sh.transient = sh.semi_transient = False

    def layout(self) -> dict[str, Any]:
        return self._read(lambda w: copy.deepcopy(w.layout), {"cols": [0.0, 1.0], "rows": [0.0, 1.0], "cells": [[0, 0, 1, 1]]})

    def get_layout(self) -> dict[str, Any]:
        return self.layout()

    def set_layout(self, layout: dict[str, Any]) -> None:
        _runtime.app().set_layout(self.window_id, dict(layout))

    # ----------------------------------------------------------------- panels
    def create_output_panel(self, name: str, unlisted: bool = False) -> View:
        return View(_runtime.app().create_output_panel(self.window_id, name, unlisted))

    def find_output_panel(self, name: str) -> View | None:
        app = _runtime.app()
        with app.lock:
            win = app.window(self.window_id)
            vid = win.panels.get(name, 0) if win else 0
            return View(vid) if vid and app.view(vid) else None

    def destroy_output_panel(self, name: str) -> None:
        _runtime.app().destroy_output_panel(self.window_id, name)

    def create_io_panel(self, name: str, on_input: Callable[[str], None], unlisted: bool = False) -> tuple[View, View]:
        out = self.create_output_panel(name, unlisted)
        return out, View(0)  # the input box is not modelled

    def find_io_panel(self, name: str) -> tuple[View | None, View | None]:
        return self.find_output_panel(name), None

    def active_panel(self) -> str | None:
        return self._read(lambda w: w.active_panel)

    def panels(self) -> list[str]:
        return self._read(lambda w: ["console"] + [f"output.{n}" for n in w.panels if n not in w.unlisted_panels], [])

    def get_output_panel(self, name: str) -> View:
        return self.create_output_panel(name)

    def show_input_panel(
        self,
        caption: str,
        initial_text: str,
        on_done: Callable[[str], None] | None,
        on_change: Callable[[str], None] | None,
        on_cancel: Callable[[], None] | None,
    ) -> View:
        return View(_runtime.app().show_input_panel(self.window_id, caption, initial_text, on_done, on_change, on_cancel))

    def show_quick_panel(
        self,
        items: list[Any],
        on_select: Callable[..., None],
        flags: QuickPanelFlags = QuickPanelFlags.NONE,
        selected_index: int = -1,
        on_highlight: Callable[[int], None] | None = None,
        placeholder: str | None = None,
    ) -> None:
        _runtime.app().show_quick_panel(self.window_id, list(items), on_select, int(flags), selected_index, on_highlight, placeholder)

    # ------------------------------------------------------------ chrome bits
    def _set(self, attr: str, value: bool) -> None:
        app = _runtime.app()
        with app.lock:
            win = app.window(self.window_id)
            if win is not None:
                setattr(win, attr, bool(value))

    def is_sidebar_visible(self) -> bool:
        return self._read(lambda w: w.sidebar_visible, False)

    def set_sidebar_visible(self, flag: bool, animate: bool = False) -> None:
        self._set("sidebar_visible", flag)

    def is_minimap_visible(self) -> bool:
        return self._read(lambda w: w.minimap_visible, False)

    def set_minimap_visible(self, flag: bool) -> None:
        self._set("minimap_visible", flag)

    def is_status_bar_visible(self) -> bool:
        return self._read(lambda w: w.status_bar_visible, False)

    def set_status_bar_visible(self, flag: bool) -> None:
        self._set("status_bar_visible", flag)

    def get_tabs_visible(self) -> bool:
        return self._read(lambda w: w.tabs_visible, False)

    def set_tabs_visible(self, flag: bool) -> None:
        self._set("tabs_visible", flag)

    def is_menu_visible(self) -> bool:
        return self._read(lambda w: w.menu_visible, False)

    def set_menu_visible(self, flag: bool) -> None:
        self._set("menu_visible", flag)

    # ---------------------------------------------------------------- project
    def folders(self) -> list[str]:
        return _runtime.app().folders(self.window_id)

    def project_file_name(self) -> str | None:
        return self._read(lambda w: w.project_file)

    def workspace_file_name(self) -> str | None:
        return self._read(lambda w: os.path.splitext(w.project_file)[0] + ".sublime-workspace" if w.project_file else None)

    def project_data(self) -> Any:
        return self._read(lambda w: copy.deepcopy(w.project_data))

    def set_project_data(self, data: Any) -> None:
        _runtime.app().set_project_data(self.window_id, data)

    def settings(self) -> Settings:
        if self.settings_object is None:
            self.settings_object = Settings(self._read(lambda w: w.settings_id, 0))
        return self.settings_object

    def template_settings(self) -> Settings:
        if self.template_settings_object is None:
            self.template_settings_object = Settings(self._read(lambda w: w.template_settings_id, 0))
        return self.template_settings_object

    def symbol_locations(
        self,
        sym: str,
        source: SymbolSource = SymbolSource.ANY,
        type: SymbolType = SymbolType.ANY,
        kind_id: KindId = KindId.AMBIGUOUS,
        kind_letter: str = "",
    ) -> list[Any]:
        """Where `sym` is defined or referenced: open files from their buffers
        (unsaved text), the index from the files under the window's folders,
        both from the app's symbol index (`_symbol_index`), which parses only
        what changed since a text was last indexed."""
        from . import _symbols
        from ._syntax import for_path

        app = _runtime.app()
        index = app.symbol_index
        texts: dict[str, Any] = {}  # path -> its IndexedText
        if source != SymbolSource.INDEX:  # open files answer from their buffers
            for view in self.views():
                path = view.file_name()
                if path is not None:
                    rope, syntax = view._read(lambda st: (st.buffer.rope, st.buffer.syntax.name), (None, ""))
                    if rope is not None:  # not closed meanwhile
                        texts[path] = index.of_view(view.view_id, rope, syntax)
            with app.lock:
                open_ids = set(app.views)
            index.forget_views_but(open_ids)
        folders = self.folders()
        if source != SymbolSource.OPEN_FILES:
            for path in _symbols.project_files(folders):
                if path not in texts and (indexed := index.of_file(path, for_path(path).name)) is not None:
                    texts[path] = indexed
        locations = []
        for path, indexed in texts.items():
            shown = _display_name(path, folders)
            for found in indexed.named(sym, type):
                kind = found.symbol.kind
                if (kind_id != KindId.AMBIGUOUS and kind[0] != kind_id) or (kind_letter and kind[1] != kind_letter):
                    continue
                locations.append(SymbolLocation(path, shown, found.row, found.col, indexed.syntax,
                                                found.symbol.type, kind))
        return locations

    def lookup_symbol_in_index(self, symbol: str) -> list[Any]:
        return self.symbol_locations(symbol, SymbolSource.INDEX, SymbolType.DEFINITION)

    def lookup_symbol_in_open_files(self, symbol: str) -> list[Any]:
        return self.symbol_locations(symbol, SymbolSource.OPEN_FILES, SymbolType.DEFINITION)

    def lookup_references_in_index(self, symbol: str) -> list[Any]:
        return self.symbol_locations(symbol, SymbolSource.INDEX, SymbolType.REFERENCE)

    def lookup_references_in_open_files(self, symbol: str) -> list[Any]:
        return self.symbol_locations(symbol, SymbolSource.OPEN_FILES, SymbolType.REFERENCE)

    def extract_variables(self) -> dict[str, str]:
        app = _runtime.app()
        out: dict[str, str] = {"packages": str(app.packages_dir), "platform": app.platform_label()}
        view = self.active_view()
        fname = view.file_name() if view else None
        if fname:
            base = os.path.basename(fname)
            stem, ext = os.path.splitext(base)
            out.update(file=fname, file_path=os.path.dirname(fname), file_name=base, file_base_name=stem, file_extension=ext.lstrip("."))
        folders = self.folders()
        if folders:
            out["folder"] = folders[0]
        project = self.project_file_name()
        if project:
            base = os.path.basename(project)
            stem, ext = os.path.splitext(base)
            out.update(project=project, project_path=os.path.dirname(project), project_name=base, project_base_name=stem, project_extension=ext.lstrip("."))
        return out

    def status_message(self, msg: str) -> None:
        app = _runtime.app()
        with app.lock:
            app.status_messages.append((self.window_id, msg))


def _display_name(path: str, folders: list[str]) -> str:
    for folder in folders:
        if path.startswith(folder.rstrip(os.sep) + os.sep):
            return os.path.join(os.path.basename(folder.rstrip(os.sep)), os.path.relpath(path, folder))
    return path
