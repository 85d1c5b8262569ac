"""What a window shows, for the IDE tools: its open files, its folders and
project, and its build output panel. Read on a thread of ours through
Sublime's thread-safe API: no main-thread time, no wait for it."""

from __future__ import annotations

from collections.abc import Callable

import sublime

from ...core.ide_tools.build_output import MAX_LINE_CHARS, MAX_LINES, build_output as parse_build_output
from ...core.json_types import JsonObject

BUILD_PANEL = "exec"  # Default's exec.py writes the build's output there
# The tail of the panel read for MAX_LINES lines: a hostile build writes megabytes.
BUILD_TAIL_CHARS = MAX_LINES * (MAX_LINE_CHARS + 1)


def open_editors(window: sublime.Window, listed: Callable[[str], bool]) -> JsonObject:
    """The window's open files inside its folders (none the user excluded)."""
    active = window.active_view()
    active_id = active.id() if active is not None else None
    editors: list[JsonObject] = []
    left_out = 0
    for view in window.views():
        path = view.file_name()
        if not path or not listed(path):
            left_out += 1
            continue
        editor: JsonObject = {"abspath": path, "dirty": view.is_dirty(), "active": view.id() == active_id}
        selection = view.sel()
        if len(selection):
            first = selection[0]
            (start_row, start_col), (end_row, end_col) = view.rowcol(first.begin()), view.rowcol(first.end())
            editor["selection"] = {"start": {"line": start_row + 1, "column": start_col + 1},
                                   "end": {"line": end_row + 1, "column": end_col + 1}}
        syntax = view.syntax()
        editor["syntax"] = syntax.name if syntax is not None else None
        editors.append(editor)
    answer: JsonObject = {"editors": editors}
    if left_out:
        answer["note"] = f"{left_out} other tabs are not listed (no file, outside the folders, or excluded)"
    return answer


def workspace_folders(window: sublime.Window) -> JsonObject:
    project = window.project_file_name()
    return {"folders": [{"abspath": folder} for folder in window.folders()],
            "project_file": {"abspath": project} if project else None}


def build_output(window: sublime.Window, listed: Callable[[str], bool]) -> JsonObject:
    """The build panel's tail and its errors (each file's path as the
    build named it, made absolute; those outside the folders left out)."""
    panel = window.find_output_panel(BUILD_PANEL)
    if panel is None:
        return {"output": "", "errors": [], "note": "no build has run in this window"}
    size = panel.size()
    text = panel.substr(sublime.Region(max(0, size - BUILD_TAIL_CHARS), size))
    settings = panel.settings()
    answer = parse_build_output(text, settings.get("result_file_regex"), settings.get("result_line_regex"),
                                settings.get("result_base_dir"))
    answer["errors"] = [error for error in answer["errors"] if listed(error["abspath"])]
    return answer
