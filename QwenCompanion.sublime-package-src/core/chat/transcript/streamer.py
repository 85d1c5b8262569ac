"""Batches streamed text off the main thread: chunks are collected and
handed to the view as a few edits about every `interval` seconds, or at once
when a paragraph ends, instead of one view edit per chunk."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ... import threads
from .transcript import Edit, Transcript

FLUSH_INTERVAL = 0.05
PARAGRAPH_END = "\n\n"

Sink = Callable[[list[Edit]], None]


class BlockStreamer:
    """Writes to a `Transcript` and passes the resulting edits to `sink`
    (which must only schedule the view update; it is called on the
    streamer's thread). Appends are buffered; `upsert` and `clear` flush the
    buffer first so the view sees every change in order."""

    def __init__(self, transcript: Transcript, sink: Sink, interval: float = FLUSH_INTERVAL) -> None:
        self.transcript = transcript
        self._sink = sink
        self._interval = interval
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._pending: list[tuple[str, list[str]]] = []  # (block id, its pieces): joined once, when taken
        self._due = False
        self._closed = False
        self._thread = threads.start("QwenCompanion chat streamer", self._run)

    def append(self, block_id: str, text: str) -> None:
        if not text:
            return
        with self._lock:
            was_empty = not self._pending
            if self._pending and self._pending[-1][0] == block_id:
                self._pending[-1][1].append(text)
            else:
                self._pending.append((block_id, [text]))
            if PARAGRAPH_END in text:
                self._due = True
            if was_empty or self._due:
                self._wake.notify()

    def upsert(self, block_id: str, text: str) -> None:
        with self._lock:
            edits = self._take()
            edits.append(self.transcript.upsert(block_id, text))
            self._sink(edits)

    def clear(self) -> None:
        with self._lock:
            self._pending.clear()
            self._sink([self.transcript.clear()])

    def truncate(self, block_id: str) -> None:
        """Drop the block and all after it (what is buffered is written first)."""
        with self._lock:
            edits = self._take()
            edits.append(self.transcript.truncate(block_id))
            self._sink(edits)

    def flush(self) -> None:
        with self._lock:
            edits = self._take()
            if edits:
                self._sink(edits)

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold off every change (and sink call) while the caller reads the transcript."""
        with self._lock:
            yield

    def close(self) -> None:
        self.flush()
        with self._lock:
            self._closed = True
            self._wake.notify()

    def _take(self) -> list[Edit]:
        # Holding the lock: the transcript and the sink see edits in order.
        pending, self._pending, self._due = self._pending, [], False
        return [self.transcript.append(block_id, "".join(pieces)) for block_id, pieces in pending]

    def _run(self) -> None:
        with self._lock:
            while not self._closed:
                if not self._pending:
                    self._wake.wait()  # until the first chunk (or close)
                if self._pending and not self._due:
                    self._wake.wait(self._interval)  # more chunks join the batch
                edits = self._take()
                if edits:
                    self._sink(edits)
