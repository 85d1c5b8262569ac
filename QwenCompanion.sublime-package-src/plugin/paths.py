"""Paths as a person reads them in this window: relative to its folder,
absolute only outside it (`core.files.paths.display_path` with Sublime's platform)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import sublime

from ..core.files.paths import display_path, path_style

CACHE_FOLDER = "QwenCompanion"  # the package's own files in Sublime's cache folder


def package_cache() -> Path:
    """The package's folder in Sublime's cache folder (sessions, worktrees, the
    search index, the serve record): the user's, never a project's."""
    return Path(sublime.cache_path()) / CACHE_FOLDER


def shown_path(window: sublime.Window | None, path: str) -> str:
    """Any thread: Sublime's API answers `folders()` from any of them."""
    folders = window.folders() if window is not None and window.is_valid() else []
    return display_path(path, folders, path_style(sublime.platform()))


def path_display(window: sublime.Window) -> Callable[[str], str]:
    """`shown_path` for this window, for code that does not know Sublime (the core)."""
    return lambda path: shown_path(window, path)
