"""The review banner: an annotation region beside the first line of the
proposal; rejecting answers the CLI and the review is gone. While a
review waits, its key bindings' context holds in its tabs."""

from __future__ import annotations

from typing import Any

import sublime
from unittesting import DeferrableTestCase

from .helpers import Background, Workspace, package_module, query_context


class ReviewBanner(DeferrableTestCase):
    def setUp(self) -> Any:
        self.workspace = Workspace()
        yield from self.workspace.open()

    def tearDown(self) -> None:
        self.workspace.close()

    def test_the_banner_names_the_file_and_its_reject_link_answers_the_cli(self) -> Any:
        path = self.workspace.file("notes.md", "old\n")
        connecting = self.workspace.cli()
        yield connecting
        cli = connecting.result()
        Background(lambda: cli.open_diff(path, "new\n"))
        original, proposed = yield lambda: self.workspace.review(path)

        views = package_module("plugin.reviews.review_tabs")
        self.assertIsNotNone(views.reviews.for_view(proposed))
        # The banner is an annotation on a region beside line 1; Sublime shows a plugin the region,
        # not the annotation's HTML or its links, so the Reject link is driven through its command.
        self.assertEqual(proposed.get_regions(views.BANNER_KEY), [sublime.Region(0, 0)])
        for view in (original, proposed):
            self.assertIs(query_context(view, "qwen_companion.open_review", "equal", True), True)

        proposed.run_command("qwen_reject_diff")
        answer = Background(cli.next_notification)
        yield answer
        self.assertEqual(answer.result(), {"jsonrpc": "2.0", "method": "ide/diffRejected", "params": {"filePath": str(path)}})
        yield lambda: not self.workspace.review_views()
        self.assertEqual(path.read_text(encoding="utf-8"), "old\n")
