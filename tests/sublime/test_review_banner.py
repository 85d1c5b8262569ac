"""The review banner: at the top of the proposal, naming the file, with
Accept and Reject links that answer the CLI; gone with the review. While a
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

        review = package_module("plugin.reviews.views").reviews.for_view(proposed)
        self.assertIsNotNone(review)
        phantoms = review.phantoms.phantoms
        self.assertEqual(len(phantoms), 1)
        banner = phantoms[0]
        self.assertEqual(banner.region, sublime.Region(0, 0))
        self.assertEqual(banner.layout, sublime.PhantomLayout.BLOCK)
        self.assertEqual(proposed.query_phantoms([banner.id]), [sublime.Region(0, 0)])
        self.assertIn("<b>notes.md</b>", banner.content)
        self.assertIn('href="accept"', banner.content)
        self.assertIn('href="reject"', banner.content)
        for view in (original, proposed):
            self.assertIs(query_context(view, "qwen_companion.open_review", "equal", True), True)

        banner.on_navigate("reject")
        answer = Background(cli.next_notification)
        yield answer
        self.assertEqual(answer.result(), {"jsonrpc": "2.0", "method": "ide/diffRejected", "params": {"filePath": str(path)}})
        yield lambda: not self.workspace.review_views()
        self.assertEqual(path.read_text(encoding="utf-8"), "old\n")
