"""``host.user``: what a person at the keyboard does, with the events Sublime fires.

Every action runs on the simulated main thread and returns once its
blocking events ran; ``*_async`` events may still be queued (use
``host.wait_idle()``). API calls, unlike these actions, do not fire
``on_selection_modified`` (Sublime fires it only for user and command
changes).
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from . import _auto_complete, _jsonc, _keymap, _viewport
from ._api_view import View
from ._api_window import Window
from ._constants import HoverZone, NewFileFlags
from ._region import Region, span_of

if TYPE_CHECKING:
    from .host import SimulatedHost

RegionLike = Region | int | tuple[int, int]


def _span(r: RegionLike) -> tuple[int, int]:
    return (int(r[0]), int(r[1])) if isinstance(r, tuple) else span_of(r)


class User:
    def __init__(self, host: SimulatedHost) -> None:
        self._host = host
        self._app = host.app

    def _window(self, window: Window | None) -> int:
        return window.window_id if window is not None else self._app.active_window_id

    # ------------------------------------------------------------- files
    def open_file(self, path: str | os.PathLike[str], *, window: Window | None = None, group: int = -1, transient: bool = False, wait: bool = True) -> View:
        """Open a file (File > Open). With ``wait`` it returns once loaded and idle."""
        flags = NewFileFlags.TRANSIENT if transient else NewFileFlags.NONE
        vid = self._host.run_on_main(lambda: self._app.open_file(self._window(window), os.fspath(path), int(flags), group))
        view = View(vid)
        if wait:
            self._host.wait_for(lambda: not view.is_loading())
            self._host.wait_idle()
        return view

    def new_file(self, *, window: Window | None = None, syntax: str = "") -> View:
        return View(self._host.run_on_main(lambda: self._app.new_file(self._window(window), 0, syntax)))

    def save(self, view: View, path: str | os.PathLike[str] | None = None) -> None:
        """Save (ctrl+s); ``path`` answers the save dialog of an unnamed view."""
        if path is not None:
            self._app.answers.push("save", os.fspath(path))
        self.focus(view)
        self._host.run_on_main(lambda: self._app.run_text_command(view.view_id, "save", by_user=True))

    def close(self, view: View) -> bool:
        """Close the tab; a dirty view asks the configured yes/no/cancel answer."""
        return bool(self._host.run_on_main(lambda: self._app.close_view(view.view_id)))

    # ------------------------------------------------------------- focus
    def leave_app(self) -> None:
        """Switch to another application (Sublime keeps its windows as they are)."""
        self._host.run_on_main(lambda: self._app.set_app_focus(False))

    def return_to_app(self) -> None:
        """Switch back to Sublime: the view that had the keys has them again."""
        self._host.run_on_main(lambda: self._app.set_app_focus(True))

    def focus(self, view: View) -> None:
        """Click the view's tab (back in Sublime first, if another application had the keys)."""

        def go() -> None:
            st = self._app.view(view.view_id)
            if st is None:
                return
            self._app.set_app_focus(True)
            if self._app.active_window_id != st.window_id:
                self._app.focus_window(st.window_id)
            if st.sheet_id:
                self._app.focus_sheet(st.sheet_id)

        self._host.run_on_main(go)

    def scroll_wheel(self, view: View, rows: int) -> None:
        """Turn the mouse wheel over `view`: `rows` down (up if negative). Only the
        viewport moves: no caret, no selection event, as in Sublime."""

        def go() -> None:
            with self._app.lock:
                st = self._app.view(view.view_id)
                if st is not None:
                    st.viewport = (st.viewport[0], _viewport.scrolled_y(st.buffer.rope, st.viewport[1], rows))

        self._host.run_on_main(go)

    def focus_group(self, group: int, *, window: Window | None = None) -> None:
        self._host.run_on_main(lambda: self._app.focus_group(self._window(window), group))

    def focus_window(self, window: Window) -> None:
        self._host.run_on_main(lambda: self._app.focus_window(window.window_id))

    def new_window(self) -> Window:
        return Window(self._host.run_on_main(self._app.new_window))

    def close_window(self, window: Window | None = None) -> bool:
        return bool(self._host.run_on_main(lambda: self._app.close_window(self._window(window))))

    # ------------------------------------------------------- text editing
    def set_selection(self, view: View, regions: Iterable[RegionLike]) -> None:
        """Click/drag (with ctrl for several regions): fires on_selection_modified."""
        spans = [_span(r) for r in regions]
        self.focus(view)

        def go() -> None:
            _auto_complete.hide(self._app, view.view_id)  # a click closes the completion list
            before = self._app.snapshot(view.view_id)
            self._app.sel_set(view.view_id, spans)
            self._app.flush_modifications(view.view_id, before)

        self._host.run_on_main(go)

    def click(self, view: View, point: int) -> None:
        self.set_selection(view, [point])

    def type(self, view: View, text: str) -> None:
        """Type ``text`` at every caret (replacing selected text) via the ``insert`` command."""
        self.focus(view)
        self._host.run_on_main(lambda: self._app.run_text_command(view.view_id, "insert", {"characters": text}, by_user=True))

    def replace(self, view: View, region: RegionLike, text: str) -> None:
        self.set_selection(view, [region])
        self.type(view, text)

    def backspace(self, view: View) -> None:
        self.focus(view)
        self._host.run_on_main(lambda: self._app.run_text_command(view.view_id, "left_delete", by_user=True))

    def run_command(self, name: str, args: dict[str, Any] | None = None, *, via: str = "palette") -> None:
        """Run a command from the command palette or (`via="menu"`) a menu, dispatched by input focus."""
        if via not in ("palette", "menu"):
            raise ValueError(f"via must be 'palette' or 'menu', not {via!r}")
        self._host.run_on_main(lambda: self._app.run_focused_command(name, args, by_user=via == "menu"))

    def press_key(self, keys: str | list[str]) -> _keymap.Binding | None:
        """Press a key (``"ctrl+alt+q"``, ``"ctrl+k, ctrl+b"``): run the matching binding.

        Without a binding, Sublime's own handling: a single printable character
        is typed, Enter types a newline, Esc closes a popup. Returns the binding
        that ran, if any.
        """

        def go() -> _keymap.Binding | None:
            chords = _keymap.normalize_keys(keys, self._app.platform)
            vid = self._app.focused_view_id()
            binding = _keymap.find_binding(self._app, vid, chords)
            typed = {"enter": "\n"}.get(chords[0], chords[0]) if len(chords) == 1 else ""
            if binding is not None:
                self._app.run_focused_command(binding.command, binding.args, by_user=True)
            elif vid and len(typed) == 1:
                self._app.run_text_command(vid, "insert", {"characters": typed}, by_user=True)
            elif vid and chords == ["escape"]:
                View(vid).hide_popup()
            return binding

        return self._host.run_on_main(go)

    def hover(self, view: View, point: int, zone: HoverZone = HoverZone.TEXT) -> None:
        self._host.run_on_main(lambda: self._app.emit("view", "on_hover", view.view_id, point, zone))

    def query_completions(self, view: View, prefix: str = "", locations: list[int] | None = None) -> list[Any]:
        from . import sublime_plugin as sp

        points = locations if locations is not None else [r[1] for r in self._app.sel_get(view.view_id)]
        pending: list[Any] = []
        shown = self._host.run_on_main(lambda: sp.query_completions(view.view_id, prefix, points, pending)[0])
        return [*shown, *sp.until_set(pending)]

    # ------------------------------------------------------------ panels
    def _pending_quick_panel(self, window: Window | None) -> Any:
        wid = self._window(window)
        pending = [q for q in self._app.quick_panels if q.window_id == wid and not q.done]
        if not pending:
            raise LookupError("no quick panel is open")
        return pending[-1]

    def choose_quick_panel(self, index: int | str, *, window: Window | None = None, modifiers: tuple[str, ...] = ()) -> None:
        """Pick an item (by index or by its trigger text); -1 cancels.
        `modifiers` are held with Enter (e.g. ("primary",): Ctrl/Cmd+Enter)."""
        rec = self._pending_quick_panel(window)
        if isinstance(index, str):
            triggers = [it if isinstance(it, str) else it[0] if isinstance(it, list) else getattr(it, "trigger", "") for it in rec.items]
            index = triggers.index(index)
        self._host.run_on_main(lambda: self._app.answer_quick_panel(rec, index, modifiers))

    def cancel_quick_panel(self, *, window: Window | None = None) -> None:
        self.choose_quick_panel(-1, window=window)

    def highlight_quick_panel(self, index: int, *, window: Window | None = None) -> None:
        rec = self._pending_quick_panel(window)
        self._host.run_on_main(lambda: self._app.call_plugin("quick panel on_highlight", rec.on_highlight, index))

    def _pending_input(self, window: Window | None) -> Any:
        wid = self._window(window)
        pending = [r for r in self._app.input_panels if r.window_id == wid and not r.done]
        if not pending:
            raise LookupError("no input panel is open")
        return pending[-1]

    def change_input_panel(self, text: str, *, window: Window | None = None) -> None:
        rec = self._pending_input(window)

        def go() -> None:
            with self._app.lock:
                st = self._app.view(rec.view_id)
                if st is not None:
                    st.buffer.text = text
                    st.sel = [(len(text), len(text))]
            self._app.call_plugin("input panel on_change", rec.on_change, text)

        self._host.run_on_main(go)

    def submit_input_panel(self, text: str | None = None, *, window: Window | None = None) -> None:
        """Press enter in the input panel (after typing ``text`` if given)."""
        rec = self._pending_input(window)
        if text is not None:
            self.change_input_panel(text, window=window)
        self._host.run_on_main(lambda: self._app.finish_input_panel(rec, self._app.buffer_text(rec.view_id)))

    def cancel_input_panel(self, *, window: Window | None = None) -> None:
        rec = self._pending_input(window)
        self._host.run_on_main(lambda: self._app.finish_input_panel(rec, None))

    def _pending_command_input(self, window: Window | None) -> Any:
        wid = self._window(window)
        pending = [c for c in self._app.command_inputs if c.window_id == wid and not c.done]
        if not pending:
            raise LookupError("no command input is open in the command palette")
        return pending[-1]

    def submit_command_input(self, text: str, *, window: Window | None = None) -> bool:
        """Type ``text`` into the palette's input for a command and press Enter:
        refused (still open, False) unless its handler validates it; else the
        command runs with the value as the handler's argument."""
        rec = self._pending_command_input(window)

        def go() -> bool:
            if not self._app.call_plugin("input handler validate", rec.handler.validate, text):
                return False
            rec.done = True
            self._app.call_plugin("input handler confirm", rec.handler.confirm, text)
            self._app.run_focused_command(rec.command, {**rec.args, rec.handler.name(): text}, by_user=False)
            return True

        return bool(self._host.run_on_main(go))

    def open_command_palette(self, *, window: Window | None = None) -> None:
        """Ctrl+Shift+P: the palette's input takes the keys (nothing chosen yet)."""
        self._host.run_on_main(lambda: self._app.run_window_command(self._window(window), "show_overlay",
                                                                    {"overlay": "command_palette"}))

    def close_command_palette(self, *, window: Window | None = None) -> None:
        """Esc in the palette: the keys go back to the view that had them."""
        self._host.run_on_main(lambda: self._app.run_window_command(self._window(window), "hide_overlay"))

    def cancel_command_input(self, *, window: Window | None = None) -> None:
        self._pending_command_input(window)
        self._host.run_on_main(lambda: self._app.run_window_command(self._window(window), "hide_overlay"))

    # ------------------------------------------------------------ clicks
    def click_phantom(self, view: View, href: str, key: str | None = None) -> None:
        """Click the link ``href`` in a phantom of ``view`` (optionally of ``key``)."""
        with self._app.lock:
            st = self._app.view(view.view_id)
            phantoms = list(st.phantoms.values()) if st else []
        target = next((p for p in phantoms if (key is None or p.key == key) and _has_link(p.content, href)), None)
        if target is None:
            raise LookupError(f"no phantom link {href!r} in {view!r}")
        self._host.run_on_main(lambda: self._app.call_plugin("phantom on_navigate", target.on_navigate, href))

    def click_annotation(self, view: View, href: str, key: str | None = None) -> None:
        with self._app.lock:
            st = self._app.view(view.view_id)
            records = list(st.regions.values()) if st else []
        target = next((r for r in records if (key is None or r.key == key) and any(_has_link(a, href) for a in r.annotations)), None)
        if target is None:
            raise LookupError(f"no annotation link {href!r} in {view!r}")
        self._host.run_on_main(lambda: self._app.call_plugin("annotation on_navigate", target.on_navigate, href))

    def click_popup(self, view: View, href: str) -> None:
        with self._app.lock:
            st = self._app.view(view.view_id)
            popup = st.popup if st else None
        if popup is None or not _has_link(popup.content, href):
            raise LookupError(f"no popup link {href!r} in {view!r}")
        self._host.run_on_main(lambda: self._app.call_plugin("popup on_navigate", popup.on_navigate, href))

    def choose_popup_menu(self, view: View, index: int) -> None:
        with self._app.lock:
            st = self._app.view(view.view_id)
            menu = st.popup_menu if st else None
            if st is not None:
                st.popup_menu = None
        if menu is None:
            raise LookupError("no popup menu is open")
        self._host.run_on_main(lambda: self._app.call_plugin("popup menu on_done", menu[1], index))

    # ----------------------------------------------------------- project
    def _set_folders(self, wid: int, folders: list[str]) -> None:
        with self._app.lock:
            win = self._app.window(wid)
            data = dict(win.project_data or {}) if win else {}
        data["folders"] = [{"path": os.path.abspath(f)} for f in folders]
        self._app.set_project_data(wid, data)

    def add_folder(self, path: str | os.PathLike[str], *, window: Window | None = None) -> None:
        """Project > Add Folder to Project."""
        wid = self._window(window)
        path = os.path.abspath(os.fspath(path))
        self._host.run_on_main(lambda: self._set_folders(wid, [f for f in self._app.folders(wid) if f != path] + [path]))

    def remove_folder(self, path: str | os.PathLike[str], *, window: Window | None = None) -> None:
        wid = self._window(window)
        path = os.path.abspath(os.fspath(path))
        self._host.run_on_main(lambda: self._set_folders(wid, [f for f in self._app.folders(wid) if f != path]))

    def set_folders(self, paths: Iterable[str | os.PathLike[str]], *, window: Window | None = None) -> None:
        wid = self._window(window)
        folders = [os.fspath(p) for p in paths]
        self._host.run_on_main(lambda: self._set_folders(wid, folders))

    def open_project(self, path: str | os.PathLike[str], *, window: Window | None = None) -> None:
        wid = self._window(window)
        self._host.run_on_main(lambda: self._app.open_project(wid, os.fspath(path)))

    def close_project(self, *, window: Window | None = None) -> None:
        wid = self._window(window)
        self._host.run_on_main(lambda: self._app.close_project(wid))

    def edit_settings_file(self, base_name: str, data: dict[str, Any] | str) -> None:
        """Edit ``Packages/User/<base_name>`` on disk; loaded settings reload and notify."""
        text = data if isinstance(data, str) else _jsonc.encode_value(data, pretty=True)
        path = self._app.packages_dir / "User" / base_name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        self._host.run_on_main(lambda: self._app.reload_settings(base_name))

    def quit(self) -> None:
        self._host.quit()


def _has_link(html_text: str, href: str) -> bool:
    return any(html.unescape(m) == href for m in re.findall(r"""href\s*=\s*["']([^"']*)["']""", html_text))
