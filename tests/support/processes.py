"""Whether a process still runs: the no-orphan checks of the chat tests, and
the grandchildren the scripted CLIs start (the `grandchildren` fixture ends
any that outlive their test)."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest


def alive(pid: int) -> bool:
    """True while `pid` runs; a zombie (exited, not yet reaped) counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return True


def descendants(pid: int) -> list[int]:
    """The processes `pid` started, and theirs (Linux: read from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry.name))
    found: list[int] = []
    pending = [pid]
    while pending:
        for child in children.get(pending.pop(), []):
            found.append(child)
            pending.append(child)
    return found


class Grandchildren:
    """The grandchildren (tests/rig/grandchild.py) the scripted CLIs started
    with `pid_file` as their script's "grandchild"."""

    def __init__(self, pid_file: Path) -> None:
        self.pid_file = pid_file

    def pids(self, count: int = 1, timeout: float = 15.0) -> list[int]:
        """Their pids, once at least `count` were started."""
        deadline = time.monotonic() + timeout
        while True:
            pids = self._listed()
            if len(pids) >= count:
                return pids
            if time.monotonic() > deadline:
                raise AssertionError(f"{count} grandchild(ren) expected within {timeout} s, {len(pids)} started")
            time.sleep(0.02)

    def running(self) -> list[int]:
        return [pid for pid in self._listed() if alive(pid) and self._ours(pid)]

    def wait_gone(self, timeout: float = 15.0, among: list[int] | None = None) -> list[int]:
        """The ones (of `among`, else all) still running after `timeout`: none, when their group was ended."""
        deadline = time.monotonic() + timeout
        while (left := [pid for pid in self.running() if among is None or pid in among]) and time.monotonic() < deadline:
            time.sleep(0.02)
        return left

    def end(self) -> None:
        """Kill, by pid, every one still running (a failed test leaves none behind)."""
        for pid in self.running():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def _listed(self) -> list[int]:
        try:
            return [int(line) for line in self.pid_file.read_text().split()]
        except FileNotFoundError:
            return []

    def _ours(self, pid: int) -> bool:
        """Still that grandchild, not a process that reused its pid."""
        try:
            return str(self.pid_file).encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return False


@pytest.fixture
def grandchildren(tmp_path: Path) -> Iterator[Grandchildren]:
    found = Grandchildren(tmp_path / "grandchildren.pids")
    try:
        yield found
    finally:
        found.end()
