"""Windows: groups and sheets, focus, open/new/close, panels, projects."""

from __future__ import annotations

import copy
import functools
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import _jsonc, _syntax
from ._constants import DialogResult, NewFileFlags, QuickPanelFlags
from ._paths import open_file_key
from ._settings import to_value
from ._state import InputPanelRecord, QuickPanelRecord, SheetState, WindowState

# The keys an event's "modifier_keys" may hold (the API reference's `Event`).
QUICK_PANEL_MODIFIERS = ("primary", "ctrl", "alt", "altgr", "shift", "super")

if TYPE_CHECKING:
    from ._app import App


def check_layout(layout: dict[str, Any]) -> None:
    """Refuse a layout Sublime cannot draw. Its cells `[x1, y1, x2, y2]` index
    the `cols` and `rows` separators (the API reference's `Window.layout()`
    form); a cell past the separators, an empty cell or two cells over the
    same place give no sensible window in Sublime, so the simulator fails the
    call instead of guessing what it would show."""
    cols, rows, cells = layout.get("cols"), layout.get("rows"), layout.get("cells")
    if not (isinstance(cols, list) and isinstance(rows, list) and isinstance(cells, list) and cells):
        raise ValueError(f"set_layout needs cols, rows and cells: {layout!r}")
    for cell in cells:
        x1, y1, x2, y2 = cell
        if not (0 <= x1 < x2 < len(cols) and 0 <= y1 < y2 < len(rows)):
            raise ValueError(f"set_layout: cell {cell} is empty or past the separators {cols} / {rows}")
    for i, a in enumerate(cells):
        for b in cells[i + 1 :]:
            if a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]:
                raise ValueError(f"set_layout: cells {a} and {b} overlap")


class WindowOps:
    # --------------------------------------------------------------- windows
    def create_window(self: App) -> int:
        with self.lock:
            wid = self.new_id("window")
            win = WindowState(wid, self.new_settings(), self.new_settings())
            self.windows[wid] = win
            self.window_order.append(wid)
            self.active_window_id = wid
            return wid

    def new_window(self: App) -> int:
        old = self.focused_view_id()
        wid = self.create_window()
        self.emit("window", "on_new_window", wid)
        self.emit_focus_change(old)
        return wid

    def close_window(self: App, wid: int) -> bool:
        if self.window(wid) is None:
            return False
        self.emit("window", "on_pre_close_window", wid)
        for vid in self.window_view_ids(wid, include_transient=True):
            if not self.close_view(vid):
                return False
        old = self.focused_view_id()
        with self.lock:
            win = self.window(wid)
            if win is None:
                return True
            panel_views = list(win.panels.values())
            for sid in [s for g in win.groups for s in g]:
                self.sheets[sid].valid = False
            win.valid = False
            self.window_order.remove(wid)
            if self.active_window_id == wid:
                self.active_window_id = self.window_order[-1] if self.window_order else 0
        for vid in panel_views:
            self.discard_view(vid)
        from . import sublime_plugin as sp

        sp.drop_window(wid)
        self.emit_focus_change(old)
        return True

    def focus_window(self: App, wid: int) -> None:
        old, before = self.focused_view_id(), self.keys()
        with self.lock:
            if self.window(wid) is None:
                return
            self.active_window_id = wid
            self.window_order.remove(wid)
            self.window_order.append(wid)
        self.emit_focus_change(old, f"focus_window({wid})", before)

    # --------------------------------------------------------- groups/sheets
    def place_sheet(self: App, wid: int, sid: int, group: int = -1, index: int | None = None) -> None:
        win = self.windows[wid]
        g = group if 0 <= group < len(win.groups) else win.active_group
        sheets = win.groups[g]
        sheets.insert(len(sheets) if index is None else max(0, min(index, len(sheets))), sid)
        self.sheets[sid].window_id = wid

    def sheet_location(self: App, sid: int) -> tuple[int, int]:
        with self.lock:
            sh = self.sheet(sid)
            win = self.window(sh.window_id) if sh else None
            if win is None:
                return (-1, -1)
            for g, sheets in enumerate(win.groups):
                if sid in sheets:
                    return (g, sheets.index(sid))
            return (-1, -1)

    def select_sheet(self: App, sid: int, *, focus: bool = True) -> None:
        """Make a sheet its group's selected one; with `focus`, input focus leaves any panel for it."""
        with self.lock:
            g, _ = self.sheet_location(sid)
            sh = self.sheet(sid)
            if sh is None or g < 0:
                return
            win = self.windows[sh.window_id]
            if focus:
                win.focused_panel = None
            win.selected[g] = sid
            win.active_group = g
            if sid in win.mru:
                win.mru.remove(sid)
            win.mru.append(sid)

    def remove_sheet(self: App, sid: int) -> None:
        """Take a sheet out of its group, selecting the group's most recent other sheet."""
        g, i = self.sheet_location(sid)
        sh = self.sheets[sid]
        if g < 0:
            return
        win = self.windows[sh.window_id]
        win.groups[g].remove(sid)
        if sid in win.mru:
            win.mru.remove(sid)
        if win.selected[g] == sid:
            in_group = set(win.groups[g])  # a set: mru and group each hold every tab
            recent = next((s for s in reversed(win.mru) if s in in_group), 0)
            if recent:
                win.selected[g] = recent
            elif win.groups[g]:
                win.selected[g] = win.groups[g][max(i - 1, 0)]
            else:
                win.selected[g] = 0

    def active_sheet_id(self: App, wid: int, group: int | None = None) -> int:
        with self.lock:
            win = self.window(wid)
            if win is None:
                return 0
            g = win.active_group if group is None else group
            return win.selected[g] if 0 <= g < len(win.selected) else 0

    def active_view_id(self: App, wid: int, group: int | None = None) -> int:
        with self.lock:
            sh = self.sheet(self.active_sheet_id(wid, group))
            return sh.view_id if sh else 0

    def focused_view_id(self: App) -> int:
        """The view with input focus: the active window's focused panel, else its active sheet's view."""
        with self.lock:
            win = self.window(self.active_window_id)
            panel = win.focused_panel if win is not None else None
            if win is not None and panel is not None and panel == win.active_panel:
                if panel == "input":  # the input panel's widget
                    vid = next((r.view_id for r in self.input_panels if r.window_id == win.id and not r.done), 0)
                else:
                    vid = win.panels.get(panel[len("output.") :], 0) if panel.startswith("output.") else 0
                if vid and self.view(vid) is not None:
                    return vid
        return self.active_view_id(self.active_window_id)

    def focus_panel_view(self: App, wid: int, vid: int) -> None:
        """`Window.focus_view` of an output panel's view: the panel takes input focus if shown."""
        old, before = self.focused_view_id(), self.keys()
        with self.lock:
            win = self.window(wid)
            st = self.view(vid)
            if win is None or st is None or st.panel_name is None or st.window_id != wid:
                return
            name = f"output.{st.panel_name}"
            if win.active_panel != name:
                return  # a hidden panel cannot take focus
            win.focused_panel = name
        self.emit_focus_change(old, f"focus_view(panel {name})", before)

    def window_view_ids(self: App, wid: int, include_transient: bool = True) -> list[int]:
        with self.lock:
            win = self.window(wid)
            if win is None:
                return []
            out = []
            for sheets in win.groups:
                for sid in sheets:
                    sh = self.sheets[sid]
                    if sh.view_id and (include_transient or not sh.transient):
                        out.append(sh.view_id)
            return out

    def set_app_focus(self: App, focused: bool) -> None:
        """Another application takes the keys (False) or gives them back (True):
        the view with input focus (an open quick panel's input, if it has
        them) gets on_deactivated / on_activated, the windows, their active
        views and active_window() stay as they were. Losing them closes the
        active window's quick panel unless shown KEEP_OPEN_ON_FOCUS_LOST."""
        if focused == self.app_focused:
            return
        self.app_focused = focused
        vid = self.overlay_input(self.active_window_id) or self.focused_view_id()
        if vid:
            self.emit("view", "on_activated" if focused else "on_deactivated", vid)
        if not focused:
            self.close_quick_panels_on_focus_lost(self.active_window_id)
            self.main.post(functools.partial(self.close_palette, self.active_window_id), 0, label="palette lost focus")

    def quick_panel_with_keys(self: App, wid: int) -> QuickPanelRecord | None:
        with self.lock:
            return next((q for q in self.quick_panels if q.window_id == wid and not q.done and q.has_keys), None)

    def overlay_input(self: App, wid: int) -> int:
        """The input of the window's open command palette or quick panel holding the keys, else 0."""
        panel = self.quick_panel_with_keys(wid)
        return panel.view_id if panel is not None else self.palettes.get(wid, 0)

    def open_palette(self: App, wid: int) -> None:
        """The command palette opens: its input takes the keys (the view loses
        them first, then the input gets them, as GitSavvy's focus listener
        relies on). An open quick panel closes."""
        if self.window(wid) is None or wid in self.palettes:
            return
        for rec in [q for q in self.quick_panels if q.window_id == wid and not q.done]:
            self.answer_quick_panel(rec, -1)
        old = self.focused_view_id() if wid == self.active_window_id and self.app_focused else 0
        vid = self.make_view(wid, element="command_palette:input", sheet=False, widget=True)
        self.palettes[wid] = vid
        self.attach_listeners(vid)
        if old:
            self.emit("view", "on_deactivated", old)
            self.emit("view", "on_activated", vid)

    def close_palette(self: App, wid: int) -> None:
        vid = self.palettes.pop(wid, 0)
        if not vid:
            return
        if wid == self.active_window_id and self.app_focused:
            self.emit("view", "on_deactivated", vid)
            back = self.focused_view_id()
            if back:
                self.emit("view", "on_activated", back)
        self.discard_view(vid)

    def keys(self: App) -> tuple[int, int, int]:
        """Where the user types: the active window, its active group, the focused view."""
        with self.lock:
            win = self.window(self.active_window_id)
            return (self.active_window_id, win.active_group if win is not None else -1, self.focused_view_id())

    def keys_still_there(self: App, keys: tuple[int, int, int]) -> bool:
        """Is the view of `keys` still open (or, with no view, its window's group)?"""
        window_id, group, view_id = keys
        with self.lock:
            if view_id:
                return self.view(view_id) is not None
            win = self.window(window_id)
            return win is not None and 0 <= group < len(win.layout["cells"])

    def emit_focus_change(self: App, old_vid: int, what: str = "", before: tuple[int, int, int] | None = None) -> None:
        """Fire on_deactivated/on_activated; with `before`, tell the focus guard
        `what` moved the keys."""
        if before is not None:
            self.focus_guard.moved(what, before, self.keys())
        new_vid = self.focused_view_id()
        if new_vid == old_vid:
            return
        self.close_quick_panels_on_focus_lost(self.active_window_id)
        panel = self.quick_panel_with_keys(self.active_window_id)
        if panel is not None:  # the keys leave the quick panel's input, which had them
            panel.has_keys = False
            old_vid = panel.view_id
        if old_vid and self.view(old_vid) is not None:
            self.emit("view", "on_deactivated", old_vid)
        if new_vid:
            self.emit("view", "on_activated", new_vid)

    def focus_sheet(self: App, sid: int) -> None:
        old, before = self.focused_view_id(), self.keys()
        self.select_sheet(sid)
        self.emit_focus_change(old, f"focus_sheet({sid})", before)

    def focus_group(self: App, wid: int, group: int) -> None:
        old, before = self.focused_view_id(), self.keys()
        with self.lock:
            win = self.window(wid)
            if win is None or not 0 <= group < len(win.groups):
                return
            win.active_group = group
        self.emit_focus_change(old, f"focus_group({group})", before)

    def close_quick_panels_on_focus_lost(self: App, wid: int) -> None:
        """The keys left for a view or sheet: an open quick panel closes (its
        callback gets -1) unless shown with KEEP_OPEN_ON_FOCUS_LOST."""
        with self.lock:
            closing = [q for q in self.quick_panels
                       if q.window_id == wid and not q.done and not q.flags & QuickPanelFlags.KEEP_OPEN_ON_FOCUS_LOST]
        for rec in closing:
            self.main.post(functools.partial(self.answer_quick_panel, rec, -1), 0, label="quick panel lost focus")

    def move_sheet(self: App, sid: int, group: int, index: int) -> None:
        with self.lock:
            sh = self.sheet(sid)
            win = self.window(sh.window_id) if sh else None
            if sh is None or win is None or not 0 <= group < len(win.groups):
                return
            vid = sh.view_id
        if vid:
            self.emit("view", "on_pre_move", vid)
        old, before = self.focused_view_id(), self.keys()
        with self.lock:
            was_selected = win.selected[self.sheet_location(sid)[0]] == sid
            self.remove_sheet(sid)
            self.place_sheet(win.id, sid, group, index if index >= 0 else None)
            if was_selected or not win.selected[group]:
                self.select_sheet(sid, focus=False)  # moving a tab leaves focus where it is
        if vid:
            self.emit("view", "on_post_move", vid)
        self.emit_focus_change(old, f"set_sheet_index({sid}, {group}, {index})", before)

    def set_layout(self: App, wid: int, layout: dict[str, Any]) -> None:
        """Sublime keeps every sheet: groups past the new count fold into the last group."""
        old, before = self.focused_view_id(), self.keys()
        check_layout(layout)
        with self.lock:
            win = self.window(wid)
            cells = layout.get("cells") or [[0, 0, 1, 1]]
            if win is None:
                return
            n = len(cells)
            if n < len(win.groups):
                moved = [s for g in win.groups[n:] for s in g]
                moved_selected = [s for s in win.selected[n:] if s]
                win.groups = win.groups[:n]
                win.groups[-1].extend(moved)
                win.selected = win.selected[:n]
                if not win.selected[-1] and moved_selected:
                    win.selected[-1] = moved_selected[0]
            while len(win.groups) < n:
                win.groups.append([])
                win.selected.append(0)
            win.layout = copy.deepcopy(to_value(layout))
            win.active_group = min(win.active_group, n - 1)
        self.emit_focus_change(old, "set_layout", before)

    # ----------------------------------------------------------------- files
    def find_open_view(self: App, wid: int, path: str, group: int = -1) -> int:
        key = open_file_key(path, self.platform)
        with self.lock:
            win = self.window(wid)
            if win is None:
                return 0
            for g, sheets in enumerate(win.groups):
                if group >= 0 and g != group:
                    continue
                for sid in sheets:
                    st = self.view(self.sheets[sid].view_id)
                    if st is not None and st.buffer.file_name and open_file_key(st.buffer.file_name, self.platform) == key:
                        return st.id
            return 0

    def open_file(self: App, wid: int, fname: str, flags: int = 0, group: int = -1) -> int:
        position = None
        if flags & NewFileFlags.ENCODED_POSITION:
            m = re.match(r"^(.*?)(?::(\d+))?(?::(\d+))?$", fname)
            if m and m.group(2):
                fname = m.group(1)
                position = (int(m.group(2)) - 1, int(m.group(3) or 1) - 1)
        path = os.path.abspath(os.path.expanduser(fname))
        old, before = self.focused_view_id(), self.keys()
        with self.lock:
            win = self.window(wid)
            if win is None:
                return 0
            vid = self.find_open_view(wid, path, group if flags & NewFileFlags.FORCE_GROUP else -1)
            created = not vid
            if vid:
                st = self.views[vid]
                if not flags & NewFileFlags.TRANSIENT:
                    self.sheets[st.sheet_id].transient = False
                if position is not None:
                    if st.buffer.loading:
                        st.pending_position = position
                    else:
                        from . import _text

                        pt = _text.text_point(st.buffer.text, position[0], position[1], True)
                        st.sel = [(pt, pt)]
            else:
                g = group if 0 <= group < len(win.groups) else win.active_group
                vid = self.make_view(wid, file_name=path, group=g, transient=bool(flags & NewFileFlags.TRANSIENT), loading=True)
                self.views[vid].pending_position = position
                if path in self.file_history:
                    self.file_history.remove(path)
                self.file_history.append(path)
            self.select_sheet(self.views[vid].sheet_id)
            bid = self.views[vid].buffer.id
        if created:
            self.attach_listeners(vid)
            self.emit("buffer", "on_associate_buffer", bid)
            # Loading is asynchronous: the main thread reads the file later.
            self.main.post(lambda: self.finish_load(vid), 0, label=f"load {path}")
        self.emit_focus_change(old, f"open_file({fname})", before)
        return vid

    def new_file(self: App, wid: int, flags: int = 0, syntax: str = "") -> int:
        old, before = self.focused_view_id(), self.keys()
        info = _syntax.lookup(syntax) if syntax else None
        with self.lock:
            if self.window(wid) is None:
                return 0
            vid = self.make_view(wid, transient=bool(flags & NewFileFlags.TRANSIENT), syntax=info)
            self.select_sheet(self.views[vid].sheet_id)
        self.attach_listeners(vid)
        self.emit("view", "on_new", vid, el_only=True)
        self.emit_focus_change(old, "new_file", before)
        return vid

    def is_dirty(self: App, vid: int) -> bool:
        with self.lock:
            st = self.view(vid)
            if st is None or st.buffer.scratch:
                return False
            return st.buffer.change_count != st.buffer.saved_change_count

    def close_view(self: App, vid: int) -> bool:
        """Close as Sublime does: save prompt if dirty, on_pre_close, on_close."""
        with self.lock:
            st = self.view(vid)
            if st is None:
                return False
            label = os.path.basename(st.buffer.file_name or "") or st.buffer.name or "untitled"
            is_panel = not st.sheet_id
        if is_panel:
            return False
        if self.is_dirty(vid):
            answer = self.answers.take("yes_no_cancel", self.answers.yes_no_cancel)
            self.record_dialog("yes_no_cancel", f"Save changes to {label} before closing?", DialogResult(answer), view_id=vid, reason="close")
            if answer == DialogResult.YES:
                if not self.save_view(vid):
                    return False
            elif answer != DialogResult.NO:
                return False
        self.emit("view", "on_pre_close", vid)
        focused = self.focused_view_id() == vid
        if focused:
            self.emit("view", "on_deactivated", vid)
        with self.lock:
            st = self.view(vid)
            if st is None:
                return True
            self.remove_sheet(st.sheet_id)
            self.sheets[st.sheet_id].valid = False
            st.window_id = 0
        # on_close still sees the view (file name, settings) but no longer its window.
        self.emit("view", "on_close", vid)
        self.discard_view(vid)
        self.emit_focus_change(0 if focused else self.focused_view_id())
        return True

    def close_sheet(self: App, sid: int) -> bool:
        with self.lock:
            sh = self.sheet(sid)
            if sh is None:
                return False
            vid = sh.view_id
        if vid:
            return self.close_view(vid)
        old = self.focused_view_id()
        with self.lock:
            self.remove_sheet(sid)
            sh.valid = False
        self.emit_focus_change(old)
        return True

    def new_html_sheet(self: App, wid: int, name: str, contents: str, flags: int, group: int) -> int:
        old = self.focused_view_id()
        with self.lock:
            if self.window(wid) is None:
                return 0
            sh = SheetState(self.new_id("sheet"), "html", wid, name=name, contents=contents, transient=bool(flags & NewFileFlags.TRANSIENT))
            self.sheets[sh.id] = sh
            self.place_sheet(wid, sh.id, group)
            self.select_sheet(sh.id)
        self.emit_focus_change(old)
        return sh.id

    # ---------------------------------------------------------------- panels
    def create_output_panel(self: App, wid: int, name: str, unlisted: bool) -> int:
        with self.lock:
            win = self.window(wid)
            if win is None:
                return 0
            existing = win.panels.get(name)
            if existing and self.view(existing) is not None:
                return existing
            vid = self.make_view(wid, element="output:output", panel_name=name, sheet=False)
            win.panels[name] = vid
            if unlisted:
                win.unlisted_panels.add(name)
        self.attach_listeners(vid)
        return vid

    def destroy_output_panel(self: App, wid: int, name: str) -> None:
        old = self.focused_view_id()
        with self.lock:
            win = self.window(wid)
            vid = win.panels.pop(name, 0) if win else 0
            if win is not None and win.active_panel == f"output.{name}":
                win.active_panel = None
            if win is not None and win.focused_panel == f"output.{name}":
                win.focused_panel = None
        self.emit_focus_change(old)
        if vid:
            self.discard_view(vid)

    def show_panel(self: App, wid: int, panel: str, toggle: bool = False) -> None:
        old = self.focused_view_id()
        with self.lock:
            win = self.window(wid)
            if win is None:
                return
            if panel.startswith("output.") and panel[len("output.") :] not in win.panels:
                return
            win.active_panel = None if toggle and win.active_panel == panel else panel
        self.emit_focus_change(old)  # a focused panel that another replaced loses focus

    def hide_panel(self: App, wid: int, panel: str | None = None) -> None:
        old = self.focused_view_id()
        with self.lock:
            win = self.window(wid)
            if win is not None and (panel is None or win.active_panel == panel):
                win.active_panel = None
                win.focused_panel = None
        self.emit_focus_change(old)

    def call_plugin(self: App, where: str, fn: Callable[..., Any] | None, *args: Any) -> Any:
        if fn is None:
            return None
        try:
            return fn(*args)
        except Exception as exc:
            self.report_error(where, exc)
            return None

    def show_input_panel(
        self: App,
        wid: int,
        caption: str,
        initial_text: str,
        on_done: Callable[[str], None] | None,
        on_change: Callable[[str], None] | None,
        on_cancel: Callable[[], None] | None,
    ) -> int:
        for rec in [r for r in self.input_panels if r.window_id == wid and not r.done]:
            self.main.post(functools.partial(self.finish_input_panel, rec, None), 0, label="input panel replaced")
        old = self.focused_view_id()
        with self.lock:
            if self.window(wid) is None:
                return 0
            vid = self.make_view(wid, text=initial_text, element="input:input", sheet=False, widget=True)
            self.views[vid].sel = [(len(initial_text), len(initial_text))]
            self.input_panels.append(InputPanelRecord(wid, vid, caption, initial_text, on_done, on_change, on_cancel))
            self.windows[wid].active_panel = "input"
            self.windows[wid].focused_panel = "input"  # the widget takes the keyboard
        self.attach_listeners(vid)
        self.emit_focus_change(old)
        return vid

    def finish_input_panel(self: App, rec: InputPanelRecord, text: str | None) -> None:
        """Close an input panel: ``text`` None means the user pressed escape."""
        old = self.focused_view_id()
        with self.lock:
            if rec.done:
                return
            rec.done = True
            win = self.window(rec.window_id)
            if win is not None and win.active_panel == "input":
                win.active_panel = None
                win.focused_panel = None
        self.emit_focus_change(old)  # back to the view that had focus before
        self.discard_view(rec.view_id)
        if text is None:
            self.call_plugin("input panel on_cancel", rec.on_cancel)
        else:
            self.call_plugin("input panel on_done", rec.on_done, text)

    def show_quick_panel(
        self: App,
        wid: int,
        items: list[Any],
        on_select: Callable[..., None],
        flags: int,
        selected_index: int,
        on_highlight: Callable[[int], None] | None,
        placeholder: str | None,
    ) -> None:
        # Sublime refuses a quick panel while one (or the command palette) is
        # open in the window: "Quick Panel Unavailable" in the console, no
        # callback ever (sublime_text#6832).
        with self.lock:
            busy = any(q.window_id == wid and not q.done for q in self.quick_panels) or any(
                c.window_id == wid and not c.done for c in self.command_inputs) or wid in self.palettes
        if busy or self.window(wid) is None:
            self.log("Quick Panel Unavailable")
            return
        # Its input takes the keys: the view that had them is deactivated, then the input activated.
        old = self.focused_view_id() if wid == self.active_window_id and self.app_focused else 0
        vid = self.make_view(wid, element="goto_anything:input", sheet=False, widget=True)
        rec = QuickPanelRecord(wid, list(items), on_select, int(flags), selected_index, on_highlight, placeholder,
                               view_id=vid, has_keys=wid == self.active_window_id)
        with self.lock:
            self.quick_panels.append(rec)
        self.attach_listeners(vid)
        if old:
            self.emit("view", "on_deactivated", old)
        if rec.has_keys and self.app_focused:
            self.emit("view", "on_activated", vid)
        answer = self.answers.take("quick_panel", self.answers.quick_panel)
        if answer is not None:
            index = answer(rec.items) if callable(answer) else int(answer)
            pick = self.focus_guard.as_user(lambda: self.answer_quick_panel(rec, index))  # the user picks
            self.main.post(pick, 0, label="quick panel answer")

    def answer_quick_panel(self: App, rec: QuickPanelRecord, index: int, modifiers: tuple[str, ...] = ()) -> None:
        """The user's pick; `modifiers` held with Enter reach only a panel shown
        WANT_EVENT (its event's "modifier_keys"), the others get the index alone."""
        unknown = set(modifiers) - set(QUICK_PANEL_MODIFIERS)
        if unknown:
            raise ValueError(f"not a modifier key Sublime reports: {sorted(unknown)}")
        with self.lock:
            if rec.done:
                return
            rec.done, rec.chosen = True, index
        if rec.has_keys and self.app_focused and rec.window_id == self.active_window_id:  # the keys go back
            self.emit("view", "on_deactivated", rec.view_id)
            back = self.focused_view_id()
            if back:
                self.emit("view", "on_activated", back)
        rec.has_keys = False
        self.discard_view(rec.view_id)
        # The event comes with a pick only: Esc (and a close) calls on_select(-1) alone.
        if rec.flags & QuickPanelFlags.WANT_EVENT and index >= 0:
            self.call_plugin("quick panel on_select", rec.on_select, index, {"modifier_keys": self.modifier_keys(modifiers)})
        else:
            self.call_plugin("quick panel on_select", rec.on_select, index)

    def modifier_keys(self: App, modifiers: tuple[str, ...]) -> dict[str, bool]:
        """An event's "modifier_keys": only the keys held, each True; "primary"
        is Ctrl (Cmd, "super", on macOS) and is reported with it."""
        held = set(modifiers)
        if "primary" in held:
            held.add("super" if self.platform == "osx" else "ctrl")
        elif ("super" if self.platform == "osx" else "ctrl") in held:
            held.add("primary")
        return {key: True for key in QUICK_PANEL_MODIFIERS if key in held}

    # --------------------------------------------------------------- project
    def folders(self: App, wid: int) -> list[str]:
        with self.lock:
            win = self.window(wid)
            data = win.project_data if win else None
            base = os.path.dirname(win.project_file) if win and win.project_file else os.getcwd()
        if not isinstance(data, dict):
            return []
        out = []
        for entry in data.get("folders") or []:
            if isinstance(entry, dict) and isinstance(entry.get("path"), str):
                out.append(os.path.normpath(os.path.join(base, os.path.expanduser(entry["path"]))))
        return out

    def project_settings_of_view(self: App, vid: int) -> dict[str, Any]:
        """The "settings" of the project of the view's window: Sublime applies
        them to every view of that window (a project file is the workspace's, not the user's)."""
        st = self.views.get(vid)
        win = self.windows.get(st.window_id) if st is not None else None
        data = win.project_data if win is not None else None
        settings = data.get("settings") if isinstance(data, dict) else None
        return settings if isinstance(settings, dict) else {}

    def set_project_data(self: App, wid: int, data: Any) -> None:
        value = to_value(data)
        with self.lock:
            win = self.window(wid)
            if win is None:
                return
            win.project_data = value
            path = win.project_file
        if path:
            with open(path, "w", encoding="utf-8") as f:
                f.write(_jsonc.encode_value(value, pretty=True) + "\n")

    def open_project(self: App, wid: int, path: str) -> None:
        path = os.path.abspath(path)
        with open(path, encoding="utf-8") as f:
            data = _jsonc.decode_file_text(f.read())
        with self.lock:
            win = self.window(wid)
            if win is None:
                return
            win.project_file = path
            win.project_data = data if isinstance(data, dict) else {}
        self.emit("window", "on_load_project", wid)

    def close_project(self: App, wid: int) -> None:
        self.emit("window", "on_pre_close_project", wid)
        with self.lock:
            win = self.window(wid)
            if win is not None:
                win.project_file = None
                win.project_data = None
