"""A proposing action's replacement, shown in the same review as `openDiff`:
the tab's current text beside that text with the selection replaced.
Accept applies it to the tab as one undo step (saving stays the user's);
Reject changes nothing; a tab edited since the action read it is not
changed, and the review says why."""

from __future__ import annotations

import logging

import sublime

from ...core.actions.proposal import replacement_for
from ...core.files.text_positions import Lines
from ...core.reviews import UnreadableFile
from ..editor import view_text
from ..reviews.review_tabs import reviews
from ..view_writes import apply_proposal
from .finished_job import FinishedJob

log = logging.getLogger(__name__)

BUFFER_NOTE = "Accept applies this to the tab as one undo step; saving it stays your choice."


class ActionReviewOwner:
    """The owner of an action's review (a `ReviewOwner`): Accept edits the tab."""

    note = BUFFER_NOTE

    def __init__(self, view: sublime.View, made_from: str, name: str) -> None:
        self.view = view
        self.made_from = made_from  # the tab's text the proposal replaces a part of
        self.name = name

    @property
    def alive(self) -> bool:
        return self.view.is_valid()

    def rejected(self) -> None:
        pass  # the tab stays as it is

    def accepted(self, text: str) -> None:
        window = self.view.window()
        if not self.view.is_valid():
            return
        refusal = apply_proposal(self.view, text, self.made_from)
        message = f"{self.name} {refusal}" if refusal else f"applied to {self.name} (undo reverts it)"
        if refusal:
            log.info("action proposal not applied: %s", message)
        if window is not None:
            window.status_message(f"Qwen Code: {message}")


def propose(job: FinishedJob, block: str) -> str | None:
    """Open the review of `block` replacing the job's selection; the reason
    when it cannot (None when the review opened)."""
    view = job.view
    path = view.file_name()
    if not view.is_valid():
        return "the tab was closed."
    if path is None:
        return "the tab has no file; save it first to review a change."
    if view.change_count() != job.change_count:
        return "the tab changed while the action ran."
    text = view_text(view)
    selection = job.context.selection
    begin = Lines(text).offset(selection.start)
    end = begin + len(selection.text)
    if text[begin:end] != selection.text:
        return "the selection is no longer where it was."
    proposed = text[:begin] + replacement_for(selection.text, block) + text[end:]
    owner = ActionReviewOwner(view, text, path)
    try:
        review, replaced = reviews.propose(path, proposed, owner, job.disk_of(path))
    except UnreadableFile as error:
        return str(error)
    reviews.show(review, replaced)
    return None
