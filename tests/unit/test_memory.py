"""Giving freed memory back after large reviews (glibc's malloc_trim)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from qwencompanion_src.core import memory

SOURCE = Path(memory.__file__)

# In a fresh interpreter, so the allocator's state is the one a plugin host has
# after a large review, not whatever earlier tests left.
FRAGMENTED_HEAP = textwrap.dedent(
    """
    import importlib.util, json, sys

    spec = importlib.util.spec_from_file_location("memory", sys.argv[1])
    memory = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(memory)

    def rss_kib():
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))

    # After a freed 10 MB block glibc serves large blocks from its heap; small
    # blocks left between them (as a server's buffers are) pin it.
    first = bytearray(10_000_000)
    del first
    texts, pins = [], []
    for _ in range(400):
        texts.append(bytearray(200_000))
        pins.append(bytearray(1_000))
    del texts
    freed = rss_kib()
    trimmed = memory.release_freed_memory()
    print(json.dumps({"freed": freed, "trimmed": trimmed, "after": rss_kib(), "pins": len(pins)}))
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_freed_large_texts_are_given_back() -> None:
    output = subprocess.run([sys.executable, "-c", FRAGMENTED_HEAP, str(SOURCE)], capture_output=True, text=True, check=True)
    result = json.loads(output.stdout)
    assert result["trimmed"] is True
    assert result["after"] < result["freed"] - 60_000  # 80 MB were held after the free


def test_other_platforms_have_nothing_to_trim(monkeypatch: pytest.MonkeyPatch) -> None:
    memory._malloc_trim.cache_clear()
    monkeypatch.setattr(memory.sys, "platform", "darwin")
    try:
        assert memory.release_freed_memory() is False
    finally:
        memory._malloc_trim.cache_clear()
