"""Work that may wait (on a Future, a process, a socket, a thread) runs on a
thread of our own: Sublime's main thread draws the editor, and its one worker
thread (`set_timeout_async`) is shared by every package, so neither may wait."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from concurrent.futures import Future

import sublime

from ..core import threads


def in_background(work: Callable[[], object], name: str) -> threading.Thread:
    """Run `work` now on a new daemon thread called "QwenCompanion `name`"; failures are logged."""
    return threads.start(threads.PREFIX + name, work)


def when_done[T](future: Future[T], then: Callable[[Future[T]], None]) -> None:
    """Call `then(future)` on the main thread once `future` has finished, in
    the caller's context: a user's command goes on as the user's (its new tab
    may come to the front) whether the work ended before or after it returned."""
    context = contextvars.copy_context()
    future.add_done_callback(lambda done: sublime.set_timeout(lambda: context.run(then, done)))
