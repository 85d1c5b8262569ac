"""The resource index behind ``find_resources``: every file of every package
folder, walked once and kept while no folder of it changed.

Sublime keeps such an index (it watches the Packages folder); walking the
folders on every call made a view's creation cost a walk of every package
(the syntax-specific settings are looked up by name) on the main thread.
The walk and the lookup are Sublime's own work: the watchdog does not bill
their CPU time to the callback that asked (a view created in a callback
soon after a package folder changed walks them again).

A kept walk is checked before each use: a file added, removed or renamed
changes its folder's modification time. A folder changed within the last
``SETTLE_NS`` of the walk is not trusted (a second change in the same clock
tick would leave its time as it was), so such a walk is done again next time:
a lookup never misses a file, however soon after it was written.
"""

from __future__ import annotations

import fnmatch
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import _watchdog

SETTLE_NS = 1_000_000_000


@dataclass
class _Walk:
    folders: list[tuple[str, int]]  # every folder walked, with its modification time
    files: list[tuple[str, str]]  # (file name, resource name) in Sublime's order
    trusted: bool  # no folder changed just before the walk
    found: dict[str, list[str]] = field(default_factory=dict)  # pattern -> resources

    def current(self) -> bool:
        try:
            return self.trusted and all(os.stat(folder).st_mtime_ns == mtime for folder, mtime in self.folders)
        except OSError:
            return False


class ResourceIndex:
    def __init__(self, packages_dir: Path, package_names: Callable[[], list[str]]) -> None:
        self._packages_dir = packages_dir
        self._package_names = package_names
        self._walk: _Walk | None = None

    def find(self, pattern: str) -> list[str]:
        """``Packages/...`` names of the files whose name matches ``pattern``."""
        with _watchdog.sublimes_own_work():  # Sublime keeps this index natively, on its own thread
            walk = self._walk
            if walk is None or not walk.current():
                walk = self._walk = self._walked()
            found = walk.found.get(pattern)
            if found is None:
                found = walk.found[pattern] = [name for file, name in walk.files if fnmatch.fnmatchcase(file, pattern)]
            return list(found)

    def _walked(self) -> _Walk:
        started = time.time_ns()
        folders: list[tuple[str, int]] = []
        files: list[tuple[str, str]] = []

        def visit(folder: str) -> None:
            try:
                folders.append((folder, os.stat(folder).st_mtime_ns))
            except OSError:
                folders.append((folder, -1))

        visit(str(self._packages_dir))
        for pkg in self._package_names():
            for dirpath, dirnames, filenames in os.walk(self._packages_dir / pkg):
                visit(dirpath)
                dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
                for fn in sorted(filenames):
                    rel = Path(dirpath, fn).relative_to(self._packages_dir).as_posix()
                    files.append((fn, f"Packages/{rel}"))
        trusted = all(0 <= mtime < started - SETTLE_NS for _, mtime in folders)
        return _Walk(folders, files, trusted)
