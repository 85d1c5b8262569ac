"""Commands and events of the review tabs: accept, reject, save-to-accept, closing."""

from __future__ import annotations

import sublime
import sublime_plugin

from .review_tabs import OpenReview, reviews

OPEN_REVIEW_CONTEXT = "qwen_companion.open_review"
"""Key binding context: true in both tabs of a review that waits for an answer."""


class ReviewCommand(sublime_plugin.TextCommand):
    """A command run in a tab of a review that waits for an answer, on that
    review: enabled only there."""

    def open_review(self) -> OpenReview | None:
        return reviews.for_view(self.view)

    def is_enabled(self) -> bool:
        return self.open_review() is not None


class QwenAcceptDiffCommand(ReviewCommand):
    """Accept the review this tab belongs to, with the proposal's current text."""

    def run(self, edit: sublime.Edit) -> None:
        item = self.open_review()
        if item is not None:
            reviews.accept(item)


class QwenRejectDiffCommand(ReviewCommand):
    def run(self, edit: sublime.Edit) -> None:
        item = self.open_review()
        if item is not None:
            reviews.reject(item.review)


class QwenReviewFillCommand(sublime_plugin.TextCommand):
    """Internal: puts a review side's text into its new tab. The text is not an
    argument (see `DiffReviews.take_fill`): run anywhere else, it does nothing."""

    def run(self, edit: sublime.Edit) -> None:
        text = reviews.take_fill(self.view)
        if text is not None:
            self.view.replace(edit, sublime.Region(0, self.view.size()), text)

    def is_visible(self) -> bool:
        return False


class ReviewListener(sublime_plugin.EventListener):
    def on_text_command(
        self, view: sublime.View, command_name: str, args: sublime.CommandArgs
    ) -> tuple[str, sublime.CommandArgs] | None:
        # Saving a review accepts it, as in the VS Code companion; it never writes a file itself.
        if command_name == "save" and reviews.for_view(view) is not None:
            return ("qwen_accept_diff", None)
        return None

    def on_close(self, view: sublime.View) -> None:
        reviews.view_closed(view.id())

    def on_activated(self, view: sublime.View) -> None:
        reviews.view_activated(view)

    def on_query_context(
        self,
        view: sublime.View,
        key: str,
        operator: sublime.QueryOperator,
        operand: sublime.Value,
        match_all: bool,
    ) -> bool | None:
        if key != OPEN_REVIEW_CONTEXT:
            return None
        is_review = reviews.for_view(view) is not None
        if operator == sublime.QueryOperator.EQUAL:
            return is_review == operand
        if operator == sublime.QueryOperator.NOT_EQUAL:
            return is_review != operand
        return None

    def on_init(self, views: list[sublime.View]) -> None:
        reviews.adopt_stale(views)
