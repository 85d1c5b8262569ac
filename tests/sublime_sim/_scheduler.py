"""The two plugin threads: "main" (``set_timeout``) and "worker" (``*_async``).

Each is a thread draining a queue ordered by due time; callbacks due at the
same moment run in the order they were added, as the API reference promises.
Both loops share one condition so the host can tell atomically when the
whole simulation is idle.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ._watchdog import Watchdog


class Clock:
    """Monotonic time plus an offset the tests may push forward."""

    def __init__(self) -> None:
        self.offset = 0.0

    def now(self) -> float:
        return time.monotonic() + self.offset


def callback_name(fn: Callable[..., Any]) -> str:
    """What a callback is called in the watchdog's reports and the pending list:
    its qualified name, through any `functools.partial` around it and any
    wrapper of the simulator's own (which names what it wraps in
    `__wrapped__`, as `functools.wraps` does). Never ``repr()``, which for a
    partial holding a big argument (a 10 MB review) builds a string three
    times that size on the very thread it names."""
    wrapped, partial = fn, False
    while True:
        if isinstance(wrapped, functools.partial):
            wrapped, partial = wrapped.func, True
        elif callable(inner := getattr(wrapped, "__wrapped__", None)):
            wrapped = inner
        else:
            break
    name = getattr(wrapped, "__qualname__", None)
    if not isinstance(name, str):
        name = type(wrapped).__qualname__ + " instance"
    return f"partial({name})" if partial else name


@dataclass(order=True)
class _Task:
    due: float
    seq: int
    fn: Callable[[], Any] = field(compare=False)
    label: str = field(compare=False, default="")
    # Called instead of `fn` when the loop stops first (a caller waiting for it is told).
    dropped: Callable[[], None] | None = field(compare=False, default=None)


class Loop:
    """A thread running callbacks at their due time, one at a time."""

    def __init__(
        self,
        name: str,
        cond: threading.Condition,
        clock: Clock,
        on_error: Callable[[str, BaseException], None],
        owner: object = None,
        watchdog: Watchdog | None = None,
    ) -> None:
        self.name = name
        self._cond = cond
        self._clock = clock
        self._on_error = on_error
        self._heap: list[_Task] = []
        self._seq = itertools.count()
        self._stopping = False
        self.watchdog = watchdog or Watchdog(None)
        self.busy = False
        # Wall seconds spent in callbacks so far, each counted from when this
        # loop takes it off the queue (naming it included) to its end: what
        # the editor stalls for (read by the bench).
        self.run_seconds = 0.0
        self.thread = threading.Thread(target=self._run, name=f"sublime-{name}", daemon=True)
        self.thread.sim_app = owner  # type: ignore[attr-defined]  # see _runtime.app()

    def start(self) -> None:
        self.watchdog.watch(self.thread)
        self.thread.start()

    def is_current(self) -> bool:
        return threading.current_thread() is self.thread

    def post(self, fn: Callable[[], Any], delay_ms: float = 0, label: str = "") -> None:
        with self._cond:
            if self._stopping:
                return  # the plugin host is gone: callbacks are dropped
            self._push(fn, delay_ms, label)

    def _push(self, fn: Callable[[], Any], delay_ms: float, label: str,
              dropped: Callable[[], None] | None = None) -> None:
        """Queue `fn` (hold the lock)."""
        due = self._clock.now() + max(delay_ms, 0) / 1000.0
        heapq.heappush(self._heap, _Task(due, next(self._seq), fn, label, dropped))
        self._cond.notify_all()

    def call_and_wait(self, fn: Callable[[], Any], timeout: float = 30.0) -> Any:
        """Run ``fn`` on this loop and return its result or re-raise its error."""
        if self.is_current():
            return fn()
        done = threading.Event()
        box: dict[str, Any] = {}

        def task() -> None:
            try:
                box["value"] = fn()
            except BaseException as exc:  # handed back to the caller, not logged
                box["error"] = exc
            finally:
                done.set()

        def abandoned() -> None:  # the loop stopped before running it: the caller is told at once
            box["error"] = RuntimeError(f"the {self.name} thread stopped before running the call")
            done.set()

        with self._cond:  # checked and queued at once: a stop in between would leave the caller waiting
            if self._stopping or not self.thread.is_alive():
                raise RuntimeError(f"the {self.name} thread is not running")
            self._push(task, 0, f"call_and_wait {callback_name(fn)}", abandoned)
        with self.watchdog.internal():  # the caller waits, as Sublime blocks it
            finished = done.wait(timeout)
        if not finished:
            raise TimeoutError(f"{self.name} thread did not run the call within {timeout}s")
        if "error" in box:
            raise box["error"]
        return box.get("value")

    def due_within(self, horizon_s: float) -> bool:
        """True if busy or a callback is due within ``horizon_s`` (hold the lock)."""
        return self.busy or bool(self._heap and self._heap[0].due <= self._clock.now() + horizon_s)

    def pending(self) -> list[str]:
        now = self._clock.now()
        return [f"{t.label or callback_name(t.fn)} in {max(t.due - now, 0) * 1000:.0f} ms" for t in sorted(self._heap)]

    def clear(self) -> None:
        """Drop every pending callback (the API shutting down)."""
        self._drop_pending()

    def _drop_pending(self) -> None:
        with self._cond:
            tasks, self._heap = self._heap, []
            self._cond.notify_all()
        for task in tasks:
            if task.dropped is not None:
                task.dropped()

    def stop(self, timeout: float = 10.0) -> None:
        """Drop pending callbacks and wait for the running one to finish."""
        with self._cond:
            self._stopping = True
        self._drop_pending()
        if self.thread.is_alive() and not self.is_current():
            self.thread.join(timeout)
            if self.thread.is_alive():
                print(f"[sublime_sim] the {self.name} thread is still busy after {timeout}s", file=sys.stderr)

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._stopping:
                        return
                    now = self._clock.now()
                    if self._heap and self._heap[0].due <= now:
                        task = heapq.heappop(self._heap)
                        taken = time.perf_counter()
                        self.busy = True
                        break
                    wait = None if not self._heap else self._heap[0].due - now
                    # Bounded wait so a clock offset change is noticed promptly.
                    self._cond.wait(0.05 if wait is None else min(wait, 0.05))
            try:
                with self.watchdog.callback(task.label or callback_name(task.fn)):
                    task.fn()
            except BaseException as exc:
                self._on_error(f"{self.name} callback {task.label or callback_name(task.fn)}", exc)
            finally:
                del task  # a callback run is released, with whatever its closure holds
                with self._cond:
                    self.run_seconds += time.perf_counter() - taken
                    self.busy = False
                    self._cond.notify_all()
