"""A daemon thread that runs one asyncio loop, for work handed to it from
any thread: Sublime's threads never run asyncio code, and they wait for an
answer only with a timeout (or not at all). What the loop hands to a thread
(`asyncio.to_thread`, `run_in_executor(None, ...)`) runs on a pool of ours
named after the loop.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

from . import threads
from .cli.processes import close_left_on

T = TypeVar("T")
log = logging.getLogger(__name__)
CALL_TIMEOUT = 10.0
UNWIND_TURNS = 3
UNWIND_SECONDS = 5.0


class LoopThread:
    """A daemon thread running one asyncio loop (the servers', the chat's, the
    quick actions')."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Start the thread and return at once: work submitted before its loop
        runs waits in the loop's queue (the caller may be Sublime's main thread)."""
        if self.alive:
            return
        loop = asyncio.new_event_loop()
        loop.set_default_executor(threads.pool(f"{self._name} blocking"))

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.run_forever()
            _finish_tasks(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

        self._loop = loop
        self._thread = threads.start(self._name, run, place=self._name)

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> Future[T]:
        if self._loop is None or not self.alive:
            coroutine.close()
            raise RuntimeError(f"the thread {self._name!r} is not running")
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    def spawn(self, coroutine: Coroutine[Any, Any, object], doing: str) -> None:
        """Run `coroutine` on the loop without waiting for it. Nobody reads its
        result, so a failure is logged, saying what it was `doing`: a user's
        Esc that fails must not fail in silence."""
        self.submit(coroutine).add_done_callback(lambda done: _log_failure(done, doing))

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float = CALL_TIMEOUT) -> T:
        """Run a coroutine on the loop and wait for its result (never call from the loop)."""
        return self.submit(coroutine).result(timeout)

    def call_soon(self, callback: Callable[..., object], *args: object) -> None:
        if self._loop is not None and self.alive:
            self._loop.call_soon_threadsafe(callback, *args)

    def stop(self, timeout: float = 5.0) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        if thread.is_alive():
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout)
        self._loop = self._thread = None

    def stop_soon(self) -> None:
        """Stop the loop without waiting: the thread ends what still runs and
        closes the loop by itself (for Sublime's main thread, which never waits)."""
        loop, self._loop, self._thread = self._loop, None, None
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(loop.stop)


def _log_failure(done: Future[object], doing: str) -> None:
    if not done.cancelled() and (error := done.exception()) is not None:
        log.error("%s failed: %s", doing, error, exc_info=error)


def _finish_tasks(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what is still running (a client's open connection) and let it unwind.

    A task left pending when the loop closes is destroyed later by the garbage
    collector, mid-way through whatever runs then, with a "Task was destroyed"
    error; `asyncio.run` ends its loops the same way.
    """
    tasks = asyncio.all_tasks(loop)
    for task in tasks:
        task.cancel()
    if tasks:  # bounded: a task that ignores its cancellation must not keep the thread
        done, _ = loop.run_until_complete(asyncio.wait(tasks, timeout=UNWIND_SECONDS))
        for task in done:
            if not task.cancelled():
                task.exception()  # ended with the loop: nobody is left to read it
    close_left_on(loop)  # a process whose owner let go of it without closing it
    # A transport closed while unwinding lets go of its socket on a later
    # turn of the loop; closed before that, it is "unclosed" when collected.
    for _ in range(UNWIND_TURNS):
        loop.run_until_complete(asyncio.sleep(0))
