"""A CLI session that ends may orphan a review (registered by `plugin.wiring`).
Each window's companion answers `openDiff` / `closeDiff` with the review tabs
itself: see `diff_backend`, given to it when it is built."""

from __future__ import annotations

import sublime

from ..reviews.review_tabs import reviews


def check_orphans_soon(window_id: int, connected: int) -> None:
    """A session that ends (expired, deleted, server stopped) may orphan a review."""
    sublime.set_timeout(reviews.check_orphans)
