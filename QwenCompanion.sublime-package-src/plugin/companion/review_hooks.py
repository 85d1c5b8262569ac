"""Where the CLI's diffs reach the review tabs (registered by `plugin.wiring`):
each window's companion answers `openDiff` / `closeDiff` with them (see
`diff_backend`), and a CLI session that ends may orphan a review."""

from __future__ import annotations

from typing import TYPE_CHECKING

import sublime

from ..reviews.review_tabs import reviews

if TYPE_CHECKING:
    from ...core.companion.runtime import Companion


def install_backend(window: sublime.Window, companion: Companion) -> None:
    from .diff_backend import SublimeDiffBackend

    companion.diff_backend = SublimeDiffBackend(companion)


def check_orphans_soon(window_id: int, connected: int) -> None:
    """A session that ends (expired, deleted, server stopped) may orphan a review."""
    sublime.set_timeout(reviews.check_orphans)
