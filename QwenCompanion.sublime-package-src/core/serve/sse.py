"""Server-sent events, parsed with bounded memory.

The daemon is another process on the machine: a line longer than
`max_line_bytes` is not buffered but skipped to its end, and the event it
belonged to (or an event whose data lines together pass that size) is
handed over as `oversized` (its `id:` still counts, so the
stream's cursor moves past it and a reconnect does not fetch it again).
"""

from __future__ import annotations

from dataclasses import dataclass

# As large as the biggest message the stdio transport accepts from the agent.
MAX_LINE_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class SseEvent:
    event: str
    data: str
    id: int | None
    oversized: bool = False


class SseParser:
    def __init__(self, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        self.max_line_bytes = max_line_bytes
        self._line = bytearray()
        self._skipping = False  # inside a line too long to keep
        self._event = ""
        self._data: list[str] = []
        self._id: int | None = None
        self._oversized = False
        self._data_bytes = 0  # of the event being read: many data lines are bounded together

    def feed(self, chunk: bytes) -> list[SseEvent]:
        events: list[SseEvent] = []
        start = 0
        while start < len(chunk):
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if not self._skipping:
                if len(self._line) + len(piece) > self.max_line_bytes:
                    self._skipping = True
                    self._oversized = True
                    self._line.clear()
                else:
                    self._line += piece
            if end < 0:
                break
            start = end + 1
            if self._skipping:
                self._skipping = False
                continue
            line = bytes(self._line).rstrip(b"\r").decode("utf-8", "replace")
            self._line.clear()
            event = self._line_done(line)
            if event is not None:
                events.append(event)
        return events

    def _line_done(self, line: str) -> SseEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None  # a comment (keep-alive)
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._event = value
        elif name == "data" and not self._oversized:
            self._data_bytes += len(value) + 1
            if self._data_bytes > self.max_line_bytes:
                self._oversized = True
                self._data = []
            else:
                self._data.append(value)
        elif name == "id" and value.isdigit():
            self._id = int(value)
        return None

    def _dispatch(self) -> SseEvent | None:
        if not self._data and not self._oversized:
            self._event = ""
            return None
        event = SseEvent(self._event or "message", "\n".join(self._data), self._id, self._oversized)
        self._event, self._data, self._id, self._oversized, self._data_bytes = "", [], None, False, 0
        return event
