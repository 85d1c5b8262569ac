"""Blocking file work for the agent's requests, off the chat's loop: at most
a few at once, each waited for a bounded time. A job that never returns (a
hung network drive) keeps its slot, not the editor: its thread is a daemon
(quitting does not wait for it) and later requests get a clear error once
they have waited as long, instead of queueing behind it for ever."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TypeVar

from ... import threads

T = TypeVar("T")

JOBS_AT_ONCE = 4
JOB_TIMEOUT = 10.0


class FileBusy(Exception):
    """A job did not finish, or could not start, within the time allowed."""


class FileJobs:
    def __init__(self, at_once: int = JOBS_AT_ONCE, timeout: float = JOB_TIMEOUT) -> None:
        self._at_once = at_once
        self.timeout = timeout
        self._slots: asyncio.Semaphore | None = None  # made on the loop that uses it

    async def run(self, work: Callable[[], T], what: str) -> T:
        """`work()` on a thread of its own; `FileBusy` (naming `what`) when it
        takes longer than the timeout, waiting for a slot included."""
        loop = asyncio.get_running_loop()
        if self._slots is None:
            self._slots = asyncio.Semaphore(self._at_once)
        slots = self._slots
        deadline = loop.time() + self.timeout
        try:
            await asyncio.wait_for(slots.acquire(), self.timeout)
        except TimeoutError:
            raise FileBusy(f"{what}: the editor's file work is busy (earlier reads or writes have not ended "
                           f"within {self.timeout:g} s)") from None
        done: asyncio.Future[T] = loop.create_future()

        def settle(outcome: Callable[[], None]) -> None:
            slots.release()
            if not done.done():
                outcome()

        def job() -> None:
            try:
                result = work()
            except BaseException as error:  # handed to the waiting request
                failure = error
                report(lambda: done.set_exception(failure))
            else:
                report(lambda: done.set_result(result))

        def report(outcome: Callable[[], None]) -> None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
                loop.call_soon_threadsafe(settle, outcome)

        threads.start("QwenCompanion file job", job)
        try:
            return await asyncio.wait_for(asyncio.shield(done), max(deadline - loop.time(), 0.0))
        except TimeoutError:
            done.cancel()  # what it ends with later goes nowhere
            raise FileBusy(f"{what}: not done within {self.timeout:g} s") from None
