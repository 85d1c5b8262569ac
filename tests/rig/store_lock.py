"""qwen's lock on its extension store, for the scripted CLIs: qwen 0.24.4
holds ~/.qwen/extension-store/lock.lock (a directory, made by
proper-lockfile) while it starts, and its exit hooks remove it when it ends
by itself or on SIGTERM. A SIGKILL leaves it for a minute, and each qwen
started meanwhile fails: "Extension store is busy"."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
from pathlib import Path


def hold(lock: Path) -> None:
    """The exit hooks first, then the lock, as qwen's are: proper-lockfile
    registers its hook (signal-exit) when it loads, before any lock. Taken
    the other way round, a SIGTERM between the two left the lock."""
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(128 + number))  # the exit hooks run
    atexit.register(_remove, lock)
    lock.mkdir()


def _remove(lock: Path) -> None:
    with contextlib.suppress(FileNotFoundError):  # ended before it took the lock
        os.rmdir(lock)
