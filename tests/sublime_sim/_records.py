"""What the simulation records for tests to assert on, and dialog answers."""

from __future__ import annotations

import pickle
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any


@dataclass
class ErrorRecord:
    """An exception Sublime would have printed to its console."""

    where: str
    exception: BaseException
    traceback: str
    thread: str

    def __str__(self) -> str:
        return f"[{self.thread}] {self.where}:\n{self.traceback}"


@dataclass
class DialogRecord:
    kind: str  # "error", "message", "ok_cancel", "yes_no_cancel", "save", "open", "select_folder", "font"
    message: str
    answer: Any = None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class CommandRecord:
    """A command run through any ``run_command``; ``handled`` is False for no-ops.

    The arguments are kept packed (bytes): Sublime holds a command's arguments
    in its own process, not as Python objects of the plugin host, so the log
    adds no containers for the host's garbage collector to walk. Each read of
    ``args`` is a fresh copy."""

    target: str  # "text", "window" or "application"
    target_id: int
    name: str
    packed_args: bytes
    handled: bool
    handler: str  # "plugin", "builtin" or "" when nothing ran it

    @staticmethod
    def pack(args: dict[str, Any] | None) -> bytes:
        return pickle.dumps(args, pickle.HIGHEST_PROTOCOL)

    @property
    def args(self) -> dict[str, Any] | None:
        value: dict[str, Any] | None = pickle.loads(self.packed_args)
        return value


class DialogAnswers:
    """What the simulated user answers to dialogs.

    Set the defaults (``ok_cancel``, ``yes_no_cancel``, ``save_path``, ...) or
    queue one-off answers with :meth:`push`; a queued answer for a kind is used
    (and consumed) before the default.
    """

    def __init__(self) -> None:
        self.ok_cancel: bool = True
        self.yes_no_cancel: int = 0  # DialogResult.CANCEL: nothing is lost by default
        self.save_path: str | None = None  # None: the save dialog is cancelled
        self.open_paths: str | list[str] | None = None
        self.folder_paths: str | list[str] | None = None
        self.font: dict[str, Any] | None = None
        self.quick_panel: Any = None  # None: wait for the test; int or callable(items) -> int
        self._queued: dict[str, deque[Any]] = {}
        self._lock = threading.Lock()

    def push(self, kind: str, answer: Any) -> None:
        with self._lock:
            self._queued.setdefault(kind, deque()).append(answer)

    def take(self, kind: str, default: Any) -> Any:
        with self._lock:
            queue = self._queued.get(kind)
            if queue:
                return queue.popleft()
        return default
