"""The chat transcript is in the chat's own syntax: at the "## You" heading
the scope is the chat's, and where the editor colours text, a chat heading."""

from __future__ import annotations

from typing import Any

import sublime
from unittesting import DeferrableTestCase

from .helpers import AGENT_ANSWER, PACKAGE, Workspace, package_module, text

SYNTAX = f"Packages/{PACKAGE}/syntaxes/QwenChat.sublime-syntax"


class ChatSyntax(DeferrableTestCase):
    def setUp(self) -> Any:
        self.workspace = Workspace()
        yield from self.workspace.open()

    def tearDown(self) -> None:
        self.workspace.close()

    def test_the_you_heading_has_the_chats_own_scope(self) -> Any:
        window = self.workspace.require_window()
        window.run_command("qwen_chat")
        chats = package_module("plugin.chat.window_chats").chats
        chat = yield lambda: chats.get(window) and chats.get(window).composer_view and chats.get(window)
        chat.composer_view.run_command("insert", {"characters": "hello"})
        chat.composer_view.run_command("qwen_chat_send")
        transcript = chat.transcript_view
        yield lambda: AGENT_ANSWER in text(transcript)

        syntax = sublime.syntax_from_path(SYNTAX)
        self.assertIsNotNone(syntax, "the chat syntax did not load")
        self.assertEqual(transcript.syntax().path, SYNTAX)
        heading = text(transcript).index("## You")
        scopes = transcript.scope_name(heading).split()
        self.assertEqual(scopes[0], syntax.scope)
        # Where text is coloured (a syntax engine runs), the heading is the chat's user heading.
        if len({transcript.scope_name(point) for point in range(transcript.size())}) > 1:
            self.assertTrue(transcript.match_selector(heading, "markup.heading.qwen-chat.user"), scopes)
