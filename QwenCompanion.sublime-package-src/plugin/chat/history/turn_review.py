"""A turn's changes in Sublime's own diff.

When a turn that changed files ends, each changed file open in the window
gets its checkpoint (its text before the turn) as its reference document:
the gutter marks the agent's changes, and Sublime's own Toggle Hunk Diff,
Revert Hunk and Next/Previous Modification work on them. "Qwen Code: Turn
Changes" lists the files (lines added/removed, state); a file opens at its
first change, and Keep (the reference goes back to git's index for a file
of a repository, else to the current text) or Undo
(the checkpoint back, byte-exact) take one file or the whole turn. Undo in
an open view is one undo step, so the user's own edits stay in its undo
history; a file on disk is restored only if it still holds what the agent
wrote. The summary (line counts) and disk restores run on threads of ours."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import sublime
import sublime_plugin

from ....core import threads
from ....core.chat.history.turn_changes import (
    CHANGED,
    KEPT,
    OUTSIDE,
    REVERTED,
    FileSummary,
    TurnChanges,
    changed_on_disk,
    first_changed_line,
    restore_on_disk,
    still_as_written,
)
from ....core.chat.prompts.git_index import index_text
from ....core.files.agent_files import Refused, real
from ....core.git import find_git
from ...background import in_background
from ...editor import view_text
from ...paths import path_display
from ...placement import code_group
from ...settings import fallback_encoding
from ...view_writes import put_back
from ..command_bases import ChatViewCommand
from ..requests.buffers import open_view
from ..requests.editor_request_handler import request_handler_of
from ..window_chats import chats, window_by_id

log = logging.getLogger(__name__)

STATUS_KEY = "qwen_turn_changes"
REVIEW_KEY = "Cmd+K, D" if sublime.platform() == "osx" else "Ctrl+K, D"  # Default.sublime-keymap
UNDO_THREAD = "turn undo"  # also a Keep's questions to git (the headless driver waits for this name)
SUMMARY_THREAD = "turn summary"
# The turn's end line in the transcript: Enter on it, or its link, opens the turn's list.
TURN_LINE = "Turn {turn}: {changed} — review: {key}, Enter on this line, or Qwen Code: Turn Changes"
TURN_LINE_PATTERN = re.compile(r"\bTurn (\d+): \d+ files? changed — review\b")
LINK_KEY = "qwen_turn_changes_link"
LINK_HTML = '<a href="turn_changes:{turn}">Review the changes</a>'
# The line reaches the transcript through the chat's thread: looked for every 100 ms, 5 s at most.
LINK_TRIES = 50
LINK_INTERVAL_MS = 100


def turns_of(window: sublime.Window | None, chat_id: int | None = None) -> TurnChanges | None:
    """The turn checkpoints of chat `chat_id`, or of the window's active chat."""
    requests = request_handler_of(window, chat_id)
    return requests.files.turns if requests is not None else None


def summary(files: list[FileSummary]) -> list[dict[str, Any]]:
    return [asdict(file) for file in files]


def chat_event(event: str, details: dict[str, Any]) -> None:
    if event == "chat_turn_ended":
        turn_ended(int(details["window"]), int(details["chat"]))


def turn_ended(window_id: int, chat_id: int) -> None:
    """The chat's turn ended (any thread): if it changed files, they are
    summarised on a thread of ours, then shown on the main thread."""
    turns = turns_of(window_by_id(window_id), chat_id)
    if turns is None:
        return
    turn, read = turns.end_turn()

    def summarise() -> None:
        for path, mark in read.items():  # files the agent read that a command changed since
            if changed_on_disk(path, mark):
                turns.changed_outside(path, turn)
        if not turns.has_changes(turn):
            return
        files = turns.files(turn)  # line counts: a diff of each file
        references = {path: change.before.text() for path in turns.paths(turn)
                      if (change := turns.change(turn, path)) is not None and change.before is not None}
        sublime.set_timeout(lambda: _show_turn(window_id, chat_id, turn, files, references))

    in_background(summarise, SUMMARY_THREAD)


@threads.on_main
def _show_turn(window_id: int, chat_id: int, turn: int, files: list[FileSummary], references: dict[str, str]) -> None:
    """The open views diff against their checkpoints; the turn is announced."""
    window = window_by_id(window_id)
    if window is None:
        return
    for path, text in references.items():
        view = open_view(window, path)
        if view is not None:
            view.set_reference_document(text)
    changed = f"{len(files)} file{'s' if len(files) != 1 else ''} changed"
    label = f"Qwen Code: {changed} — review: Qwen Code: Turn Changes"
    window.status_message(label)
    chat = chats.by_id(chat_id)
    if chat is not None:
        line = TURN_LINE.format(turn=turn, changed=changed, key=REVIEW_KEY)
        chat.note(line)
        _link_turn_line(window_id, chat_id, turn, line, LINK_TRIES)
    for view in window.views():
        view.set_status(STATUS_KEY, label)
    chats.tell("turn_changes", {"window": window_id, "chat": chat_id, "turn": turn, "files": summary(files)})


@threads.on_main
def _link_turn_line(window_id: int, chat_id: int, turn: int, line: str, tries: int) -> None:
    """Once the turn's end line is in the chat's transcript view, a
    link after it opens the turn's list (looked for again a little later until then)."""
    window = window_by_id(window_id)
    chat = chats.by_id(chat_id)
    view = chat.transcript_view if chat is not None else None
    if window is None or view is None or not view.is_valid():
        return  # no transcript shown: Enter on the line still opens the list once it is
    found = view.find(line, 0, sublime.FindFlags.LITERAL)
    if found.a < 0:
        if tries > 1:
            sublime.set_timeout(lambda: _link_turn_line(window_id, chat_id, turn, line, tries - 1), LINK_INTERVAL_MS)
        return
    view.add_phantom(LINK_KEY, sublime.Region(found.b), LINK_HTML.format(turn=turn), sublime.PhantomLayout.INLINE,
                     lambda href: window.run_command("qwen_turn_changes", {"turn": turn, "chat": chat_id}))


def turn_on_line(text: str) -> int | None:
    """The turn whose end line `text` is, if it is one."""
    match = TURN_LINE_PATTERN.search(text)
    return int(match.group(1)) if match else None


def _reviewed(window: sublime.Window) -> None:
    """The whole turn was kept or undone: the status bar stops asking for a review."""
    for view in window.views():
        view.erase_status(STATUS_KEY)


def _chosen(window: sublime.Window, turn: int | None, path: str | None,
            chat_id: int | None) -> tuple[TurnChanges, int, list[str]] | None:
    """(the chat's turns, the turn meant (default: the last that changed files),
    the files meant: `path` or all of them); the whole turn is being reviewed."""
    turns = turns_of(window, chat_id)
    chosen = turns.last_changed_turn() if turns is not None and turn is None else turn
    if turns is None or chosen is None:
        return None
    if path is None:
        _reviewed(window)
    return turns, chosen, [real(path)] if path is not None else turns.paths(chosen)


@threads.on_main
def keep(window: sublime.Window, turn: int | None = None, path: str | None = None,
         chat_id: int | None = None) -> int | None:
    """Keep the agent's changes: each open view's reference goes
    back to what Sublime compares it with, git's index for a file of a
    repository (when its diff gutter is on), else its current text. git is
    asked on a thread of ours."""
    found = _chosen(window, turn, path, chat_id)
    if found is None:
        return None
    turns, chosen, paths = found
    for each in paths:
        turns.mark(chosen, each, KEPT)
    opened = {each: view for each in paths if (view := open_view(window, each)) is not None}
    in_git = [each for each, view in opened.items() if view.settings().get("mini_diff", True) is not False]
    encoding = fallback_encoding()

    def ask_git() -> None:
        git = find_git()
        staged = {each: index_text(each, git, fallback_encoding=encoding) for each in in_git}
        sublime.set_timeout(lambda: _keep_references(opened, staged))

    in_background(ask_git, UNDO_THREAD)
    return chosen


@threads.on_main
def _keep_references(opened: dict[str, sublime.View], staged: dict[str, str | None]) -> None:
    """The kept files' views compare with git's index, or their own text."""
    for path, view in opened.items():
        if view.is_valid():
            reference = staged.get(path)
            view.set_reference_document(reference if reference is not None else view_text(view))


@threads.on_main
def undo(window: sublime.Window, turn: int | None = None, path: str | None = None,
         chat_id: int | None = None) -> int | None:
    """Put the turn's files (or one) back to their checkpoints.
    The texts are made and the files on disk restored on a thread of ours;
    then each open view gets its text back as one undo step."""
    found = _chosen(window, turn, path, chat_id)
    if found is None:
        return None
    turns, chosen, paths = found
    opened = {each: view for each in paths if (view := open_view(window, each)) is not None}
    window_id = window.id()

    def work() -> None:
        # (path, its text before the turn, whether that was saved, what the agent wrote)
        in_views: list[tuple[str, str, bool, str | None]] = []
        refused: list[str] = []
        for each in paths:
            change = turns.change(chosen, each)
            if change is None or change.state in (REVERTED, OUTSIDE):
                continue
            before = change.before
            if each in opened and before is not None and before.data is not None:
                if not still_as_written(change):  # the user saved other text since
                    refused.append(f"{each} changed since the agent wrote it; nothing was overwritten")
                    continue
                in_views.append((each, before.text(), before.saved(), change.after))
                continue
            try:
                restore_on_disk(change)
            except (Refused, OSError) as error:
                log.warning("chat: the turn's change of %s was not undone: %s", change.path, error)
                refused.append(str(error))
            else:
                turns.mark(chosen, each, REVERTED)
        sublime.set_timeout(lambda: _undo_in_views(window_id, turns, chosen, opened, in_views, refused))

    in_background(work, UNDO_THREAD)
    return chosen


@threads.on_main
def _undo_in_views(window_id: int, turns: TurnChanges, turn: int, opened: dict[str, sublime.View],
                   in_views: list[tuple[str, str, bool, str | None]], refused: list[str]) -> None:
    """One undo step per view; saved (in the view's own encoding
    and line endings: the checkpoint's bytes) only when neither the view now
    nor the buffer before the turn held unsaved text, which stays unsaved for
    the user to decide (the user's edits stay in the view's undo history)."""
    for path, text, saved, agent_text in in_views:
        view = opened[path]
        if not view.is_valid():
            refused.append(f"{path} was closed before its text came back")
            continue
        why_not = put_back(view, path, text, saved, agent_text)
        if why_not is not None:
            refused.append(why_not)
            continue
        turns.mark(turn, path, REVERTED)
    window = window_by_id(window_id)
    if refused and window is not None:
        more = f"; and {len(refused) - 3} more" if len(refused) > 3 else ""
        window.status_message(f"Qwen Code: not undone: {'; '.join(refused[:3])}{more}")


@threads.on_main
def open_at_first_change(window: sublime.Window, turn: int, path: str, chat_id: int | None = None) -> None:
    """Open a file of the turn at its first change, its checkpoint as reference
    (the texts are compared on a thread of ours)."""
    turns = turns_of(window, chat_id)
    change = turns.change(turn, path) if turns is not None else None
    if change is None or change.before is None or change.after is None:
        window.open_file(path, group=code_group(window))
        return
    before_text, after = change.before, change.after
    open_with_reference(window, path, lambda: (before_text.text(), after))


@threads.on_main
def open_with_reference(window: sublime.Window, path: str, texts: Callable[[], tuple[str, str] | None]) -> None:
    """Open `path` in the code's group at its first change against a reference:
    `texts` (run on a thread of ours) gives (the reference, the file's text), or None: no reference."""
    view = window.open_file(path, group=code_group(window))  # not the active group: that may be the chat's column

    def compare() -> None:
        found = texts()
        if found is not None:
            before, after = found
            line = first_changed_line(before, after)
            sublime.set_timeout(lambda: show(before, line))

    def show(before: str, line: int) -> None:
        if not view.is_valid():
            return
        if view.is_loading():
            sublime.set_timeout(lambda: show(before, line), 50)
            return
        view.set_reference_document(before)
        point = view.text_point(line, 0)
        view.sel().clear()
        view.sel().add(sublime.Region(point))
        view.show_at_center(point)

    in_background(compare, SUMMARY_THREAD)


class TurnReferenceListener(sublime_plugin.EventListener):
    """A file a turn changed, opened later however it is opened, diffs against
    its checkpoint too (until the turn's change is kept or undone)."""

    def on_load(self, view: sublime.View) -> None:
        name = view.file_name()
        every = [turns_of(view.window(), chat.chat_id) for chat in chats.of_window(view.window())] if name else []
        held = [turns for turns in every if turns is not None]
        if not name or not held:
            return

        def decode() -> None:
            # Resolving the path touches the disk (a network folder may hang): not on the main thread.
            path = real(name)
            change = next((c for turns in held if (c := turns.pending(path))), None)
            before = change.before if change is not None else None
            if before is None:
                return
            text = before.text()
            sublime.set_timeout(lambda: _set_reference(view, text))

        in_background(decode, SUMMARY_THREAD)


def _set_reference(view: sublime.View, text: str) -> None:
    if view.is_valid():
        view.set_reference_document(text)


class QwenTurnChangesCommand(sublime_plugin.WindowCommand):
    """The last turn's changed files (or `turn`'s) of the active chat (or chat
    `chat`) in a quick panel: open one at its first change, then Keep or Undo
    it; or Keep All / Undo Turn."""

    def run(self, turn: int | None = None, chat: int | None = None) -> None:
        turns = turns_of(self.window, chat)
        chosen = turn if turn is not None else (turns.last_changed_turn() if turns is not None else None)
        if turns is None or chosen is None:
            self.window.status_message("Qwen Code: no turn of the chat changed files")
            return
        files = turns.files(chosen)
        display = path_display(self.window)
        # The files come first and Undo Turn last: the pre-selected item (Enter,
        # Enter) never restores every file.
        items = [[display(file.path), _counts_label(file)] for file in files]
        items += [["Keep All", "keep every change of the turn"],
                  ["Undo Turn", "every file back to its text before the turn"]]

        def chosen_item(index: int) -> None:
            if 0 <= index < len(files):
                self._file(chosen, files[index], chat)
            elif index == len(files):
                keep(self.window, chosen, chat_id=chat)
            elif index == len(files) + 1:
                undo(self.window, chosen, chat_id=chat)

        self.window.show_quick_panel(items, chosen_item, placeholder=f"Qwen Code: turn {chosen}'s changes")

    def _file(self, turn: int, file: FileSummary, chat: int | None) -> None:
        def picked(index: int) -> None:
            if index == 0:
                open_at_first_change(self.window, turn, file.path, chat)
            elif index == 1:
                keep(self.window, turn, file.path, chat)
            elif index == 2:
                undo(self.window, turn, file.path, chat)

        self.window.show_quick_panel(["Open at its first change", "Keep", "Undo (back to before the turn)"], picked,
                                     placeholder=path_display(self.window)(file.path))


def _counts_label(file: FileSummary) -> str:
    if file.state == OUTSIDE:
        return "changed outside the editor (by a command)"
    note = "" if file.state == CHANGED else f" · {file.state}"
    return f"+{file.added} −{file.removed}{note}"


class QwenTurnChangesAtCaretCommand(ChatViewCommand):
    """Enter in the transcript on a turn's end line ("Turn 3: 2 files changed —
    review…") opens that turn's list."""

    def run(self, edit: sublime.Edit) -> None:
        turn = self._turn()
        window, chat = self.view.window(), self.view_chat()
        if turn is not None and window is not None and chat is not None:  # this transcript's chat, active or not
            window.run_command("qwen_turn_changes", {"turn": turn, "chat": chat.chat_id})

    def is_enabled(self, **_: Any) -> bool:
        return super().is_enabled() and self._turn() is not None

    def _turn(self) -> int | None:
        selection = self.view.sel()
        return turn_on_line(self.view.substr(self.view.line(selection[0].b))) if len(selection) == 1 else None


class QwenTurnUndoCommand(sublime_plugin.WindowCommand):
    """Undo the last turn that changed files (or `turn`), or only `path`, of the
    active chat (or chat `chat`)."""

    def run(self, turn: int | None = None, path: str | None = None, chat: int | None = None) -> None:
        if undo(self.window, turn, path, chat) is None:
            self.window.status_message("Qwen Code: no turn of the chat changed files")


class QwenTurnKeepCommand(sublime_plugin.WindowCommand):
    """Keep the changes of the last turn that changed files (or `turn`), or only
    `path`, of the active chat (or chat `chat`)."""

    def run(self, turn: int | None = None, path: str | None = None, chat: int | None = None) -> None:
        if keep(self.window, turn, path, chat) is None:
            self.window.status_message("Qwen Code: no turn of the chat changed files")
