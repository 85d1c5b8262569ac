"""Where the CLI's diffs reach the review tabs: each window's companion
answers `openDiff` / `closeDiff` with them (see `diff_backend`), and a CLI
session that ends may orphan a review."""

from __future__ import annotations

from typing import TYPE_CHECKING

import sublime

from ..reviews.views import reviews
from .companions import companions

if TYPE_CHECKING:
    from ...core.companion.runtime import Companion


def install_backend(window: sublime.Window, companion: Companion) -> None:
    from .diff_backend import SublimeDiffBackend

    companion.diff_backend = SublimeDiffBackend(companion)


companions.started_listeners.append(install_backend)
# A session that ends (expired, deleted, server stopped) may orphan a review.
companions.sessions_listeners.append(lambda window_id, connected: sublime.set_timeout(reviews.check_orphans))
