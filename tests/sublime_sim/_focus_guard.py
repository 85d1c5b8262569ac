"""Focus only by the user: who moved the keys or the active group.

In Sublime only the user decides where they type. A plugin may move the keys
while it runs a command the user gave (a key, a menu, the palette, a quick
panel pick) and in that command's own continuation; anything else (a timer,
a listener woken by an agent's edit, a reply arriving on a thread) that
focuses a view, a sheet, a group or a window takes the keys from under the
user's fingers. The host fails the test at close, like the watchdog.

What counts as the user:
- the test's own thread (the driver, a person at the keyboard), and what it
  runs on the main thread (``User`` actions, ``host.run_on_main``,
  ``window.run_command`` from the test); loading and unloading packages is
  Sublime's doing, not the user's;
- a quick panel answer the test scripted (``answers.quick_panel``);
- a continuation: a ``sublime.set_timeout`` (or ``set_timeout_async``)
  callback posted *directly* by a user action (the command goes on once
  the thread is free).
  A continuation's own timers are not the user any more (a polling loop a
  command started is the agent's, not the user's);
- the one explicit way for a command to go on after work off the main thread
  (an import, a file read): it captures ``contextvars.copy_context()`` while
  it runs for the user and later runs its continuation with ``context.run``
  on the main thread. Plain Python, the same in Sublime, and easy to grep.
Nothing on the worker thread or a plugin's own thread is the user.

When the view (or the empty group) that had the keys closes, Sublime must
give them to another: that move takes nothing from the user.

A plugin may show a tab without taking the keys (`new_file` then focusing the
user's view again): a move is only a violation if the keys do not come back
to where they were; the focused view moving to another group takes the keys
along and moves nothing.
"""

from __future__ import annotations

import contextvars
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

Keys = tuple[int, int, int]  # active window, its active group, the focused view


def _same_place(now: Keys, then: Keys) -> bool:
    """The keys are where they were: in the same view of the same window (even
    if that view moved to another group, the keys going with it), or in the same
    group that had no view to type in (Sublime gives a new tab of the active
    group the keys, and there was nothing to take)."""
    if now[0] != then[0]:
        return False
    if then[2]:
        return now[2] == then[2]
    return now[1] == then[1]


@dataclass(frozen=True)
class FocusViolation:
    what: str
    stack: str

    def __str__(self) -> str:
        return f"{self.what}\n{self.stack}"


class FocusGuard:
    def __init__(self, is_loop_thread: Callable[[], bool], still_there: Callable[[Keys], bool]) -> None:
        self.driver = threading.current_thread()  # the test's thread: the user
        self._is_loop_thread = is_loop_thread
        self._still_there = still_there  # is the view (or, with none, the group) that had the keys still open?
        # "user" in a user action (and a context copied from one), "continuation"
        # in a timer it posted; carried by `contextvars` like a command's own state.
        self._acting: contextvars.ContextVar[str | None] = contextvars.ContextVar("acting_for", default=None)
        self._lock = threading.Lock()
        self._violations: list[FocusViolation] = []
        self._pending: list[FocusViolation] = []  # moves not by the user, until the keys come back
        self._baseline: Keys | None = None  # where the keys were before the first of them

    def on_driver(self) -> bool:
        return threading.current_thread() is self.driver

    def by_user(self) -> bool:
        """Does the code running now act for the user (see module doc)?"""
        if self.on_driver():
            return True
        return self._is_loop_thread() and self._acting.get() is not None

    def in_user_action(self) -> bool:
        """A user action proper (not a continuation): its timers continue it."""
        return self.on_driver() or (self._is_loop_thread() and self._acting.get() == "user")

    @contextmanager
    def user_action(self) -> Iterator[None]:
        token = self._acting.set("user")
        try:
            yield
        finally:
            self._acting.reset(token)

    def as_user(self, fn: Callable[[], object]) -> Callable[[], object]:
        """`fn` wrapped to run as a user action on the main thread."""

        def run() -> object:
            with self.user_action():
                return fn()

        run.__wrapped__ = fn  # type: ignore[attr-defined]  # the scheduler names the callback, not this wrapper
        return run

    def as_continuation(self, fn: Callable[[], object]) -> Callable[[], object]:
        """`fn` (a timer a user action posted) wrapped to run as that action's continuation."""

        def run() -> object:
            token = self._acting.set("continuation")
            try:
                return fn()
            finally:
                self._acting.reset(token)

        run.__wrapped__ = fn  # type: ignore[attr-defined]  # the scheduler names the callback, not this wrapper
        return run

    def moved(self, what: str, before: Keys, after: Keys) -> None:
        """The keys (window, active group, focused view) went from `before` to
        `after`. The user may; anything else may only give them back: a move
        is a violation unless the keys return to where they were before the
        first move not made by the user (bringing a new tab to the front and
        focusing the user's view again is how Sublime shows a tab without
        taking the keys)."""
        if _same_place(after, before):
            return
        if not self._still_there(before):
            return  # the view or group with the keys closed: Sublime gives them to another, taking nothing
        with self._lock:
            if self.by_user():
                self._commit()  # the user moved the keys: what was taken before stays taken
                return
            if self._baseline is None:
                self._baseline = before
            stack = "".join(traceback.format_stack(limit=14)[:-2])
            self._pending.append(FocusViolation(f"{threading.current_thread().name}: {what}", stack))
            if _same_place(after, self._baseline):
                self._baseline, self._pending = None, []  # the keys are back where the user left them

    def _commit(self) -> None:
        self._violations.extend(self._pending)
        self._baseline, self._pending = None, []

    def take(self) -> list[FocusViolation]:
        with self._lock:
            self._commit()
            taken, self._violations = self._violations, []
        return taken

    def check(self) -> None:
        """Raise if anything but the user moved the keys (the host calls this when it closes)."""
        violations = self.take()
        if violations:
            raise AssertionError(
                f"{len(violations)} focus change(s) not made by the user (only the user moves the keys):\n\n"
                + "\n".join(str(v) for v in violations[:5])
            )
