"""The editor's side of a rewind: the files the agent changed through the
editor since a prompt go back to their checkpoints (turn_changes.py), the
way Undo Turn puts them back: an open view gets its text as one undo step
(the user's own edits stay in its undo history; saved only when it was
clean and so was the text before), a closed file gets its bytes back only if
it still holds what the agent wrote. A file back already (qwen's own history
restored it, or an earlier undo did) is not written again."""

from __future__ import annotations

import asyncio
import logging

import sublime

from ....core import threads
from ....core.chat.history.rewind import RewindOutcome, changes_since, covers
from ....core.chat.history.turn_changes import REVERTED, FileChange, TurnChanges, restore_on_disk, still_as_written
from ....core.files.agent_files import Refused, read_bytes
from ...editor import view_text
from ...view_writes import put_back
from ..requests.buffers import on_main, open_view
from ..requests.editor_request_handler import EditorRequestHandler
from ..window_chats import WindowChat

log = logging.getLogger(__name__)

DISK_WRITERS = 4  # files restored at once: each write waits for the disk (fsync)


class EditorRestorer:
    """A `FileRestorer` for a chat: its TurnChanges, and the views of its window."""

    def __init__(self, window: sublime.Window, chat: WindowChat, agent_may_restore: bool = True) -> None:
        self._window = window
        handler = chat.request_handler()
        self._turns: TurnChanges | None = handler.files.turns if isinstance(handler, EditorRequestHandler) else None
        self.agent_may_restore = agent_may_restore

    def covers(self, since: int | None) -> bool:
        return self._turns is not None and covers(self._turns, since)

    @threads.on_chat_loop
    async def restore(self, since: int) -> RewindOutcome:
        """Put back what the turns from `since` on changed (disk work on
        threads of ours, views on the main thread)."""
        turns = self._turns
        if turns is None:
            return RewindOutcome([])
        found = changes_since(turns, since)
        window = self._window
        paths = [change.path for change in found.changes]
        opened = await on_main(lambda: {path: view for path in paths if (view := open_view(window, path))})
        in_views = [c for c in found.changes if c.path in opened and c.before is not None and c.before.data is not None]
        in_a_view = {change.path for change in in_views}
        on_disk = [change for change in found.changes if change.path not in in_a_view]
        # Not the agent's bounded file jobs: a rewind of many files takes as long as the disk needs.
        restored, refused = await asyncio.to_thread(_restore_on_disk, on_disk)
        in_views = await asyncio.to_thread(_not_saved_over, in_views, refused)
        restored += await on_main(lambda: _restore_in_views(opened, in_views, refused))
        for turn in range(since, turns.current + 1):
            for path in turns.paths(turn):
                turns.mark(turn, path, REVERTED)  # gone from the conversation: no longer offered for review
        return RewindOutcome(restored, refused + found.not_restored())


@threads.may_block
def _restore_on_disk(changes: list[FileChange]) -> tuple[list[str], list[str]]:
    """(restored, why others were not): each file back only if it still holds
    what the agent wrote (a few files at once, as each
    write waits for the disk)."""
    with threads.pool("QwenCompanion rewind", DISK_WRITERS) as writers:
        results = list(writers.map(_restore_file, changes))
    restored = [change.path for change, why in zip(changes, results, strict=True) if why == ""]
    return restored, [why for why in results if why]


def _restore_file(change: FileChange) -> str | None:
    """Empty when restored, None when back already (by qwen, or an earlier undo), else why not."""
    try:
        if _holds_checkpoint(change):
            return None
        restore_on_disk(change)
    except (Refused, OSError) as error:
        log.warning("chat: a rewind did not restore %s: %s", change.path, error)
        return str(error)
    return ""


def _holds_checkpoint(change: FileChange) -> bool:
    """Whether the file already holds its checkpoint's bytes (absent, for a file the agent made)."""
    assert change.before is not None
    try:
        return read_bytes(change.path) == change.before.data
    except FileNotFoundError:
        return change.before.data is None


def _not_saved_over(changes: list[FileChange], refused: list[str]) -> list[FileChange]:
    """The changes whose file on disk holds what the agent wrote or is back
    already; the others (the user saved other text since) are refused."""
    kept = []
    for change in changes:
        if still_as_written(change) or _holds_checkpoint(change):
            kept.append(change)
        else:
            refused.append(f"{change.path} changed since the agent wrote it; nothing was overwritten")
    return kept


@threads.on_main
def _restore_in_views(opened: dict[str, sublime.View], changes: list[FileChange], refused: list[str]) -> list[str]:
    """One undo step per view."""
    restored: list[str] = []
    for change in changes:
        view = opened[change.path]
        if not view.is_valid() or change.before is None:
            refused.append(f"{change.path} was closed before its text came back")
            continue
        text = change.before.text()
        if view_text(view) == text:
            continue
        why_not = put_back(view, change.path, text, change.before.saved(), change.after)
        if why_not is None:
            restored.append(change.path)
        else:
            refused.append(why_not)
    return restored
