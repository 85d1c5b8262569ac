"""Which thread runs what, said in the code: markers naming the thread a
function must run on, and the one place the package starts its threads.

Sublime has two threads of its own: the main thread (events, `set_timeout`,
commands the user runs), which draws the editor, and ONE worker thread
(`set_timeout_async`, `*_async` events) shared by every package. Neither may
wait. The package's own threads are its asyncio loops (`LoopThread`: the
servers', the chat's, the quick actions') and the threads `start` runs work
that may wait on.

A marker costs one global look-up per call unless a referee is installed:
nobody installs one in Sublime. A test host that knows Sublime's threads (the
simulator) hands one to `install_referee`; a marked function then running on
another thread is reported to it (and fails that test run).
"""

from __future__ import annotations

import functools
import inspect
import logging
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Literal, ParamSpec, Protocol, TypeVar, cast

log = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

PREFIX = "QwenCompanion "  # every thread of ours: its name says whose it is in a dump (Diagnose, faulthandler)
MAIN = "Sublime's main thread"
WORKER = "Sublime's worker thread"
CHAT_LOOP = "QwenCompanion chat"
SERVER_LOOP = "QwenCompanion server"
ACTIONS_LOOP = "QwenCompanion actions"
OURS = "a thread of ours"  # `start`'s and the pools': free to wait
FOREIGN = "a thread neither Sublime's nor ours"

SublimeThread = Literal["main", "worker"]


class Referee(Protocol):
    """What a test host knows and is told (see the module doc)."""

    def sublime_thread(self) -> SublimeThread | None:
        """"main" or "worker" on Sublime's threads, else None."""

    def wrong_thread(self, function: str, wanted: tuple[str, ...], running: str) -> None:
        """`function`, marked for one of `wanted`, runs on `running`."""


_referee: Referee | None = None
_place = threading.local()  # .name: the place a thread started here is (a loop's name, or OURS)


def install_referee(referee: Referee | None) -> None:
    """Check every marked call from now on with `referee` (None: stop checking)."""
    global _referee
    _referee = referee


def current_place(referee: Referee) -> str:
    sublime = referee.sublime_thread()
    if sublime == "main":
        return MAIN
    if sublime == "worker":
        return WORKER
    return getattr(_place, "name", FOREIGN)


def runs_on(*wanted: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Mark a function for one of the places `wanted` (MAIN, WORKER, a loop's name, OURS)."""

    def mark(function: Callable[P, R]) -> Callable[P, R]:
        if inspect.iscoroutinefunction(function):
            return cast("Callable[P, R]", _mark_coroutine(function, wanted))

        @functools.wraps(function)
        def checked(*args: P.args, **kwargs: P.kwargs) -> R:
            referee = _referee
            if referee is not None:
                _check(referee, function, wanted)
            return function(*args, **kwargs)

        return checked

    return mark


def _mark_coroutine[**P, T](function: Callable[P, Awaitable[T]], wanted: tuple[str, ...]) -> Callable[P, Awaitable[T]]:
    """Checked where it runs, not where it is made: a coroutine is often made
    on one thread and handed to a loop's."""

    @functools.wraps(function)
    async def checked(*args: P.args, **kwargs: P.kwargs) -> T:
        referee = _referee
        if referee is not None:
            _check(referee, function, wanted)
        return await function(*args, **kwargs)

    return checked


def _check(referee: Referee, function: Callable[..., object], wanted: tuple[str, ...]) -> None:
    running = current_place(referee)
    if running in wanted or (OURS in wanted and running not in (MAIN, WORKER)):
        return
    referee.wrong_thread(f"{function.__module__}.{function.__qualname__}", wanted, running)


# Sublime's main thread: the editor's views, regions and panels change here.
on_main = runs_on(MAIN)
# Sublime's one worker thread, shared by every package: never waits either.
on_worker = runs_on(WORKER)
on_chat_loop = runs_on(CHAT_LOOP)
on_server_loop = runs_on(SERVER_LOOP)
# Waits (a process, the disk, the network, another thread): any thread of
# ours, never Sublime's two (a test's own thread counts as ours).
may_block = runs_on(OURS)


def start(name: str, work: Callable[[], object], place: str = OURS) -> threading.Thread:
    """Run `work` now on a new daemon thread called `name` (it begins with
    PREFIX and says what the thread does); failures are logged."""
    if not name.startswith(PREFIX) or name == PREFIX:
        raise ValueError(f"a thread of ours is named {PREFIX!r} and what it does, not {name!r}")

    def run() -> None:
        _place.name = place
        try:
            work()
        except Exception:
            log.exception("%s failed", name)

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return thread


def timer(name: str, seconds: float, then: Callable[[], object]) -> threading.Timer:
    """Run `then` after `seconds` on a thread called `name` unless cancelled first (a deadline)."""
    if not name.startswith(PREFIX) or name == PREFIX:
        raise ValueError(f"a timer of ours is named {PREFIX!r} and what it does, not {name!r}")

    def run() -> None:
        _place.name = OURS
        then()

    deadline = threading.Timer(seconds, run)
    deadline.name = name
    deadline.start()
    return deadline


def pool(name: str, workers: int | None = None) -> ThreadPoolExecutor:
    """A pool of `workers` threads (by default as many as `ThreadPoolExecutor`
    makes) called `name` and their number, for work that waits."""
    if not name.startswith(PREFIX) or name == PREFIX:
        raise ValueError(f"a pool of ours is named {PREFIX!r} and what it does, not {name!r}")

    def enter() -> None:
        _place.name = OURS

    return ThreadPoolExecutor(workers, thread_name_prefix=name, initializer=enter)
