"""qwen's lock on its extension store, for the scripted CLIs: qwen 0.24.4
holds ~/.qwen/extension-store/lock.lock (a directory, made by
proper-lockfile) while it starts, and its exit hooks remove it when it ends
by itself or on SIGTERM. A SIGKILL leaves it for a minute, and each qwen
started meanwhile fails: "Extension store is busy"."""

from __future__ import annotations

import atexit
import os
import signal
import sys
from pathlib import Path


def hold(lock: Path) -> None:
    lock.mkdir()
    atexit.register(lambda: os.rmdir(lock))
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(128 + number))  # the exit hooks run
