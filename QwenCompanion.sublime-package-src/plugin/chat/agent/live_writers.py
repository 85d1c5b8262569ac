"""One writer on a session at a time, across the chat and qwen's terminal:
the registry of running qwen processes is read on a thread of ours
(core/chat/history/live_sessions.py), and the command goes on, on the main thread,
as part of the user's command, only when no live terminal holds the session."""

from __future__ import annotations

import contextvars
import os
from collections.abc import Callable
from concurrent.futures import Future

from ....core.chat.history.live_sessions import SessionHeld, held_message, terminal_holders
from ....core.cli.qwen_home import qwen_home
from ....core.companion.lockfile import pid_alive
from ...background import in_background, when_done


def _holders_message(session_id: str, cwd: str | None) -> str | None:
    holders = terminal_holders(qwen_home(os.environ, cwd=cwd or None), session_id, pid_alive)
    return held_message(holders) if holders else None


def held_by_terminal(session_id: str) -> str | None:
    """Why a chat does not open `session_id` (a live qwen terminal holds it), or
    None; for the chat's own thread, which reads the registry itself."""
    return _holders_message(session_id, None)


def unless_held[T](session_id: str, cwd: str | None, then: Callable[[], T]) -> Future[T]:
    """`then()` on the main thread once no live qwen terminal holds
    `session_id`; else the future fails with `SessionHeld` (its message says why)."""
    command = contextvars.copy_context()  # `then` goes on with the user's command
    checked: Future[str | None] = Future()
    result: Future[T] = Future()

    def check() -> None:
        try:
            checked.set_result(_holders_message(session_id, cwd))
        except Exception as error:
            checked.set_exception(error)
            raise

    def go_on(done: Future[str | None]) -> None:
        message = done.result() if done.exception() is None else None  # an unreadable registry holds nothing
        if message is not None:
            result.set_exception(SessionHeld(message))
            return
        try:
            result.set_result(then())
        except Exception as error:
            result.set_exception(error)
            raise

    when_done(checked, lambda done: command.run(go_on, done))
    in_background(check, "live sessions")
    return result
