"""Editor helpers every feature shares: a view's whole text, replacing it as
one undo step, the view of a file however its path is spelled, the window a
path belongs to, where a window's views are, and reading a file as Sublime
would open it without stalling the editor."""

from __future__ import annotations

import os
from collections.abc import Callable

import sublime
import sublime_plugin

from ..core import threads
from ..core.files.paths import deepest_root, path_identity, path_style
from ..core.reviews import DiskFile, UnreadableFile, read_disk_file
from .background import in_background
from .settings import fallback_encoding

REPLACE_BUFFER_COMMAND = "qwen_chat_replace_buffer"


def view_text(view: sublime.View) -> str:
    return view.substr(sublime.Region(0, view.size()))


def end_visible(view: sublime.View) -> bool:
    """The view's last line is on screen: a view that streams text (the chat's
    transcript, the answer view) follows new text only then. Scrolling with the
    wheel moves the viewport, never the caret, so only the viewport tells
    whether the user reads further up."""
    return view.visible_region().end() >= view.size()


@threads.on_main
def replace_text(view: sublime.View, text: str) -> None:
    """Replace the view's whole text as one undo step."""
    view.run_command(REPLACE_BUFFER_COMMAND, {"text": text})


class QwenChatReplaceBufferCommand(sublime_plugin.TextCommand):
    """Internal: `replace_text`, one command, so one undo step."""

    def run(self, edit: sublime.Edit, text: str) -> None:
        if view_text(self.view) != text:
            self.view.replace(edit, sublime.Region(0, self.view.size()), text)

    def is_visible(self) -> bool:
        return False


def view_positions(window: sublime.Window) -> dict[int, tuple[int, int]]:
    """Each view's (group, index) in `window`, read a group at a time."""
    return {
        view.id(): (group, index)
        for group in range(window.num_groups())
        for index, view in enumerate(window.views_in_group(group))
    }


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
    encoding = fallback_encoding()

    def read() -> None:
        try:
            result: DiskFile | UnreadableFile = read_disk_file(path, encoding)
        except UnreadableFile as error:
            result = error
        sublime.set_timeout(lambda: done(result))

    in_background(read, "file read")
