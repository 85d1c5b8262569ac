"""The agent's file reads and writes through the user's buffers: waiting
for the main thread, and finding a file's open view (the writes themselves
are plugin/view_writes.py's)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable

import sublime


async def on_main[T](work: Callable[[], T]) -> T:
    """Run `work` on Sublime's main thread and wait for its result (asyncio thread)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def run() -> None:
        try:
            result = work()
        except BaseException as error:  # handed to the waiting coroutine
            loop.call_soon_threadsafe(_fail, future, error)
        else:
            loop.call_soon_threadsafe(_resolve, future, result)

    sublime.set_timeout(run)
    return await future


def _resolve[T](future: asyncio.Future[T], result: T) -> None:
    if not future.done():
        future.set_result(result)


def _fail[T](future: asyncio.Future[T], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)


def open_view(window: sublime.Window, real_path: str) -> sublime.View | None:
    """The window's view of the file at `real_path` (already resolved), if open."""
    if not window.is_valid():
        return None
    for view in window.views():
        name = view.file_name()
        if name and os.path.realpath(name) == real_path:
            return view
    return None


def open_paths(window: sublime.Window) -> list[str]:
    return [name for view in window.views() if (name := view.file_name())] if window.is_valid() else []
