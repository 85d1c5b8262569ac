"""Giving freed memory back to the system after a large review.

CPython frees a 10 MB text at once, but glibc's allocator keeps what it
freed for reuse: after a large block is freed it raises its mmap threshold,
so later large texts come from the heap, and a fragmented heap is never
shrunk. The plugin host then holds on to hundreds of MiB after a few large
reviews. `malloc_trim` returns the free pages; other C libraries (macOS,
Windows, musl) have no such function and give large blocks back on their own.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable

# Characters: below this, what is kept is not worth a trim. glibc gives back
# the top of its heap by itself; ten 1 MB reviews leave ~2 MiB, and a trim
# would make the next review fault its pages in again (~0.5 ms at 1 MB).
LARGE_TEXT = 2_000_000


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # here: loading it costs milliseconds, never paid at plugin load

    try:
        # The process's own symbols: the C library it already runs on, no search.
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    return trim


def release_freed_memory() -> bool:
    """Return the allocator's free pages to the system (a worker thread's job:
    it takes a few milliseconds); False where the C library cannot."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
