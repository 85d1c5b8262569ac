"""Sublime's built-in (C++ and Default package) commands that packages commonly run.

Text commands take ``(app, view_id, edit_token, args)``, window commands
``(app, window_id, args)``, application commands ``(app, args)``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import _auto_complete, _diff_hunks, _save_rewrites, _text
from ._state import CommandInputRecord

if TYPE_CHECKING:
    from ._app import App

TEXT: dict[str, Callable[..., None]] = {}
WINDOW: dict[str, Callable[..., None]] = {}
APPLICATION: dict[str, Callable[..., None]] = {}


def _text_cmd(name: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    def deco(fn: Callable[..., None]) -> Callable[..., None]:
        TEXT[name] = fn
        return fn

    return deco


def _window_cmd(name: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    def deco(fn: Callable[..., None]) -> Callable[..., None]:
        WINDOW[name] = fn
        return fn

    return deco


def _app_cmd(name: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    def deco(fn: Callable[..., None]) -> Callable[..., None]:
        APPLICATION[name] = fn
        return fn

    return deco


# ------------------------------------------------------------------- text
def _replace_selections(app: App, vid: int, token: int, make: Callable[[int, int], str]) -> None:
    """Replace each selection region (last first, so offsets hold) by ``make(b, e)``."""
    for a, b in reversed(app.sel_get(vid)):
        lo, hi = min(a, b), max(a, b)
        app.modify(vid, token, lo, hi, make(lo, hi))


@_text_cmd("insert")
def insert(app: App, vid: int, token: int, args: dict[str, Any]) -> None:
    chars = str(args.get("characters", ""))
    _replace_selections(app, vid, token, lambda lo, hi: chars)


@_text_cmd("auto_complete")
def auto_complete(app: App, vid: int, token: int, args: dict[str, Any]) -> None:
    _auto_complete.show(app, vid)


@_text_cmd("hide_auto_complete")
def hide_auto_complete(app: App, vid: int, token: int, args: dict[str, Any]) -> None:
    _auto_complete.hide(app, vid)


@_text_cmd("commit_completion")
def commit_completion(app: App, vid: int, token: int, args: dict[str, Any]) -> None:
    chosen = _auto_complete.first_completion(app, vid)
    _auto_complete.hide(app, vid)
    if chosen is not None:
        prefix, completion = chosen
        for a, b in reversed(app.sel_get(vid)):  # the typed prefix and the selection give way
            app.modify(vid, token, max(min(a, b) - len(prefix), 0), max(a, b), completion)


@_text_cmd("insert_snippet")
def insert_snippet(app: App, vid: int, token: int, args: dict[str, Any]) -> None:
    contents = str(args.get("contents", ""))
    # Fields are not modelled: ${1:default} keeps its default, $1/$0 vanish.
    contents = re.sub(r"\$\{\d+:([^}]*)\}", r"\1", contents)
    contents = re.sub(r"\$\{?\d+\}?", "", contents).replace("\\$", "$")
    _replace_selections(app, vid, token, lambda lo, hi: contents)


@_text_cmd("append")
def append(app: App, vid: int, token: int, args: dict[str, Any]) -> None:
    end = len(app.buffer_text(vid))
    app.modify(vid, token, end, end, str(args.get("characters", "")), force=bool(args.get("force", False)))
    if args.get("scroll_to_end"):
        app.show_point(vid, len(app.buffer_text(vid)))


@_text_cmd("select_all")
def select_all(app: App, vid: int, token: int, args: dict[str, Any]) -> None:
    app.sel_set(vid, [(0, len(app.buffer_text(vid)))])


@_text_cmd("left_delete")
def left_delete(app: App, vid: int, token: int, args: dict[str, Any]) -> None:
    for a, b in reversed(app.sel_get(vid)):
        lo, hi = min(a, b), max(a, b)
        app.modify(vid, token, lo if lo != hi else max(lo - 1, 0), hi, "")


@_text_cmd("right_delete")
def right_delete(app: App, vid: int, token: int, args: dict[str, Any]) -> None:
    for a, b in reversed(app.sel_get(vid)):
        lo, hi = min(a, b), max(a, b)
        app.modify(vid, token, lo, hi if lo != hi else hi + 1, "")


def _selected_text(app: App, vid: int) -> str:
    text = app.buffer_text(vid)
    return "\n".join(text[min(a, b) : max(a, b)] for a, b in app.sel_get(vid) if a != b)


@_text_cmd("copy")
def copy_(app: App, vid: int, token: int, args: dict[str, Any]) -> None:
    selected = _selected_text(app, vid)
    if selected:
        app.clipboard = selected


@_text_cmd("cut")
def cut(app: App, vid: int, token: int, args: dict[str, Any]) -> None:
    copy_(app, vid, token, args)
    _replace_selections(app, vid, token, lambda lo, hi: "")


@_text_cmd("paste")
def paste(app: App, vid: int, token: int, args: dict[str, Any]) -> None:
    clip = app.clipboard
    _replace_selections(app, vid, token, lambda lo, hi: clip)


@_text_cmd("move_to")
def move_to(app: App, vid: int, token: int, args: dict[str, Any]) -> None:
    text = app.buffer_text(vid)
    to, extend = args.get("to", "eof"), bool(args.get("extend", False))
    spans = []
    for a, b in app.sel_get(vid):
        if to == "bof":
            p = 0
        elif to == "eof":
            p = len(text)
        elif to in ("bol", "hardbol"):
            p = _text.line_bounds(text, b)[0]
        else:  # eol, hardeol
            p = _text.line_bounds(text, b)[1]
        spans.append((a, p) if extend else (p, p))
    app.sel_set(vid, spans)


@_text_cmd("save")
def save(app: App, vid: int, token: int, args: dict[str, Any]) -> None:
    app.save_view(vid)


@_text_cmd("trim_trailing_white_space")
def trim_trailing_white_space(app: App, vid: int, token: int, args: dict[str, Any]) -> None:
    """Default's command: every line's trailing ``[\t ]+`` erased."""
    for begin, end in reversed(_save_rewrites.trailing_white_space(app.buffer_text(vid), "all", None, [])):
        app.modify(vid, token, begin, end, "")


@_text_cmd("ensure_newline_at_eof")
def ensure_newline_at_eof(app: App, vid: int, token: int, args: dict[str, Any]) -> None:
    """Default's command: a buffer that is not empty ends with "\n"."""
    text = app.buffer_text(vid)
    if text and not text.endswith("\n"):
        app.modify(vid, token, len(text), len(text), "\n")


@_text_cmd("undo")
def undo(app: App, vid: int, token: int, args: dict[str, Any]) -> None:
    """Back to the text before the last text command that changed the buffer."""
    st = app.view(vid)
    if st is None or not st.buffer.undo_texts:
        return
    text = str(st.buffer.undo_texts.pop())
    app.modify(vid, token, 0, len(st.buffer.rope), text, force=True)


# The incremental diff's commands (Sublime's Default keymap: ctrl+k ctrl+z
# revert_hunk, ctrl+k ctrl+/ toggle_inline_diff, ctrl+k ctrl+; the same with
# prefer_hide, ctrl+. / ctrl+, next_/prev_modification). Without a reference
# document there are no hunks and they do nothing.
def _hunks(app: App, vid: int) -> list[_diff_hunks.Hunk]:
    st = app.view(vid)
    if st is None or st.buffer.reference_document is None:
        return []
    return _diff_hunks.hunks(st.buffer.reference_document, app.buffer_text(vid))


def _hunks_under_selection(app: App, vid: int) -> list[_diff_hunks.Hunk]:
    text = app.buffer_text(vid)
    spans = [_diff_hunks.line_span(text, a, b) for a, b in app.sel_get(vid)]
    return [h for h in _hunks(app, vid) if any(h.touches(lo, hi) for lo, hi in spans)]


@_text_cmd("revert_hunk")
def revert_hunk(app: App, vid: int, token: int, args: dict[str, Any]) -> None:
    """The hunks the selections touch get their reference text back (one undo step)."""
    for hunk in reversed(_hunks_under_selection(app, vid)):
        app.modify(vid, token, hunk.begin, hunk.end, hunk.original)


@_text_cmd("toggle_inline_diff")
def toggle_inline_diff(app: App, vid: int, token: int, args: dict[str, Any]) -> None:
    """Show (or hide, when all are shown) the original text of the hunks under
    the selections; with ``prefer_hide``, hide them when any of them is shown."""
    targets = {(h.begin, h.end) for h in _hunks_under_selection(app, vid)}
    with app.lock:
        st = app.view(vid)
        if st is None or not targets:
            return
        shown = set(st.inline_diffs) & {(h.begin, h.end) for h in _hunks(app, vid)}
        others = shown - targets
        hide = bool(targets & shown) if args.get("prefer_hide") else targets <= shown
        st.inline_diffs = sorted(others if hide else others | targets)


def _go_to_modification(app: App, vid: int, forward: bool) -> None:
    selection = app.sel_get(vid)
    if not selection:
        return
    text = app.buffer_text(vid)
    start, end = _diff_hunks.line_span(text, *selection[0])
    hunks = _hunks(app, vid)
    ahead = [h.begin for h in hunks if h.begin > end] if forward else [
        h.begin for h in hunks if h.begin < start and not h.touches(start, end)]
    if ahead:  # none further: the caret stays
        point = ahead[0] if forward else ahead[-1]
        app.sel_set(vid, [(point, point)])
        app.show_point(vid, point)


@_text_cmd("next_modification")
def next_modification(app: App, vid: int, token: int, args: dict[str, Any]) -> None:
    _go_to_modification(app, vid, forward=True)


@_text_cmd("prev_modification")
def prev_modification(app: App, vid: int, token: int, args: dict[str, Any]) -> None:
    _go_to_modification(app, vid, forward=False)


@_text_cmd("revert")
def revert(app: App, vid: int, token: int, args: dict[str, Any]) -> None:
    app.revert_view(vid)


@_text_cmd("toggle_setting")
def toggle_setting(app: App, vid: int, token: int, args: dict[str, Any]) -> None:
    with app.lock:
        st = app.view(vid)
        if st is None:
            return
        sid, value = st.settings_id, app.settings[st.settings_id].lookup(str(args.get("setting")))
    app.settings_write(sid, {str(args.get("setting")): value is not True}, [])


@_text_cmd("set_setting")
def set_setting(app: App, vid: int, token: int, args: dict[str, Any]) -> None:
    st = app.view(vid)
    if st is not None:
        app.settings_write(st.settings_id, {str(args.get("setting")): args.get("value")}, [])


@_text_cmd("set_line_ending")
def set_line_ending(app: App, vid: int, token: int, args: dict[str, Any]) -> None:
    kind = {"windows": "Windows", "unix": "Unix", "cr": "CR"}.get(str(args.get("type", "")).lower())
    with app.lock:
        st = app.view(vid)
        if st is not None and kind:
            st.buffer.line_endings = kind


# ----------------------------------------------------------------- window
def _active_sheet(app: App, wid: int) -> int:
    return app.active_sheet_id(wid)


@_window_cmd("new_file")
def new_file(app: App, wid: int, args: dict[str, Any]) -> None:
    app.new_file(wid, 0, str(args.get("syntax", "")))


@_window_cmd("open_file")
def open_file(app: App, wid: int, args: dict[str, Any]) -> None:
    path = str(args.get("file", ""))
    path = path.replace("${packages}", str(app.packages_dir)).replace("${platform}", app.platform_label())
    if path:
        app.open_file(wid, path, 0, -1)


@_window_cmd("close")
def close(app: App, wid: int, args: dict[str, Any]) -> None:
    sid = _active_sheet(app, wid)
    if sid:
        app.close_sheet(sid)


WINDOW["close_file"] = close


@_window_cmd("close_all")
def close_all(app: App, wid: int, args: dict[str, Any]) -> None:
    for vid in app.window_view_ids(wid):
        if not app.close_view(vid):
            return


@_window_cmd("save_all")
def save_all(app: App, wid: int, args: dict[str, Any]) -> None:
    for vid in app.window_view_ids(wid):
        st = app.view(vid)
        if st is not None and st.buffer.file_name and app.is_dirty(vid):
            app.save_view(vid)


@_window_cmd("set_layout")
def set_layout(app: App, wid: int, args: dict[str, Any]) -> None:
    app.set_layout(wid, args)


@_window_cmd("focus_group")
def focus_group(app: App, wid: int, args: dict[str, Any]) -> None:
    app.focus_group(wid, int(args.get("group", 0)))


@_window_cmd("move_to_group")
def move_to_group(app: App, wid: int, args: dict[str, Any]) -> None:
    sid = _active_sheet(app, wid)
    if sid:
        app.move_sheet(sid, int(args.get("group", 0)), -1)


@_window_cmd("select_by_index")
def select_by_index(app: App, wid: int, args: dict[str, Any]) -> None:
    with app.lock:
        win = app.window(wid)
        sheets = win.groups[win.active_group] if win else []
        index = int(args.get("index", 0))
        sid = sheets[index] if 0 <= index < len(sheets) else 0
    if sid:
        app.focus_sheet(sid)


def _cycle(app: App, wid: int, step: int) -> None:
    with app.lock:
        win = app.window(wid)
        sheets = win.groups[win.active_group] if win else []
        current = win.selected[win.active_group] if win else 0
        if not sheets:
            return
        i = sheets.index(current) if current in sheets else 0
        sid = sheets[(i + step) % len(sheets)]
    app.focus_sheet(sid)


WINDOW["next_view"] = lambda app, wid, args: _cycle(app, wid, 1)
WINDOW["prev_view"] = lambda app, wid, args: _cycle(app, wid, -1)


@_window_cmd("show_panel")
def show_panel(app: App, wid: int, args: dict[str, Any]) -> None:
    app.show_panel(wid, str(args.get("panel", "")), bool(args.get("toggle", False)))


@_window_cmd("hide_panel")
def hide_panel(app: App, wid: int, args: dict[str, Any]) -> None:
    panel = args.get("panel")
    app.hide_panel(wid, str(panel) if panel else None)


@_window_cmd("close_window")
def close_window(app: App, wid: int, args: dict[str, Any]) -> None:
    app.close_window(wid)


@_window_cmd("new_window")
def new_window_w(app: App, wid: int, args: dict[str, Any]) -> None:
    app.new_window()


@_window_cmd("show_overlay")
def show_overlay(app: App, wid: int, args: dict[str, Any]) -> None:
    """The command palette opened on a command asks its input handler (as
    Sublime does when a command lacks a required argument); other overlays
    are only recorded."""
    name = args.get("command")
    if args.get("overlay") == "command_palette" and name is None:
        app.open_palette(wid)
        return
    if args.get("overlay") != "command_palette" or not isinstance(name, str):
        return
    from . import sublime_plugin as sp

    vid = app.active_view_id(wid)
    cmd = (sp.find_command("text", vid, name) if vid else None) or sp.find_command("window", wid, name)
    command_args = dict(args.get("args") or {})
    handler = cmd.create_input_handler_(command_args) if cmd is not None else None
    if handler is not None:
        with app.lock:
            app.command_inputs.append(CommandInputRecord(wid, name, command_args, handler))


@_window_cmd("hide_overlay")
def hide_overlay(app: App, wid: int, args: dict[str, Any]) -> None:
    app.close_palette(wid)
    with app.lock:
        pending = [c for c in app.command_inputs if c.window_id == wid and not c.done]
        for record in pending:
            record.done = True
    for record in pending:
        app.call_plugin("input handler cancel", record.handler.cancel)


def _toggle(attr: str) -> Callable[..., None]:
    def run(app: App, wid: int, args: dict[str, Any]) -> None:
        with app.lock:
            win = app.window(wid)
            if win is not None:
                setattr(win, attr, not getattr(win, attr))

    return run


WINDOW["toggle_side_bar"] = _toggle("sidebar_visible")
WINDOW["toggle_minimap"] = _toggle("minimap_visible")
WINDOW["toggle_status_bar"] = _toggle("status_bar_visible")
WINDOW["toggle_tabs"] = _toggle("tabs_visible")
WINDOW["toggle_menu"] = _toggle("menu_visible")


@_window_cmd("edit_settings")
def edit_settings(app: App, wid: int, args: dict[str, Any]) -> None:
    """Like Default's edit_settings: a new window, base file left (read-only), user file right."""
    base = str(args.get("base_file", ""))
    base = base.replace("${packages}", str(app.packages_dir)).replace("${platform}", app.platform_label())
    user = str(args.get("user_file") or os.path.join(str(app.packages_dir), "User", os.path.basename(base)))
    user = user.replace("${packages}", str(app.packages_dir)).replace("${platform}", app.platform_label())
    new = app.new_window()
    app.set_layout(new, {"cols": [0.0, 0.5, 1.0], "rows": [0.0, 1.0], "cells": [[0, 0, 1, 1], [1, 0, 2, 1]]})
    base_vid = app.open_file(new, base, 0, 0)
    with app.lock:
        st = app.view(base_vid)
        if st is not None:
            st.buffer.read_only = True
            app.settings[st.settings_id].user["edit_settings_view"] = "base"
    if os.path.exists(user):
        user_vid = app.open_file(new, user, 0, 1)
    else:
        app.focus_group(new, 1)
        user_vid = app.new_file(new)
        with app.lock:
            ust = app.view(user_vid)
            if ust is not None:
                ust.buffer.text = str(args.get("default", "{\n\t$0\n}\n")).replace("$0", "")
                ust.buffer.file_name = os.path.abspath(user)
                ust.buffer.change_count += 1  # the default text is unsaved, like Sublime's
    with app.lock:
        ust = app.view(user_vid)
        if ust is not None:
            app.settings[ust.settings_id].user["edit_settings_view"] = "user"
    app.focus_group(new, 1)


# ------------------------------------------------------------ application
@_app_cmd("new_window")
def new_window(app: App, args: dict[str, Any]) -> None:
    app.new_window()


@_app_cmd("close_window")
def close_window_app(app: App, args: dict[str, Any]) -> None:
    if app.active_window_id:
        app.close_window(app.active_window_id)


@_app_cmd("open_url")
def open_url(app: App, args: dict[str, Any]) -> None:
    with app.lock:
        app.opened_urls.append(str(args.get("url", "")))


WINDOW["open_url"] = lambda app, wid, args: open_url(app, args)


@_app_cmd("exit")
def exit_(app: App, args: dict[str, Any]) -> None:
    """Recorded only: a test ends the session with ``host.quit()``."""
