"""The thread referee: a function a package marks for one thread that runs on
another fails the test.

Sublime does not know which thread a package's function is meant for; the
package says so with markers (QwenCompanion's ``core/threads.py``:
``@threads.on_main`` and the like) that ask a referee, when one is installed,
which of Sublime's threads is running. The simulator knows: its main thread
(``sublime-main``: events, ``set_timeout``, the user's commands) and its one
worker thread (``sublime-worker``: ``*_async`` events, ``set_timeout_async``).

A module of a loaded package that defines ``install_referee(referee)`` is
handed the host's referee once it is imported (before ``plugin_loaded``) and
``None`` when the host closes. The referee answers ``sublime_thread()``
("main", "worker" or None) and is told ``wrong_thread(function, wanted,
running)``; each such call is recorded (and echoed to stderr) and fails the
test when its host closes, like the watchdog's violations. ``take()`` returns
and forgets them (for tests of the referee itself).
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Literal

INSTALL = "install_referee"


@dataclass(frozen=True)
class WrongThread:
    function: str
    wanted: tuple[str, ...]
    running: str
    thread: str
    stack: str

    def __str__(self) -> str:
        return f"{self.function} is marked for {' or '.join(self.wanted)} but ran on {self.running} ({self.thread})\n{self.stack}"


class ThreadReferee:
    def __init__(self, is_main: Callable[[], bool], is_worker: Callable[[], bool]) -> None:
        self._is_main = is_main
        self._is_worker = is_worker
        self._lock = threading.Lock()
        self._wrong: list[WrongThread] = []
        self._modules: list[ModuleType] = []

    # ---------------------------------------------------- the package's side
    def sublime_thread(self) -> Literal["main", "worker"] | None:
        if self._is_main():
            return "main"
        if self._is_worker():
            return "worker"
        return None

    def wrong_thread(self, function: str, wanted: tuple[str, ...], running: str) -> None:
        stack = "".join(traceback.format_stack(sys._getframe(2), limit=10))
        wrong = WrongThread(function, wanted, running, threading.current_thread().name, stack)
        with self._lock:
            self._wrong.append(wrong)
        print(f"[sublime_sim] WRONG THREAD {wrong}", file=sys.stderr)

    # ------------------------------------------------------- the host's side
    def adopt(self, package: str) -> None:
        """Install this referee in the package's modules that take one."""
        for name, module in list(sys.modules.items()):
            if module is None or module in self._modules or not name.startswith(package + "."):
                continue
            install = getattr(module, INSTALL, None)
            if callable(install):
                install(self)
                self._modules.append(module)

    def release(self) -> None:
        """The host closes: no module of it asks this referee any more."""
        for module in self._modules:
            getattr(module, INSTALL)(None)
        self._modules.clear()

    def take(self) -> list[WrongThread]:
        with self._lock:
            taken, self._wrong = self._wrong, []
        return taken

    def check(self) -> None:
        """Raise if a marked function ran on the wrong thread (the host calls this when it closes)."""
        wrong = self.take()
        if wrong:
            raise AssertionError(
                f"{len(wrong)} call(s) of a function on a thread it is not marked for:\n\n"
                + "\n".join(str(w) for w in wrong[:5])
            )
