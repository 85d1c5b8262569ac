"""Command dispatch: text, window and application commands, as Sublime routes them.

* A text command: a plugin ``TextCommand`` or a built-in runs with a fresh
  edit token; when the outermost command ends, ``on_modified`` /
  ``on_selection_modified`` fire if the buffer/selection changed. Only a
  command the user gave by a key or a menu (``by_user``) passes through
  ``on_text_command`` (which may rewrite it) and ``on_post_text_command``, as
  in Sublime: the command palette and ``view.run_command`` bypass both.
* ``window.run_command``: a window command (``on_window_command`` rewrite,
  ``on_post_window_command``); otherwise a text command of the window's active
  view, otherwise an application command — "dispatching via input focus".
* Unknown names are silent no-ops, recorded with ``handled=False``.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from . import _auto_complete, _builtin_commands as builtins, _viewport
from ._rope import changed

if TYPE_CHECKING:
    from ._app import App

Args = dict[str, Any] | None


def _copy_args(args: Any) -> Args:
    return copy.deepcopy(dict(args)) if args else None


class CommandOps:
    def run_text_command(self: App, vid: int, name: str, args: Any = None, *, by_user: bool = False) -> None:
        from . import sublime_plugin as sp

        if self.view(vid) is None:
            return
        args = _copy_args(args)
        if by_user:
            res = self.on_main(lambda: sp.on_text_command(vid, name, args))
            if res and res[0]:
                name, args = res[0], _copy_args(res[1])
        cmd = sp.find_command("text", vid, name)
        builtin = builtins.TEXT.get(name) if cmd is None else None
        if cmd is None and builtin is None:
            self.record_command("text", vid, name, args, False, "")
            return
        if cmd is not None and not sp.command_enabled(cmd, args):
            self.record_command("text", vid, name, args, False, "disabled")
            return
        self.record_command("text", vid, name, args, True, "plugin" if cmd else "builtin")
        before = self.snapshot(vid)
        with self.lock:
            st = self.views[vid]
            st.command_depth += 1
            text_before = st.buffer.rope if st.command_depth == 1 else None
        token = self.new_id("edit")
        try:
            if cmd is not None:
                sp.run_command_object(cmd, token, args)
            else:
                self.begin_edit(vid, token)
                try:
                    builtin(self, vid, token, args or {})  # type: ignore[misc]
                except Exception as exc:
                    self.report_error(f"built-in text command {name!r}", exc)
                finally:
                    self.end_edit(vid, token)
        finally:
            with self.lock:
                st.command_depth -= 1
                outermost = st.command_depth == 0
        if outermost:
            with self.lock:
                if name != "undo" and text_before is not None and changed(text_before, st.buffer.rope):
                    st.buffer.undo_texts.append(text_before)  # one command, one undo step
            self.flush_modifications(vid, before)
        if by_user and name == "insert":
            _auto_complete.on_typed(self, vid, str((args or {}).get("characters", "")))
        if by_user:
            # After a command the user ran, Sublime scrolls the first caret into view.
            carets = self.sel_get(vid)
            if carets:
                self.show_point(vid, carets[0][1])
            self.emit("view", "on_post_text_command", vid, name, args)

    def show_point(self: App, vid: int, point: int) -> None:
        """Scroll `point` into view (``show``), the selection untouched."""
        with self.lock:
            st = self.view(vid)
            if st is not None:
                st.shown.append(("show", (point, point)))
                st.viewport = (st.viewport[0], _viewport.y_to_show(st.buffer.rope, st.viewport[1], point, point))

    def has_text_command(self: App, vid: int, name: str) -> bool:
        from . import sublime_plugin as sp

        return name in builtins.TEXT or sp.find_command("text", vid, name) is not None

    def run_window_command(
        self: App, wid: int, name: str, args: Any = None, rewrite: bool = True, *, by_user: bool = False
    ) -> None:
        from . import sublime_plugin as sp

        if self.window(wid) is None:
            return
        args = _copy_args(args)
        cmd = sp.find_command("window", wid, name)
        builtin = builtins.WINDOW.get(name) if cmd is None else None
        if cmd is None and builtin is None:
            vid = self.active_view_id(wid)
            if vid and self.has_text_command(vid, name):
                self.run_text_command(vid, name, args, by_user=by_user)
                return
            if name in builtins.APPLICATION or sp.find_command("application", 0, name) is not None:
                self.run_application_command(name, args)
                return
        if rewrite:
            res = self.on_main(lambda: sp.on_window_command(wid, name, args))
            if res and res[0]:
                self.run_window_command(wid, res[0], res[1], rewrite=False)
                return
        if cmd is None and builtin is None:
            self.record_command("window", wid, name, args, False, "")
            return
        if cmd is not None and not sp.command_enabled(cmd, args):
            self.record_command("window", wid, name, args, False, "disabled")
            return
        self.record_command("window", wid, name, args, True, "plugin" if cmd else "builtin")
        if cmd is not None:
            sp.run_command_object(cmd, 0, args)
        else:
            try:
                builtin(self, wid, args or {})  # type: ignore[misc]
            except Exception as exc:
                self.report_error(f"built-in window command {name!r}", exc)
        self.emit("window", "on_post_window_command", wid, name, args)

    def run_application_command(self: App, name: str, args: Any = None) -> None:
        from . import sublime_plugin as sp

        args = _copy_args(args)
        cmd = sp.find_command("application", 0, name)
        builtin = builtins.APPLICATION.get(name) if cmd is None else None
        if cmd is None and builtin is None:
            self.record_command("application", 0, name, args, False, "")
            return
        if cmd is not None and not sp.command_enabled(cmd, args):
            self.record_command("application", 0, name, args, False, "disabled")
            return
        self.record_command("application", 0, name, args, True, "plugin" if cmd else "builtin")
        if cmd is not None:
            sp.run_command_object(cmd, 0, args)
        else:
            try:
                builtin(self, args or {})  # type: ignore[misc]
            except Exception as exc:
                self.report_error(f"built-in application command {name!r}", exc)

    def run_focused_command(self: App, name: str, args: Any = None, *, by_user: bool) -> None:
        """Dispatch as a key binding, a menu or the command palette does: view,
        window, app. `by_user`: a key or a menu (text command hooks fire)."""
        wid = self.active_window_id
        vid = self.focused_view_id()
        if vid and self.has_text_command(vid, name):
            self.run_text_command(vid, name, args, by_user=by_user)
        elif wid:
            self.run_window_command(wid, name, args, by_user=by_user)
        else:
            self.run_application_command(name, args)
