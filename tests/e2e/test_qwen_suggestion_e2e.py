"""qwen's follow-up suggestion in the composer, against the real `qwen --acp`
(0.24.4) with its suggestions on (the rig's HOME turns them off elsewhere):
qwen sends one after a turn that ended normally once the session holds two answers."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_chat_e2e import WAIT, RealChat, request_text
from tests.rig.qwen_cli import make_home
from tests.support.editor import PACKAGE

pytestmark = pytest.mark.e2e
SUGGESTION_ASKED = "[SUGGESTION MODE"  # qwen's suggestion request (SUGGESTION_PROMPT)


@pytest.fixture
def qwen_home(tmp_path: Path) -> Path:
    return make_home(tmp_path, settings={"ui": {"enableFollowupSuggestions": True}})


def suggestions() -> Any:
    return sys.modules[f"{PACKAGE}.plugin.chat.offers.suggestions"]


def test_a_suggestion_shows_in_the_empty_composer_and_is_sent_only_once_accepted(real_chat: RealChat) -> None:
    real_chat.model.set_responder(
        lambda body: '{"suggestion": "run the tests\\u202e now"}' if SUGGESTION_ASKED in request_text(body) else None)
    real_chat.model.queue("First.", "Second.", "Third.")
    real_chat.send("one")
    assert real_chat.ended() == ["end_turn"]
    real_chat.send("two")
    assert real_chat.ended(2)[-1] == "end_turn"
    chat = real_chat.chat()
    shown = real_chat.host.wait_for(lambda: real_chat.host.run_on_main(lambda: suggestions().shown_suggestion(chat)),
                                    timeout=WAIT)
    assert shown == "run the tests now"  # the bidi override is gone
    composer = chat.composer_view
    ghosts = lambda: [content for _, _, content in real_chat.host.drawn_phantoms(composer)  # noqa: E731
                      if "qwen-suggestion" in content]
    real_chat.host.wait_for(lambda: ghosts(), timeout=WAIT)
    assert "run the tests now" in ghosts()[0]
    sent_before = len(real_chat.model.agent_requests)
    assert all("run the tests" not in request_text(b) for b in real_chat.model.agent_requests
               if SUGGESTION_ASKED not in request_text(b))  # shown, never sent
    real_chat.host.user.focus(composer)
    real_chat.host.user.press_key("right")
    real_chat.host.wait_idle()
    assert composer.substr(real_chat.host.sublime.Region(0, composer.size())) == "run the tests now"
    assert ghosts() == []  # the composer holds text: the ghost is gone
    assert len(real_chat.model.agent_requests) == sent_before  # accepting does not send
    real_chat.host.user.press_key("enter")
    assert real_chat.ended(3)[-1] == "end_turn"
    last = [b for b in real_chat.model.agent_requests if SUGGESTION_ASKED not in request_text(b)][-1]
    assert "run the tests now" in request_text(last)
