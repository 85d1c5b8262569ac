"""The `DiffBackend` of a window's companion: `openDiff` and `closeDiff`
answered on the server thread, with the shared review tabs; the CLI hears
the user's decision through a `CliReviewOwner`.

Imported when a companion starts (the core and pydantic are loaded by then),
so a call pays for no import.
"""

from __future__ import annotations

import functools

import sublime

from ...core.companion.companion import Companion
from ...core.companion.diff_tools import CliReviewOwner, cli_review_refusal, close_answer, text_for_cli
from ...core.companion.ide_messages import CloseDiffArguments, OpenDiffArguments
from ...core.companion.protocol import ToolAnswer, text_result
from ...core.companion.server import after_response
from ...core.reviews import Review, ReviewRefused, UnreadableFile, read_disk_file
from ..reviews.review_tabs import CLOSED_NOTE, reviews
from ..settings import fallback_encoding


class SublimeDiffBackend:
    def __init__(self, companion: Companion) -> None:
        self._companion = companion

    async def open_diff(self, session_id: str, arguments: OpenDiffArguments) -> ToolAnswer:
        try:
            disk = read_disk_file(arguments.filePath, fallback_encoding())
        except UnreadableFile as error:
            return text_result(str(error), is_error=True)
        owner = CliReviewOwner(self._companion, session_id, arguments.filePath, arguments.newContent)
        try:
            review, replaced = reviews.propose(arguments.filePath, arguments.newContent, owner, disk,
                                               functools.partial(cli_review_refusal, owner))
        except ReviewRefused as refused:
            return text_result(str(refused), is_error=True)
        # The tabs open once this answer is written: the main thread's work
        # would otherwise take the GIL from this thread and hold the answer back.
        after_response(functools.partial(sublime.set_timeout, functools.partial(reviews.show, review, replaced)))
        return ToolAnswer()

    async def close_diff(self, session_id: str, arguments: CloseDiffArguments) -> ToolAnswer:
        review = reviews.registry.find(arguments.filePath)
        # Only what this window's CLIs opened: another feature's review (the
        # chat's agent, a quick action) is neither read nor ended by a CLI.
        if review is None or not self._opened(review):
            return text_result(close_answer(None))
        # Answered here, never waiting for the main thread: Sublime's API is
        # thread-safe, so the proposal's text (the user's edits included) is
        # read from this thread. The tabs close once the answer is written, so
        # closing them (the main thread's work) does not hold the answer back.
        text = reviews.proposal_text(review)
        was_open = reviews.registry.close(review, suppress=arguments.suppressNotification)
        dismiss = functools.partial(reviews.dismiss, review.id, CLOSED_NOTE, "closed")
        after_response(functools.partial(sublime.set_timeout, dismiss))
        return text_result(close_answer(text_for_cli(review.new_content, text) if was_open else None))

    def _opened(self, review: Review) -> bool:
        """Whether one of this companion's CLI sessions opened `review`."""
        return isinstance(review.owner, CliReviewOwner) and review.owner.companion is self._companion
