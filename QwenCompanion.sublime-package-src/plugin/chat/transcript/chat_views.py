"""A chat's two views: the read-only transcript and the composer below it,
in a column on the right of the window's layout. Each chat of a window has
its own pair, tabs in the same two groups: switching chats is switching
tabs (the composer keeps each chat's draft), and activating either view of a
chat makes it the window's active chat."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import sublime
import sublime_plugin

from ....core import threads
from ....core.chat.agent.agents import QWEN
from ....core.chat.agent.usage import status_text as usage_status
from ....core.chat.history.rewind import is_qwen
from ....core.chat.transcript.folds import WorkFolds
from ...editor import end_visible
from ...settings import userprefs
from ..window_chats import WindowChat, chat_of_view, chats, is_chat_view, window_by_id
from .notify import TITLE_MARK
from .plan_view import drop_stale_plan
from .queue_view import forget_queue_drawn, show_queue

if TYPE_CHECKING:
    from sublime_types import WindowLayout

    from ....core.chat.transcript.folds import WorkFolds

VIEW_SETTING = "qwen_chat.view"  # "transcript" | "composer"
WINDOW_SETTING = "qwen_chat.window"
CHAT_SETTING = "qwen_chat.chat"  # the chat's id
SESSION_SETTING = "qwen_chat.session"  # the transcript's conversation, for the next load of the package
WORKTREE_SETTING = "qwen_chat.worktree"  # a worktree chat's tab: not adopted as a plain chat by the next load
SYNTAX = "Packages/QwenCompanion/syntaxes/QwenChat.sublime-syntax"
STATUS_KEY = "qwen_chat"
TRANSCRIPT_NAME = "Qwen Chat"
COMPOSER_NAME = "Qwen Chat: message"
AGENT_CHAT_NAME = "Chat · {}"  # the tabs of a chat whose agent is not qwen
WORKTREE_CHAT_NAME = "{} ⎇ {}"  # the tabs of a chat in a worktree: its name after the chat's
# Code on the left; transcript over composer on the right.
CHAT_LAYOUT: WindowLayout = {
    "cols": [0.0, 0.6, 1.0],
    "rows": [0.0, 0.78, 1.0],
    "cells": [[0, 0, 1, 2], [1, 0, 2, 1], [1, 1, 2, 2]],
}


def _new_chat_view(window: sublime.Window, group: int, name: str, role: str, chat_id: int) -> sublime.View:
    """A scratch view of the chat's syntax at the end of `group`."""
    view = window.new_file(syntax=SYNTAX)
    window.set_view_index(view, group, window.num_views_in_group(group))
    view.set_scratch(True)
    view.set_name(name)
    _view_settings(view, role, window.id(), chat_id)
    return view


def tab_name(chat: WindowChat, base: str) -> str:
    """The tab's name: the window's first chat keeps the plain name; a chat
    whose agent is not qwen has the agent's name in it."""
    shown = base if chat.agent == QWEN else base.replace(TRANSCRIPT_NAME, AGENT_CHAT_NAME.format(chat.agent), 1)
    title = chat.custom_title or chat.state.session_title
    if chat.worktree is not None:  # its name tells the chats apart: no number
        shown = WORKTREE_CHAT_NAME.format(shown, chat.worktree.name)
        return f"{shown} ({title})" if title else shown
    if title:
        return f"{shown}: {title}" if base == TRANSCRIPT_NAME else f"{shown} ({title})"
    return shown if chat.number == 1 else f"{shown} {chat.number}"


def name_tabs(chat: WindowChat) -> None:
    transcript, composer = chat_views(chat)
    if transcript is not None:
        mark = TITLE_MARK if transcript.name().startswith(TITLE_MARK) else ""  # it still waits unseen
        transcript.set_name(mark + tab_name(chat, TRANSCRIPT_NAME))
    if composer is not None:
        composer.set_name(tab_name(chat, COMPOSER_NAME))


def _view_settings(view: sublime.View, role: str, window_id: int, chat_id: int) -> None:
    settings = view.settings()
    settings.update({
        VIEW_SETTING: role,
        WINDOW_SETTING: window_id,
        CHAT_SETTING: chat_id,
        "word_wrap": True,
        "gutter": False,
        "line_numbers": False,
        "draw_indent_guides": False,
        "scroll_past_end": False,
        "spell_check": False,
        # Prose must not pop word completions (Enter would commit one instead of
        # sending): the views are all text.*, so this selector never matches and
        # only the triggers open the list: `/` of slash commands, `:` of the names
        # after `@symbol:` (@ has its own key).
        "auto_complete_selector": "source - text",
        "auto_complete_triggers": [{"selector": "text.html.markdown.qwen-chat", "characters": "/:"}],
        "is_widget": False,
    })


def chat_views(chat: WindowChat) -> tuple[sublime.View | None, sublime.View | None]:
    transcript = chat.transcript_view if chat.transcript_view and chat.transcript_view.is_valid() else None
    composer = chat.composer_view if chat.composer_view and chat.composer_view.is_valid() else None
    return transcript, composer


def has_chat_column(col_count: int, row_count: int, cells: list[list[int]]) -> bool:
    """The last two cells are a column of their own at the right edge, one over the other."""
    if len(cells) < 3:
        return False
    right = col_count - 1
    top, bottom = cells[-2], cells[-1]
    return (
        top[0] == bottom[0] == right - 1 and top[2] == bottom[2] == right
        and top[1] == 0 and top[3] == bottom[1] and bottom[3] == row_count - 1
        and all(cell[2] <= right - 1 for cell in cells[:-2])
    )


def chat_groups(window: sublime.Window) -> tuple[int, int]:
    """The groups of the transcript and the composer: the chat's column on the
    right, added to the window's layout (its groups keep their views) unless
    the layout already ends with it."""
    layout = window.layout()
    cols, rows, cells = list(layout["cols"]), list(layout["rows"]), [list(c) for c in layout["cells"]]
    if has_chat_column(len(cols), len(rows), cells):
        return len(cells) - 2, len(cells) - 1  # its views were closed, the column stayed
    split = CHAT_LAYOUT["rows"][1]
    code_width = CHAT_LAYOUT["cols"][1]
    new_rows = sorted(set(rows) | {split})
    column = len(cols) - 1  # the new column's left edge is the old right edge
    window.set_layout({
        "cols": [c * code_width for c in cols] + [1.0],
        "rows": new_rows,
        "cells": [[x1, new_rows.index(rows[y1]), x2, new_rows.index(rows[y2])] for x1, y1, x2, y2 in cells]
        + [[column, 0, column + 1, new_rows.index(split)], [column, new_rows.index(split), column + 1, len(new_rows) - 1]],
    })
    return len(cells), len(cells) + 1


def open_chat(window: sublime.Window, chat: WindowChat, focus: bool = True) -> sublime.View:
    """Show the chat's views (made again if closed) and focus the composer; with
    `focus` False, the keys stay with the view that has them (a permission
    request must not take the keys the user is typing with)."""
    transcript, composer = chat_views(chat)
    typing_in = window.active_view()
    if transcript is None or composer is None:
        transcript_group, composer_group = chat_groups(window)
        if transcript is None:
            transcript = _new_chat_view(window, transcript_group, tab_name(chat, TRANSCRIPT_NAME), "transcript",
                                        chat.chat_id)
            transcript.set_read_only(True)
            chat.fill(transcript)
        if composer is None:
            composer = _new_chat_view(window, composer_group, tab_name(chat, COMPOSER_NAME), "composer",
                                      chat.chat_id)
            chat.composer_view = composer
        if chat.worktree is not None:
            for view in (transcript, composer):
                view.settings().set(WORKTREE_SETTING, chat.worktree.name)
    window.focus_view(transcript)
    if focus:
        window.focus_view(composer)
    elif typing_in is not None and typing_in.is_valid():
        window.focus_view(typing_in)
    refresh_status(window.id())
    return composer


def left_chat_tab(view: sublime.View) -> str | None:
    """The role of a chat tab an earlier load of the package left (a reload, an
    upgrade, a restart): its settings say so, and it is a scratch tab with no
    file, as ours are. A project's settings reach every view of its window, so
    settings alone never make a user's file (or unsaved buffer) a chat tab."""
    role = view.settings().get(VIEW_SETTING)
    if role in ("transcript", "composer") and not view.file_name() and view.is_scratch() and not is_chat_view(view):
        return str(role)
    return None


@threads.on_main
def adopt_chat_views() -> None:
    """Chat tabs left by an earlier load of the package become their window's
    chats again, one per pair of tabs; extra copies close. No
    agent starts: that waits for the user (sending, or opening the chat)."""
    for window in sublime.windows():
        pairs: dict[object, dict[str, list[sublime.View]]] = {}  # the earlier chat's id -> its tabs by role
        for view in window.views():
            role = left_chat_tab(view)
            if role is not None and view.settings().get(WORKTREE_SETTING):
                # Its session belongs in its worktree: as a plain chat it would run in the
                # project. Worktrees… reopens it there.
                view.close()
            elif role is not None:
                tabs = pairs.setdefault(view.settings().get(CHAT_SETTING), {"transcript": [], "composer": []})
                tabs[role].append(view)
        adopted: list[WindowChat] = []
        for tabs in pairs.values():
            chat = chats.ensure(window) if not adopted else chats.new_chat(window, fresh=True)
            if chat is None:
                return
            saved = next((v.settings().get(SESSION_SETTING) for v in tabs["transcript"]), None)
            if adopted and isinstance(saved, str):
                chat.session_id = saved  # reloaded when the chat starts
            _adopt_tabs(window, chat, tabs)
            adopted.append(chat)
        if adopted:
            chats.select(adopted[0])
            refresh_status(window.id())


def _adopt_tabs(window: sublime.Window, chat: WindowChat, tabs: dict[str, list[sublime.View]]) -> None:
    transcript, composer = chat_views(chat)
    for view in tabs["transcript"] + tabs["composer"]:
        if view.settings().get("syntax") != SYNTAX:
            view.assign_syntax(SYNTAX)  # an upgrade moved the syntax: tabs kept the old path
    for view in tabs["transcript"]:
        if transcript is None:
            transcript = view
            view.settings().update({WINDOW_SETTING: window.id(), CHAT_SETTING: chat.chat_id})
            chat.fill(view)
        elif view != transcript:
            view.close()
    for view in tabs["composer"]:
        if composer is None:
            composer = chat.composer_view = view
            view.settings().update({WINDOW_SETTING: window.id(), CHAT_SETTING: chat.chat_id})
        elif view != composer:
            view.close()


def status_text(chat: WindowChat) -> str:
    state = chat.state
    if state.agent_status == "stopped" and state.session_id is None and not state.stopped_why:
        return ""
    parts = ["Chat"] if chat.agent == QWEN else ["Chat", chat.agent]
    if chat.worktree is not None:
        parts.append(f"worktree {chat.worktree.name}")
    mode = state.mode_name()
    model = state.model_name()
    if mode:
        parts.append(mode)
    if model:
        parts.append(model)
    options = state.options.status_text()  # the other session options: thought level, switches
    if options:
        parts.append(options)
    usage = usage_status(state.usage)
    if usage:  # a status bar holds no link: the meter names the command that breaks it down (qwen's alone)
        parts.append(f"{usage} (Session Status)" if is_qwen(state) else usage)
    if state.agent_status == "busy":
        parts.append("working…")
    elif state.agent_status in ("exited", "starting") or state.stopped_why:
        parts.append(state.agent_text())
    if state.queued:
        parts.append(f"{state.queued} queued")
    return " · ".join(parts)


def refresh_status(window_id: int) -> None:
    """The active chat's mode, model and context use on every view of the
    window; each transcript notes its conversation."""
    window = window_by_id(window_id)
    chat = chats.get(window)
    if window is None or chat is None:
        return
    for each in chats.of_window(window):
        drop_stale_plan(each)
        session, transcript = each.session_id, each.transcript_view
        if session and transcript is not None and transcript.settings().get(SESSION_SETTING) != session:
            transcript.settings().set(SESSION_SETTING, session)
        if transcript is not None and transcript.name().removeprefix(TITLE_MARK) != tab_name(each, TRANSCRIPT_NAME):
            name_tabs(each)  # the agent set the session's title
        show_queue(each)
    text = status_text(chat) if userprefs().status_bar else ""
    for view in window.views():
        if text:
            view.set_status(STATUS_KEY, text)
        else:
            view.erase_status(STATUS_KEY)


_work_folds: dict[int, WorkFolds] = {}  # transcript view id -> what its next edits fold; pruned at its close


def transcript_closed(view_id: int) -> None:
    """A view closed: what was held for it as a chat's transcript goes."""
    _work_folds.pop(view_id, None)
    forget_queue_drawn(view_id)


class QwenChatApplyCommand(sublime_plugin.TextCommand):
    """Applies a batch of transcript edits: [offset, erase, text] each, and
    folds the finished thoughts and long tool outputs they hold (from the
    edits' text: the cost of a batch never grows with the transcript). The
    view follows new text only while its end is on screen."""

    def run(self, edit: sublime.Edit, edits: list[list[Any]]) -> None:
        view = self.view
        follow = end_visible(view)
        folds = _work_folds.setdefault(view.id(), WorkFolds())
        view.set_read_only(False)
        try:
            for offset, erase, text in edits:
                region = sublime.Region(int(offset), int(offset) + int(erase))
                if erase:
                    view.replace(edit, region, str(text))
                else:
                    view.insert(edit, int(offset), str(text))
                for begin, end in folds.edit(int(offset), int(erase), str(text)):
                    view.fold(sublime.Region(begin, end))
        finally:
            view.set_read_only(True)
        if follow:
            view.show(view.size(), False)
        chat = chat_of_view(view)
        if chat is not None:
            show_queue(chat)  # after the new end (see queue_view.py)


def uptime(started_at: float) -> str:
    seconds = int(time.time() - started_at) if started_at else 0
    return f"{seconds // 3600}h {seconds // 60 % 60}m {seconds % 60}s"
