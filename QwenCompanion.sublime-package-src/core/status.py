"""The status-bar text of a window: is its server up, how many CLIs are connected."""

from __future__ import annotations

STATUS_KEY = "qwen_companion"


def status_text(running: bool, connected: int) -> str:
    """`Qwen ● 2` with CLIs connected, `Qwen ○` when none is, `Qwen ✕` when the
    window has no running server."""
    if not running:
        return "Qwen ✕"
    if connected > 0:
        return f"Qwen ● {connected}"
    return "Qwen ○"
