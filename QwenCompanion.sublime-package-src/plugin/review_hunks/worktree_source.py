"""A worktree chat's changes as a set of changes for the review view: each
file at the worktree's base and in the worktree (git asked on the view's
reading thread). An undone hunk is written to the worktree's file (inside
the worktree only); a file kept or undone whole is Worktree Changes' own
Keep and Drop."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sublime

from ...core.chat.history.turn_changes import TurnChanges
from ...core.files.agent_files import Refused, decode, read_bytes
from ...core.review_hunks.review import KEPT, ChangedFile
from ...core.worktrees.worktree_changes import bases, changes, is_binary, worktree_file
from ...core.worktrees.worktrees import Worktree
from ..chat.history import turn_review
from ..chat.window_chats import chats
from ..chat.worktrees import worktree_review
from .file_views import FileViews, watch_writes


@dataclass
class WorktreeSource(FileViews):
    worktree: Worktree
    encoding: str  # the fallback encoding, read on the main thread
    turns: TurnChanges | None = None  # the worktree chat's: its writes through the editor update the view

    @property
    def key(self) -> tuple[str, str]:
        return ("worktree", self.worktree.path)

    @property
    def title(self) -> str:
        return f"worktree {self.worktree.name}"

    def changes(self) -> list[ChangedFile]:
        """Every file git lists among the worktree's changes, but those it can never apply (links, submodules)."""
        listed = [file for file in changes(self.worktree, counts=False) if not file.why_not]
        before = bases(self.worktree, listed)
        found = []
        for file in listed:
            full = worktree_file(self.worktree, file.path)
            try:
                now: bytes | None = read_bytes(full)
            except FileNotFoundError:
                now = None
            except (Refused, OSError):
                continue
            base = before.get(file.path)
            binary = is_binary(base) or is_binary(now)
            found.append(ChangedFile(full, self._text(base, binary), self._text(now, binary), binary,
                                     max(len(base or b""), len(now or b""))))
        return found

    def _text(self, data: bytes | None, binary: bool) -> str | None:
        return None if data is None else "" if binary else decode(data, self.encoding).text

    def watch(self, wrote: Callable[[str], None]) -> Callable[[], None]:
        """The chat's writes through the editor (what its shell commands change shows once opened again)."""
        return watch_writes(self.turns, wrote)

    def _relative(self, path: str) -> str:
        return path[len(self.worktree.path):].lstrip("/\\").replace("\\", "/")

    def settled(self, window: sublime.Window, path: str, state: str) -> None:
        if state == KEPT:
            worktree_review.keep(window, self.worktree, self._relative(path))

    def keep_whole(self, window: sublime.Window, path: str | None) -> None:
        if path is not None:
            worktree_review.keep(window, self.worktree, self._relative(path))

    def undo_whole(self, window: sublime.Window, path: str | None) -> None:
        if path is not None:
            worktree_review.drop_file(window, self.worktree, self._relative(path))


def worktree_source(window: sublime.Window, worktree_path: str | None, encoding: str) -> WorktreeSource | None:
    """The review of the worktree at `worktree_path` (of one of the window's chats)."""
    chat = next((chat for chat in chats.of_window(window)
                 if chat.worktree is not None and chat.worktree.path == worktree_path), None)
    if chat is None or chat.worktree is None:
        return None
    return WorktreeSource(chat.worktree, encoding, turn_review.turns_of(window, chat.chat_id))
