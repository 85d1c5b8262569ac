"""The status-bar text of a window: is its server up, how many CLIs are connected."""

from __future__ import annotations

STATUS_KEY = "qwen_companion"


def status_text(running: bool, connected: int, lock_missing: bool = False) -> str:
    """`Qwen ● 2` with CLIs connected, `Qwen ○` when none is, `Qwen ✕` when the
    window has no running server, `Qwen ⚠ no lock file` when it runs but its
    lock file could not be written (no CLI can find it)."""
    if not running:
        return "Qwen ✕"
    if lock_missing and connected == 0:
        return "Qwen ⚠ no lock file"
    if connected > 0:
        return f"Qwen ● {connected}"
    return "Qwen ○"
