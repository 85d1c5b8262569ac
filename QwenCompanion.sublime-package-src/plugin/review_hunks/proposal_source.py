"""A review's proposal (a chat's edit permission, a CLI's openDiff) as a set
of changes for the review view: the file's text against the proposal. Its
hunks are kept or undone in the proposal, never in the file: an undone
hunk is taken out of the proposal tab (unsaved: saving it would accept it),
and Accept or Reject stay the review's own."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sublime

from ...core.review_hunks.review import ChangedFile
from ...core.review_hunks.review_text import Comment
from ..chat.comments.comment_marks import book
from ..editor import replace_text, view_text
from ..reviews.review_tabs import OpenReview as TwoTabReview, reviews


@dataclass
class ProposalSource:
    item: TwoTabReview

    @property
    def key(self) -> tuple[str, int]:
        return ("proposal", self.item.review.id)

    @property
    def title(self) -> str:
        return f"proposal for {self.item.name}"

    def changes(self) -> list[ChangedFile]:
        original = self.item.original
        before = view_text(original) if original.is_valid() else self.item.review.disk.text
        return [ChangedFile(self.item.review.file_path, before, self.item.proposal_text())]

    def comments(self) -> list[Comment]:
        """Every chat's pending comments on the proposal tab (their lines are the proposal's)."""
        return [Comment(c.path, c.line, c.text) for c in book.pending_in(self.item.review.id)]

    def watch(self, wrote: Callable[[str], None]) -> Callable[[], None]:
        return lambda: None

    def settled(self, window: sublime.Window, path: str, state: str) -> None:
        return None  # the review's Accept or Reject decides

    def keep_whole(self, window: sublime.Window, path: str | None) -> None:
        return None

    def undo_whole(self, window: sublime.Window, path: str | None) -> None:
        return None

    def view_of(self, window: sublime.Window, path: str) -> sublime.View | None:
        return self.item.proposed if self.item.proposed.is_valid() else None

    def write_view(self, view: sublime.View, text: str, read: str) -> str | None:
        """The proposal tab's text, one undo step, never saved (a save accepts the review)."""
        if view_text(view) != read:
            return "the proposal changed while it was undone; nothing was changed"
        replace_text(view, text)
        return None


def proposal_source(view: sublime.View | None) -> ProposalSource | None:
    """The review whose tab (either) `view` is."""
    item = reviews.for_view(view) if view is not None else None
    return ProposalSource(item) if item is not None else None
