"""Who stands behind a review tab: the one the user's Accept or Reject answers.

Every feature that proposes an edit owns the reviews it opens: the CLI's
companion (an adapter that answers with `ide/diffAccepted` / `ide/diffRejected`),
a chat's permission prompt, a quick action's replacement, a generated test
file. The review tabs know nothing else of them.
"""

from __future__ import annotations

from typing import Protocol


class ReviewOwner(Protocol):
    @property
    def alive(self) -> bool:
        """Whether anyone still waits for the answer; else the review is orphaned (main thread)."""
        ...

    @property
    def note(self) -> str | None:
        """What Accept does, shown instead of the notes about the file on disk; None keeps those."""
        ...

    def accepted(self, text: str) -> None:
        """The user accepted `text`: the proposal tab's text, newlines as in a buffer (`\\n`)."""

    def rejected(self) -> None:
        """The user rejected the review, or it ended unanswered (closed, replaced by a newer
        proposal for the same file); any thread."""
