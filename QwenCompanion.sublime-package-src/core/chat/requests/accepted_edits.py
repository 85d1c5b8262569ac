"""Texts the user edited and accepted in the review of an agent's edit request.

The agent writes the file itself after the permission (`fs/write_text_file`);
that write gets the user's text instead of the agent's. A text belongs to the
tool call that asked: it is taken once, by a write of its file, and it goes
when that call or its turn ends, so a write that never comes leaves nothing
for a later one to take. A text accepted after its call or turn ended is not
kept at all (the user may answer a prompt the agent stopped waiting for).
"""

from __future__ import annotations

import threading


class AcceptedEdits:
    """Every method may be called from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._texts: dict[str, tuple[str, str]] = {}  # tool call id -> (real path, text)
        self._ended: set[str] = set()  # the running turn's tool calls that ended
        self._turn = 0

    @property
    def turn(self) -> int:
        """The running turn; a prompt remembers the turn it was asked in."""
        with self._lock:
            return self._turn

    def keep(self, tool_call_id: str, path: str, text: str, turn: int) -> bool:
        """Keep `text` for the write of `path` by the call `tool_call_id`, asked
        in `turn`, unless that call or turn already ended."""
        with self._lock:
            if turn != self._turn or tool_call_id in self._ended:
                return False
            self._texts[tool_call_id] = (path, text)
            return True

    def take(self, path: str) -> str | None:
        """The text kept for a write of `path`, once."""
        with self._lock:
            call = next((call for call, (kept, _) in self._texts.items() if kept == path), None)
            return self._texts.pop(call)[1] if call is not None else None

    def call_ended(self, tool_call_id: str) -> None:
        """The call completed or failed: its text, never written, goes."""
        with self._lock:
            self._texts.pop(tool_call_id, None)
            self._ended.add(tool_call_id)

    def turn_ended(self) -> None:
        """No tool call outlives its turn."""
        with self._lock:
            self._texts.clear()
            self._ended.clear()
            self._turn += 1
