"""The review view's commands and keys: Review Changes opens it; in it,
the hunk under the caret is kept, undone or opened, its file kept or
undone, or all of them; n / p go to the next or previous hunk. The keys
are bound only in review views (`qwen_review_hunks.view`, answered from
our record)."""

from __future__ import annotations

from typing import Any

import sublime
import sublime_plugin

from ...core.review_hunks.review_text import NO_HUNK
from ..settings import fallback_encoding
from . import hunk_actions
from .proposal_source import proposal_source
from .review_view import VIEW_LABEL, ReviewSource, forget, is_review_view, open_review, review_of
from .turn_source import turn_source
from .worktree_source import worktree_source

ACTIONS = ("keep", "undo", "open", "keep_file", "undo_file", "keep_all", "undo_all", "next", "previous")


class QwenReviewChangesCommand(sublime_plugin.WindowCommand):
    """Every hunk of the active chat's (or chat `chat`'s) last turn that
    changed files (or `turn`'s, or the running turn's, or every turn since
    turn `since`) in the review view;
    with `worktree` (a worktree chat's folder), that worktree's changes;
    run from a review's tab (a proposal), that proposal's hunks."""

    def run(self, chat: int | None = None, turn: int | None = None, worktree: str | None = None,
            since: int | None = None) -> None:
        chosen = chat is not None or turn is not None or since is not None
        proposal = proposal_source(self.window.active_view()) if not chosen else None
        source: ReviewSource | None = (worktree_source(self.window, worktree, fallback_encoding()) if worktree
                                       else proposal or turn_source(self.window, chat, turn, since))
        if source is None:
            self.window.status_message("Qwen Code: no turn of the chat changed files" if worktree is None
                                       else "Qwen Code: no chat of this window works in that worktree")
            return
        open_review(self.window, source, by_user=True)


class QwenReviewHunkCommand(sublime_plugin.TextCommand):
    """In the review view: `action` on the hunk under the caret (keep, undo,
    open), its file (keep_file, undo_file), every file (keep_all, undo_all),
    or go to the next or previous hunk."""

    def run(self, edit: sublime.Edit, action: str = "keep") -> None:
        record = review_of(self.view)
        selection = self.view.sel()
        if record is None or action not in ACTIONS or not len(selection):
            return
        line = self.view.rowcol(selection[0].b)[0]
        if action in ("next", "previous"):
            self._go(record.hunk_lines(), line, 1 if action == "next" else -1)
            return
        if action == "keep_all":
            hunk_actions.keep_all(record)
            return
        if action == "undo_all":
            hunk_actions.undo_all(record)
            return
        target = record.target(line)
        if target is None or target[0] == NO_HUNK:
            sublime.status_message("Qwen Code: put the caret on a file or one of its hunks")
            return
        file_index, hunk = target
        whole = action.endswith("_file") or hunk == NO_HUNK
        if action == "open":
            hunk_actions.open_at(record, file_index, None if hunk == NO_HUNK else hunk)
        elif action.startswith("keep"):
            hunk_actions.keep(record, file_index, None if whole else hunk)
        else:
            hunk_actions.undo(record, file_index, None if whole else hunk)

    def _go(self, hunk_lines: list[int], line: int, step: int) -> None:
        ahead = [each for each in hunk_lines if (each > line if step > 0 else each < line)]
        if not ahead:
            return
        point = self.view.text_point(ahead[0] if step > 0 else ahead[-1], 0)
        self.view.sel().clear()
        self.view.sel().add(sublime.Region(point))
        self.view.show(point)

    def is_enabled(self, action: str = "keep") -> bool:
        return is_review_view(self.view)


class ReviewViewListener(sublime_plugin.EventListener):
    def on_query_context(self, view: sublime.View, key: str, operator: int, operand: Any,
                         match_all: bool) -> bool | None:
        if key != VIEW_LABEL:
            return None
        ours = is_review_view(view)
        return bool(ours == operand) if operator == sublime.QueryOperator.EQUAL else bool(ours != operand)

    def on_close(self, view: sublime.View) -> None:
        forget(view)
