"""The watchdog: a callback that blocks Sublime's main or worker thread fails the test.

Facts it enforces (Sublime's API reference, "Threading"): the main thread runs
every blocking event and ``set_timeout`` callback, and ALL packages share one
worker thread for ``*_async`` events and ``set_timeout_async``. A callback that
waits there stalls the editor (main) or every package's async work (worker).

A callback on either thread is in violation when it

* waits for something that is not there yet: ``concurrent.futures.Future.result``
  or ``.exception`` of an unfinished future, ``subprocess.Popen.wait`` or
  ``.communicate`` of a running process, ``threading.Thread.join`` of a live
  thread, ``threading.Event.wait`` of an unset event (but not the one in
  ``Thread.start``, which only waits for the new thread to exist), ``time.sleep``, or a
  blocking socket's ``connect``/``accept``/``recv*``; each such call counts,
  however short the wait turns out to be;
* walks the file system (``os.walk``, ``os.fwalk``, ``pathlib.Path.walk`` or
  ``.rglob``, a recursive ``glob``): a project of thousands of files takes
  seconds on a network or cold disk;
* opens for reading a file that is not a regular file (a FIFO or device
  waits for a writer) or one over ``READ_LIMIT_BYTES`` (1 MiB: its read alone
  takes a frame or more);
* or runs longer than ``limit_ms`` (200 ms by default) of its thread's CPU time.
  CPU time, not wall time: on a loaded machine a callback is descheduled for
  long stretches it is not responsible for, and any real wait is caught above.
  Sublime's own import of a package's plugin modules (loading, reloading) is
  not counted, nor a garbage collection that happens to run in the callback
  (it collects what every earlier test of this process left behind, and the
  callback cannot choose when it runs).

The simulator's own walks and reads (finding resources, indexing symbols,
loading a file into a view, which real Sublime does on threads of its own)
are never counted: a walk or read is the callback's when the nearest caller
outside the standard library is not the simulator.

Violations are recorded (and echoed to stderr) where they happen and fail the
test when its host closes. ``host.watchdog.limit_ms`` sets a tighter (or, for
a test that means to, looser) limit per test; ``take()`` returns and forgets
the violations so far (for tests of the watchdog itself).
"""

from __future__ import annotations

import builtins
import concurrent.futures
import gc
import glob
import io
import os
import pathlib
import socket
import stat
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

DEFAULT_LIMIT_MS = 200.0
READ_LIMIT_BYTES = 1 << 20
LABEL_LIMIT = 200  # characters of a callback's label a violation keeps
_STANDARD_LIBRARY = os.path.dirname(os.__file__) + os.sep
_SIMULATOR = os.path.dirname(os.path.abspath(__file__)) + os.sep


@dataclass(frozen=True)
class Violation:
    thread: str
    callback: str
    what: str
    stack: str

    def __str__(self) -> str:
        return f"{self.thread}: {self.callback}: {self.what}\n{self.stack}"


class Watchdog:
    def __init__(self, limit_ms: float | None = DEFAULT_LIMIT_MS) -> None:
        self.limit_ms = limit_ms  # None: off
        self._threads: set[threading.Thread] = set()
        self._local = threading.local()
        self._lock = threading.Lock()
        self._violations: list[Violation] = []

    @property
    def enabled(self) -> bool:
        return self.limit_ms is not None

    def watch(self, thread: threading.Thread) -> None:
        self._threads.add(thread)

    # ------------------------------------------------------------ callbacks
    @contextmanager
    def callback(self, label: str) -> Iterator[None]:
        """Measure one callback run on a watched thread."""
        if threading.current_thread() not in self._threads:
            yield
            return
        self._local.label = label
        self._local.exempt = 0.0
        started = time.thread_time()
        try:
            yield
        finally:
            self._local.label = None
            used_ms = (time.thread_time() - started - self._local.exempt) * 1000.0
            limit = self.limit_ms
            if limit is not None and used_ms > limit:
                self._record(label, f"ran {used_ms:.0f} ms of CPU time (limit {limit:.0f} ms)", "")

    @contextmanager
    def loading(self) -> Iterator[None]:
        """Sublime importing a package's plugin modules: their CPU time is the
        editor's own loading, not a callback's (waits still count). Nested
        (a resource lookup inside a syntax's load), only the outermost counts."""
        depth = getattr(self._local, "own_work", 0)
        self._local.own_work = depth + 1
        started = time.thread_time()
        try:
            yield
        finally:
            self._local.own_work = depth
            if depth == 0:
                self._local.exempt = getattr(self._local, "exempt", 0.0) + time.thread_time() - started

    def garbage_collection(self, phase: str, info: dict[str, int]) -> None:
        """A `gc.callbacks` hook: a collection's CPU time is not the callback's."""
        if getattr(self._local, "own_work", 0):
            return  # already exempt as the editor's own work
        if phase == "start":
            self._local.gc_started = time.thread_time()
            return
        started = getattr(self._local, "gc_started", None)
        if started is not None:
            self._local.gc_started = None
            self._local.exempt = getattr(self._local, "exempt", 0.0) + time.thread_time() - started

    @contextmanager
    def internal(self) -> Iterator[None]:
        """The simulator's own waits (a blocking event handed to the main thread
        waits for it, as Sublime blocks the caller): never counted."""
        before = getattr(self._local, "internal", False)
        self._local.internal = True
        try:
            yield
        finally:
            self._local.internal = before

    def blocked(self, what: str) -> None:
        """A blocking wait is about to happen on the current thread."""
        label = getattr(self._local, "label", None)
        if label is None or not self.enabled or getattr(self._local, "internal", False):
            return
        stack = "".join(traceback.format_stack(sys._getframe(2), limit=12))
        self._record(label, f"waited on {what}", stack)

    def _record(self, label: str, what: str, stack: str) -> None:
        if len(label) > LABEL_LIMIT:
            label = label[: LABEL_LIMIT - 1] + "…"
        violation = Violation(threading.current_thread().name, label, what, stack)
        with self._lock:
            self._violations.append(violation)
        print(f"[sublime_sim] WATCHDOG {violation}", file=sys.stderr)

    # ------------------------------------------------------------- results
    def take(self) -> list[Violation]:
        with self._lock:
            taken, self._violations = self._violations, []
        return taken

    def check(self) -> None:
        """Raise if any callback blocked (the host calls this when it closes)."""
        violations = self.take()
        if violations and self.enabled:
            raise AssertionError(
                f"{len(violations)} callback(s) blocked Sublime's main or worker thread:\n\n"
                + "\n".join(str(v) for v in violations[:5])
            )


# ------------------------------------------------------------ instrumentation
_active: Watchdog | None = None
_originals: dict[tuple[Any, str], tuple[Any, bool]] = {}  # (owner, name) -> (original, owner defined it)


def _patch(owner: Any, name: str, make: Callable[[Any], Any]) -> None:
    original = getattr(owner, name)
    _originals[(owner, name)] = (original, name in vars(owner))
    setattr(owner, name, make(original))


@contextmanager
def sublimes_own_work() -> Iterator[None]:
    """What Sublime does on threads of its own (loading a syntax definition,
    highlighting a buffer) but the simulator does inline, inside whichever
    callback asked: its CPU time is not that callback's."""
    dog = _active
    if dog is None:
        yield
        return
    with dog.loading():
        yield


def _report(what: str) -> None:
    dog = _active
    if dog is not None:
        dog.blocked(what)


def _future_wait(original: Any) -> Any:
    def wrapper(self: concurrent.futures.Future[Any], timeout: float | None = None) -> Any:
        if not self.done():
            _report(f"concurrent.futures.Future.{original.__name__}() of an unfinished future")
        return original(self, timeout)

    return wrapper


def _process_wait(original: Any) -> Any:
    def wrapper(self: subprocess.Popen[Any], *args: Any, **kwargs: Any) -> Any:
        if self.returncode is None and self.poll() is None:
            _report(f"subprocess.Popen.{original.__name__}() of a running process")
        return original(self, *args, **kwargs)

    return wrapper


def _thread_join(original: Any) -> Any:
    def wrapper(self: threading.Thread, timeout: float | None = None) -> None:
        if self.is_alive() and self is not threading.current_thread():
            _report(f"threading.Thread.join() of the live thread {self.name!r}")
        original(self, timeout)

    return wrapper


def _event_wait(original: Any) -> Any:
    def wrapper(self: threading.Event, timeout: float | None = None) -> bool:
        if not self.is_set():
            _report("threading.Event.wait() of an unset event")
        return bool(original(self, timeout))

    return wrapper


def _thread_start(original: Any) -> Any:
    def wrapper(self: threading.Thread) -> None:
        dog = _active
        if dog is None:
            original(self)
            return
        with dog.internal():  # waits only for the new thread to exist, not for its work
            original(self)

    return wrapper


def _sleep(original: Any) -> Any:
    def wrapper(seconds: float) -> None:
        if seconds > 0:
            _report(f"time.sleep({seconds})")
        original(seconds)

    return wrapper


def _socket_call(original: Any) -> Any:
    def wrapper(self: socket.socket, *args: Any, **kwargs: Any) -> Any:
        if self.gettimeout() != 0.0:
            _report(f"socket.{original.__name__}() on a blocking socket")
        return original(self, *args, **kwargs)

    return wrapper


def _callers_own(depth: int) -> bool:
    """Whether the code that asked for a walk or read is not the simulator's:
    the nearest frame outside the standard library (and this module) decides."""
    frame = sys._getframe(depth)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not (filename.startswith((_STANDARD_LIBRARY, "<frozen")) or filename == __file__):
            return not filename.startswith(_SIMULATOR)
        frame = frame.f_back
    return False


def _in_callback() -> bool:
    dog = _active
    return dog is not None and getattr(dog._local, "label", None) is not None


def _walk(original: Any, walks: Callable[[dict[str, Any]], bool] = lambda kwargs: True) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if walks(kwargs) and _in_callback() and _callers_own(2):
            _report(f"{_qualified(original)}() (a file-system walk)")
        return original(*args, **kwargs)

    return wrapper


def _recursive_glob(original: Any) -> Any:
    return _walk(original, lambda kwargs: bool(kwargs.get("recursive")))


def _open(original: Any) -> Any:
    def wrapper(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, (str, bytes, os.PathLike)) and "r" in mode and "+" not in mode and _in_callback():
            blocking = _blocking_read(file)
            if blocking and _callers_own(2):
                _report(f"open() for reading {blocking}")
        return original(file, mode, *args, **kwargs)

    return wrapper


def _blocking_read(file: str | bytes | os.PathLike[Any]) -> str | None:
    """Why reading `file` may block the thread, or None."""
    try:
        status = os.stat(file)
    except (OSError, ValueError):
        return None  # open() fails at once
    if not stat.S_ISREG(status.st_mode):
        return "a file that is not a regular file (a FIFO or device waits)"
    if status.st_size > READ_LIMIT_BYTES:
        return f"a file of {status.st_size} bytes (over {READ_LIMIT_BYTES})"
    return None


def _qualified(function: Any) -> str:
    owner = getattr(function, "__module__", "") or ""
    return f"{owner}.{function.__qualname__}" if owner else function.__qualname__


def install(dog: Watchdog) -> None:
    """Route the blocking calls of this process to `dog` (one host at a time)."""
    global _active
    _active = dog
    if _originals:
        return
    gc.callbacks.append(_garbage_collection)
    _patch(concurrent.futures.Future, "result", _future_wait)
    _patch(concurrent.futures.Future, "exception", _future_wait)
    _patch(subprocess.Popen, "wait", _process_wait)
    _patch(subprocess.Popen, "communicate", _process_wait)
    _patch(threading.Thread, "join", _thread_join)
    _patch(threading.Thread, "start", _thread_start)
    _patch(threading.Event, "wait", _event_wait)
    _patch(time, "sleep", _sleep)
    for name in ("connect", "accept", "recv", "recv_into", "recvfrom"):
        _patch(socket.socket, name, _socket_call)
    _patch(os, "walk", _walk)
    _patch(os, "fwalk", _walk)  # pathlib.Path.walk walks with os.walk
    _patch(pathlib.Path, "rglob", _walk)
    _patch(glob, "iglob", _recursive_glob)
    _patch(builtins, "open", _open)
    _patch(io, "open", _open)


def _garbage_collection(phase: str, info: dict[str, int]) -> None:
    dog = _active
    if dog is not None:
        dog.garbage_collection(phase, info)


def uninstall() -> None:
    global _active
    _active = None
    if _garbage_collection in gc.callbacks:
        gc.callbacks.remove(_garbage_collection)
    for (owner, name), (original, own) in _originals.items():
        if own:
            setattr(owner, name, original)
        else:
            delattr(owner, name)  # inherited from a C base class again
    _originals.clear()
