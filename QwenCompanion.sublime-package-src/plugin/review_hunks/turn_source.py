"""A chat's turn (or every turn since one) as a set of changes for the
review view: each file's text before the first of those turns that changed
it (its earliest checkpoint) and the text the agent's last write left;
told of each write of the turn as it lands, so the view follows a running
turn. A file kept or undone whole goes through Turn Changes' own Keep and
Undo (reference documents, byte-exact restores)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sublime

from ...core.chat.history.turn_changes import OUTSIDE, REVERTED, TurnChanges
from ...core.review_hunks.review import UNDONE, ChangedFile
from ..chat.history import turn_review
from ..chat.window_chats import chats
from .file_views import FileViews, watch_writes


@dataclass
class TurnSource(FileViews):
    turns: TurnChanges
    chat_id: int
    turn: int
    since: bool = False  # every turn from `turn` on, the running one included

    @property
    def key(self) -> tuple[str, int, int, bool]:
        return ("turn", self.chat_id, self.turn, self.since)

    @property
    def title(self) -> str:
        return f"turns since {self.turn}" if self.since else f"turn {self.turn}"

    def _turns(self) -> range:
        return range(self.turn, self.turns.current + 1) if self.since else range(self.turn, self.turn + 1)

    def _turns_of(self, path: str) -> list[int]:
        return [turn for turn in self._turns() if self.turns.change(turn, path) is not None]

    def changes(self) -> list[ChangedFile]:
        """The turn's files with both texts kept (a file changed by a command,
        or past the checkpoints' budget, has no text before: Turn Changes lists it)."""
        found = []
        paths = dict.fromkeys(path for turn in self._turns() for path in self.turns.paths(turn))
        for path in paths:
            turns = self._turns_of(path)
            first, change = self.turns.change(turns[0], path), self.turns.change(turns[-1], path)
            if (first is None or change is None or OUTSIDE in (first.state, change.state)
                    or first.before is None or change.after is None):
                continue
            before = first.before
            existed = before.data is not None or before.buffer_text is not None
            found.append(ChangedFile(path, before.text() if existed else None, change.after,
                                     size=max(len(before.data or b""), len(change.after))))
        return found

    def watch(self, wrote: Callable[[str], None]) -> Callable[[], None]:
        return watch_writes(self.turns, wrote)

    def settled(self, window: sublime.Window, path: str, state: str) -> None:
        """No hunk of `path` is pending: undone alone, the turn's file is
        reverted; otherwise kept (its reference document goes back too)."""
        for turn in self._turns_of(path):
            if state == UNDONE:
                self.turns.mark(turn, path, REVERTED)
            else:
                turn_review.keep(window, turn, path, self.chat_id)

    def keep_whole(self, window: sublime.Window, path: str | None) -> None:
        for turn in self._turns():
            turn_review.keep(window, turn, path, self.chat_id)

    def undo_whole(self, window: sublime.Window, path: str | None) -> None:
        """Each file back to the checkpoint of the first turn that changed it
        (the later turns' checkpoints are then behind it: marked reverted)."""
        for each in [path] if path is not None else list(dict.fromkeys(
                found for turn in self._turns() for found in self.turns.paths(turn))):
            turns = self._turns_of(each)
            if turns:
                turn_review.undo(window, turns[0], each, self.chat_id)
                for later in turns[1:]:
                    self.turns.mark(later, each, REVERTED)


def turn_source(window: sublime.Window, chat_id: int | None, turn: int | None,
                since: int | None = None) -> TurnSource | None:
    """The review of chat `chat_id`'s (or the active chat's) turn `turn`: by
    default the running turn once it wrote a file, else the last that changed
    files; with `since`, every turn from that one on."""
    turns = turn_review.turns_of(window, chat_id)
    handler_chat = chat_id if chat_id is not None else _active_chat_id(window)
    if turns is None or handler_chat is None:
        return None
    chosen = turn if turn is not None else (turns.current if turns.has_changes(turns.current)
                                            else turns.last_changed_turn())
    if since is not None:
        return TurnSource(turns, handler_chat, since, since=True)
    return TurnSource(turns, handler_chat, chosen) if chosen is not None else None


def _active_chat_id(window: sublime.Window) -> int | None:
    chat = chats.get(window)
    return chat.chat_id if chat is not None else None
