"""Worktree commands' git, off the main thread: the one function that runs
it on a thread of ours and tells a refusal."""

from __future__ import annotations

import contextvars
from collections.abc import Callable

import sublime

from ....core.worktrees.worktrees import WorktreeRefused
from ...background import in_background
from ..window_chats import chats


def refused(window: sublime.Window, message: str) -> None:
    chats.tell("worktree_refused", {"window": window.id(), "message": message})
    sublime.error_message(f"Qwen Code: no worktree was made or changed.\n\n{message}")

def git_then[T](window: sublime.Window, work: Callable[[], T], then: Callable[[T], None]) -> None:
    """`work` (git, which waits for a process) on a thread of ours, then `then`
    with its result on the main thread as part of the user's command; a
    refusal is told instead."""
    command = contextvars.copy_context()

    def go() -> None:
        try:
            result = work()
        except WorktreeRefused as problem:
            message = str(problem)
            sublime.set_timeout(lambda: refused(window, message))
            return
        sublime.set_timeout(lambda: command.run(then, result))

    in_background(go, "worktree")
