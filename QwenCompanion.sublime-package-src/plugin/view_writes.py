"""The view side of the one write path: every change an agent causes to a
user's file through its open buffer (the chat agent's writes, Undo Turn,
Rewind, an accepted quick-action proposal) is made here and nowhere else (a test scans the package for it); the disk side is
core/files/user_files.py. A buffer is saved only when that loses nothing the user
typed or saved since the agent last wrote it."""

from __future__ import annotations

import sublime

from ..core import threads
from ..core.files.agent_files import Refused
from ..core.files.line_endings import lf_line_breaks
from .editor import replace_text, view_text


@threads.on_main
def write_view(view: sublime.View, text: str) -> str:
    """The agent's write into an open buffer (its caller checked the buffer
    holds what the agent last read): one undo step, then saved. Returns the
    buffer's text after the save, which is what the caller records: Sublime's
    save runs the on_pre_save listeners first (Default's
    `trim_trailing_white_space_on_save` and `ensure_newline_at_eof_on_save`,
    format-on-save packages), and what they rewrote is the agent's doing,
    not the user's."""
    replace_text(view, lf_line_breaks(text))
    view.run_command("save")
    return view_text(view)


@threads.on_main
def put_back(view: sublime.View, path: str, text: str, saved: bool, agent_text: str | None) -> str | None:
    """The view's text before a turn as one undo step; saved only when the
    view is clean and the text was saved before the turn. None when done,
    else why not: a clean view that no longer holds what the agent wrote
    (`agent_text`) holds what the user saved since, and is left as it is.
    A view with unsaved edits gets the text unsaved (the edits stay in its
    undo history, the file on disk waits for the user's save)."""
    clean = not view.is_dirty()
    if clean and (agent_text is None or view_text(view) != lf_line_breaks(agent_text)):
        return f"{path} changed since the agent wrote it (saved by the user); nothing was overwritten"
    replace_text(view, text)
    if clean and saved:
        view.run_command("save")
    return None


def apply_proposal(view: sublime.View, text: str, made_from: str) -> str | None:
    """An accepted proposal into the user's buffer, unsaved, as one undo step,
    only while the buffer still holds `made_from` (the text the proposal was
    made from): None when applied, else why not. What the user typed since
    stays; saving stays the user's."""
    if view_text(view) != made_from:
        return "changed since the proposal was made; nothing was applied"
    replace_text(view, text)
    return None


@threads.on_main
def write_merged(view: sublime.View, text: str, merged_from: str) -> str:
    """A merge of the worktree's changes into a clean open buffer, as one undo
    step, then saved; only while the buffer is clean and still holds
    `merged_from` (the file's text the merge was made from), else `Refused`
    (nothing typed or saved since is lost). Returns the buffer's text after
    the save (what its on_pre_save listeners left: see `write_view`)."""
    if view.is_dirty() or view_text(view) != lf_line_breaks(merged_from):
        raise Refused("changed while it was merged (typed or saved since): nothing was overwritten")
    replace_text(view, lf_line_breaks(text))
    view.run_command("save")
    return view_text(view)
