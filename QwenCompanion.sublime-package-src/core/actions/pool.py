"""Which actions run: one per window (a new one cancels the window's running
or waiting one), at most `max_running` across windows, the rest waiting in
the order they came."""

from __future__ import annotations

import threading
from typing import Protocol


class Job(Protocol):
    def start(self) -> None: ...

    def cancel(self) -> None: ...


class ActionPool:
    def __init__(self, max_running: int) -> None:
        self.max_running = max(1, max_running)
        self._lock = threading.Lock()
        self._running: dict[int, Job] = {}  # window id -> its running job
        self._waiting: list[tuple[int, Job]] = []

    def submit(self, window_id: int, job: Job) -> bool:
        """Run `job` for the window, cancelling the window's previous one;
        True if it started, False if it waits for a free place."""
        with self._lock:
            previous = self._running.pop(window_id, None)
            waiting = [j for w, j in self._waiting if w == window_id]
            self._waiting = [(w, j) for w, j in self._waiting if w != window_id]
            starts = len(self._running) < self.max_running
            if starts:
                self._running[window_id] = job
            else:
                self._waiting.append((window_id, job))
        for cancelled in ([previous] if previous is not None else []) + waiting:
            cancelled.cancel()
        if starts:
            job.start()
        return starts

    def finished(self, window_id: int, job: Job) -> None:
        """`job` ended (any outcome): its place goes to the next waiting job."""
        with self._lock:
            if self._running.get(window_id) is job:
                del self._running[window_id]
            else:
                self._waiting = [(w, j) for w, j in self._waiting if j is not job]
            follow: list[Job] = []
            while self._waiting and len(self._running) < self.max_running:
                next_window, next_job = self._waiting.pop(0)
                self._running[next_window] = next_job
                follow.append(next_job)
        for next_job in follow:
            next_job.start()

    def cancel(self, window_id: int) -> bool:
        """Cancel the window's running or waiting job; False if it had none."""
        with self._lock:
            job = self._running.get(window_id) or next((j for w, j in self._waiting if w == window_id), None)
        if job is None:
            return False
        job.cancel()
        return True

    def running(self, window_id: int) -> Job | None:
        with self._lock:
            return self._running.get(window_id)

    def waiting(self) -> int:
        with self._lock:
            return len(self._waiting)
