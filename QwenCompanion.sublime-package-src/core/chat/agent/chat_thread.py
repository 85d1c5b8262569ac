"""The chat's asyncio thread: every window's chat runs its agents on it;
and `soon`/`soon_reported`, which make a coroutine method of a chat's core
one that any thread may call: it runs on this thread and the caller gets a
Future at once."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Concatenate, Protocol

from ... import threads
from ...loop_thread import LoopThread

if TYPE_CHECKING:  # the protocol's module needs acp, which start-up must not load
    from .transport import AgentTransport

log = logging.getLogger(__name__)

DRAIN_SECONDS = 10.0  # killed agents are reaped within STOP_GRACE_SECONDS; cancelled tasks end at once


class ChatThread(LoopThread):
    """The chat's asyncio thread. Stopping it first ends what still runs on
    it (turns waiting for an agent, pipes of killed agents)."""

    def __init__(self) -> None:
        super().__init__(threads.CHAT_LOOP)
        self.bridges: list[AgentTransport] = []
        # Set (any thread) once stopping begins: from then on no agent starts here
        # (`AgentConnection.ready` refuses), so none can outlive the package or its loop.
        self.closing = False

    def stop(self, timeout: float = 5.0) -> None:
        self.closing = True
        if self.alive:
            try:
                self.run(self._drain(), timeout)
            except Exception:
                log.debug("the chat thread did not drain", exc_info=True)
        super().stop(timeout)

    async def _drain(self) -> None:
        for bridge in self.bridges:
            bridge.kill()
        await asyncio.gather(*(bridge.reap() for bridge in self.bridges))
        current = asyncio.current_task()
        tasks = [task for task in asyncio.all_tasks() if task is not current]
        for task in tasks:
            task.cancel()
        if tasks:  # bounded: a task that ignores its cancellation must not keep the thread
            done, pending = await asyncio.wait(tasks, timeout=DRAIN_SECONDS)
            for task in done:
                if not task.cancelled():
                    task.exception()  # ended with the chat: nobody is left to read it
            if pending:
                log.warning("%d task(s) of the chat did not end within %g s", len(pending), DRAIN_SECONDS)
        for bridge in self.bridges:
            bridge.release()
        self.bridges.clear()

    def stop_soon(self) -> None:
        """As `stop`, without waiting: the loop drains, then stops itself."""
        self.closing = True
        if not self.alive:
            return

        async def drain_and_stop() -> None:
            try:
                await self._drain()
            finally:
                asyncio.get_running_loop().stop()  # never left running when the package is gone

        self.spawn(drain_and_stop(), "ending the chat's work")


class OnChatThread(Protocol):
    """A piece of a chat's core: the thread its work runs on, and how a
    failure of that work is said in the chat."""

    thread: ChatThread

    def reported(self, work: Coroutine[Any, Any, None]) -> Coroutine[Any, Any, None]:
        """`work`, its AgentError said in the chat and the chat's state shown after."""
        ...


def soon[S: OnChatThread, **P, T](
    method: Callable[Concatenate[S, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[S, P], Future[T]]:
    """`method` run on the chat's thread; its result or error goes to the Future."""

    def submit(self: S, /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        return self.thread.submit(method(self, *args, **kwargs))

    functools.update_wrapper(submit, method)
    return submit


def soon_reported[S: OnChatThread, **P](
    method: Callable[Concatenate[S, P], Coroutine[Any, Any, None]],
) -> Callable[Concatenate[S, P], Future[None]]:
    """`method` run on the chat's thread; its AgentError is said in the chat."""

    def submit(self: S, /, *args: P.args, **kwargs: P.kwargs) -> Future[None]:
        return self.thread.submit(self.reported(method(self, *args, **kwargs)))

    functools.update_wrapper(submit, method)
    return submit
