"""A smoke run of the installed package: its server is up with a lock file,
a review goes there and back, the chat opens and answers, and a quick action
runs (the scripted ACP agent and stream-json CLI play qwen)."""

from __future__ import annotations

from typing import Any

import sublime
from unittesting import DeferrableTestCase

from .helpers import ACTION_ANSWER, AGENT_ANSWER, Background, Workspace, package_module, text

AREA = "import math\n\n\ndef area(r):\n    return 3.14 * r * r\n"


class SmokeRun(DeferrableTestCase):
    def test_sublime_text_is_build_4205_or_later(self) -> None:
        # The 3.14 plugin host the package needs; the channel entry asks for it too.
        self.assertGreaterEqual(int(sublime.version()), 4205)

    def setUp(self) -> Any:
        self.workspace = Workspace()
        yield from self.workspace.open()

    def tearDown(self) -> None:
        self.workspace.close()

    def test_the_server_is_up_with_its_lock_file(self) -> Any:
        lock = self.workspace.lock()
        self.assertIsNotNone(lock)
        self.assertEqual(lock["file"].name, f"{lock['port']}.lock")
        self.assertTrue(0 < lock["port"] < 65536)
        self.assertGreaterEqual(len(lock["authToken"]), 32)
        self.assertEqual(lock["ideInfo"]["name"], "sublimetext")
        yield

    def test_a_review_goes_to_the_editor_and_its_answer_back(self) -> Any:
        path = self.workspace.file("app.py", "x = 1\n")
        connecting = self.workspace.cli()
        yield connecting
        cli = connecting.result()
        opening = Background(lambda: cli.open_diff(path, "x = 2\n"))
        pair = yield lambda: self.workspace.review(path)
        yield opening
        self.assertEqual(opening.result(), {"content": [], "isError": False})
        original, proposed = pair
        self.assertEqual(text(original), "x = 1\n")
        self.assertEqual(text(proposed), "x = 2\n")
        proposed.run_command("qwen_accept_diff")
        answer = Background(cli.next_notification)
        yield answer
        self.assertEqual(answer.result(), {
            "jsonrpc": "2.0", "method": "ide/diffAccepted", "params": {"filePath": str(path), "content": "x = 2\n"},
        })
        yield lambda: not self.workspace.review_views()
        self.assertEqual(path.read_text(encoding="utf-8"), "x = 1\n")  # qwen writes the file, not the editor

    def test_the_chat_opens_and_the_agent_answers(self) -> Any:
        window = self.workspace.require_window()
        window.run_command("qwen_chat")
        chats = package_module("plugin.chat.window_chats").chats
        chat = yield lambda: chats.get(window) and chats.get(window).composer_view and chats.get(window)
        composer = chat.composer_view
        self.assertTrue(chat.transcript_view.is_read_only())
        composer.run_command("insert", {"characters": "hi there"})
        composer.run_command("qwen_chat_send")
        yield lambda: AGENT_ANSWER in text(chat.transcript_view)
        self.assertIn("## You\n\nhi there", text(chat.transcript_view))

    def test_a_quick_action_answers_from_the_scripted_cli(self) -> Any:
        view = yield from self.workspace.open_file("geometry.py", AREA)
        start = AREA.index("def area")
        view.sel().clear()
        view.sel().add(sublime.Region(start, len(AREA)))
        view.run_command("qwen_action", {"action": "explain"})

        def answer() -> sublime.View | None:
            window = self.workspace.require_window()
            return next((v for v in window.views() if v.settings().get("qwen_actions.answer")), None)

        answer_view = yield answer
        yield lambda: ACTION_ANSWER in text(answer_view)
        self.assertTrue(text(answer_view).startswith("# Explain Selection\n"))
