"""What qwen offers beside the chat, against the real `qwen --acp` (0.24.4)
and the fake model: an aside answered beside the chat and kept out of the
conversation, the recap and New Chat from Summary, and Session Status."""

from __future__ import annotations

import json
import sys
import threading
from typing import Any

import pytest

from tests.e2e.test_chat_e2e import WAIT, RealChat, request_text
from tests.rig.fake_model import Reply
from tests.support.editor import PACKAGE

pytestmark = pytest.mark.e2e
SIDE_QUESTION = "This is a side question from the user"  # qwen's btw prompt (buildBtwPrompt)
RECAP_ASKED = "Generate the recap now"  # qwen's recap request (RECAP_USER_PROMPT)


def offers(module: str) -> Any:
    return sys.modules[f"{PACKAGE}.plugin.chat.offers.{module}"]


def is_side(body: dict[str, Any]) -> bool:
    return SIDE_QUESTION in request_text(body) or RECAP_ASKED in request_text(body)


def conversation_requests(real_chat: RealChat) -> list[dict[str, Any]]:
    """The model requests of the conversation itself (not the asides' or the recap's forks)."""
    return [body for body in real_chat.model.agent_requests if not is_side(body)]


def on_main(real_chat: RealChat, call: Any) -> Any:
    return real_chat.host.run_on_main(call)


def test_an_aside_is_answered_beside_the_chat_and_kept_out_of_it(real_chat: RealChat) -> None:
    asked: list[str] = []

    def answer(body: dict[str, Any]) -> str | None:
        text = request_text(body)
        if SIDE_QUESTION not in text:
            return None
        asked.append(text)
        return "PEARS-ASIDE-ANSWER" if len(asked) == 1 else "SECOND-ASIDE-ANSWER"

    real_chat.model.set_responder(answer)
    running = threading.Event()
    real_chat.model.queue("Apples are red.", Reply(text="slow words " * 300, chunk_size=5, hold=running), "Done.")
    real_chat.send("tell me about apples")
    assert real_chat.ended() == ["end_turn"]
    real_chat.send("write slowly")
    chat = real_chat.chat()
    real_chat.host.wait_for(lambda: "slow words" in chat.core.streamer.transcript.text(), timeout=WAIT)
    assert chat.core.state.agent_status == "busy"  # asked while the turn runs
    window = real_chat.host.window
    first = on_main(real_chat, lambda: offers("asides").ask(window, chat, "which fruit did we discuss?"))
    assert first.result(WAIT) == "PEARS-ASIDE-ANSWER"
    assert "which fruit did we discuss?" in asked[0] and "Apples are red." in asked[0]  # the fork sees the conversation
    follow_up = on_main(real_chat, lambda: offers("asides").ask(window, chat, "and its colour?"))
    assert follow_up.result(WAIT) == "SECOND-ASIDE-ANSWER"
    assert "which fruit did we discuss?" in asked[1] and "PEARS-ASIDE-ANSWER" in asked[1]  # the same aside thread
    assert chat.core.state.agent_status == "busy"  # both asides were answered while the turn ran
    running.set()
    assert real_chat.ended(2)[-1] == "end_turn"
    aside_view = next(v for v in window.views() if offers("asides").is_aside_view(v))
    assert "PEARS-ASIDE-ANSWER" in aside_view.substr(real_chat.host.sublime.Region(0, aside_view.size()))
    real_chat.send("and now?")
    assert real_chat.ended(3)[-1] == "end_turn"
    transcript = real_chat.transcript()
    later = request_text(conversation_requests(real_chat)[-1])
    for said in ("which fruit did we discuss?", "PEARS-ASIDE-ANSWER", "and its colour?", "SECOND-ASIDE-ANSWER"):
        assert said not in transcript
        assert said not in later  # the conversation never saw the aside
    assert "and now?" in later and "Apples are red." in later
    kept = offers("asides").aside_thread(chat).asides()
    assert [(a.question, a.answer) for a in kept] == [("which fruit did we discuss?", "PEARS-ASIDE-ANSWER"),
                                                      ("and its colour?", "SECOND-ASIDE-ANSWER")]


def test_a_recap_is_noted_and_starts_a_new_chat(real_chat: RealChat) -> None:
    recap = "Comparing apples and pears. Next: pick one."
    real_chat.model.set_responder(lambda body: f"<recap>{recap}</recap>" if RECAP_ASKED in request_text(body) else None)
    real_chat.model.queue("Apples and pears compared.", "Picked one.")
    real_chat.send("compare apples and pears")
    assert real_chat.ended() == ["end_turn"]
    chat = real_chat.chat()
    window = real_chat.host.window
    assert on_main(real_chat, lambda: offers("recap_commands").summarize(window, chat)).result(WAIT) == recap
    real_chat.host.wait_for(lambda: f"Summary: {recap}" in real_chat.transcript(), timeout=WAIT)
    made = on_main(real_chat, lambda: offers("recap_commands").new_from_summary(window, chat)).result(WAIT)
    assert made is not None and made is not chat and real_chat.chat() is made
    real_chat.host.user.type(made.composer_view, "go on from there")
    real_chat.host.user.press_key("enter")
    assert real_chat.ended(2)[-1] == "end_turn"
    first = request_text(conversation_requests(real_chat)[-1])
    assert recap in first and "go on from there" in first
    assert "compare apples and pears" not in first  # a new conversation: only the summary came along


def test_session_status_gives_the_context_and_the_stats(real_chat: RealChat) -> None:
    real_chat.model.queue(Reply(text="Counted.", usage=(1200, 30, 0)))
    real_chat.send("count something")
    assert real_chat.ended() == ["end_turn"]
    chat = real_chat.chat()
    status = offers("status_panel").read(chat).result(WAIT)
    report = status.report()
    json.dumps(report)  # the driver's answer as it is
    context = report["context"]
    assert isinstance(context["used"], int) and isinstance(context["size"], int)
    assert context["used"] == 1200 and context["size"] > context["used"]
    assert context["parts"]["systemPrompt"] > 0 and "thresholds" not in context["parts"]
    assert report["stats"]["requests"] == 1 and report["stats"]["inputTokens"] == 1200
    assert report["stats"]["prompts"] == 1
    assert "btw" in report["commands"] and report["tasks"] == [] and report["agents"] == []
    assert "fake-model" in report["model"]
    window = real_chat.host.window
    real_chat.host.user.run_command("qwen_chat_session_status", via="palette")
    panel = real_chat.host.wait_for(lambda: window.find_output_panel("qwen_session_status"), timeout=WAIT)
    real_chat.host.wait_for(lambda: "Context: 1,200 of" in panel.substr(real_chat.host.sublime.Region(0, panel.size())),
                            timeout=WAIT)
    assert "(Session Status)" in chat.composer_view.get_status("qwen_chat")


def test_memory_files_are_named_and_a_refused_remember_is_said(real_chat: RealChat, workspace: Any) -> None:
    real_chat.send("hello")
    assert real_chat.ended() == ["end_turn"]
    chat = real_chat.chat()
    memory = sys.modules[f"{PACKAGE}.core.chat.offers.memory"]
    paths = dict(chat.core.calls.ask_qwen("Open Memory Files", memory.memory_paths).result(WAIT))
    assert paths["this project's memory"] == str(workspace / "QWEN.md")
    assert paths["your memory (every project)"].endswith("/.qwen/QWEN.md")
    # The rig's qwen settings turn managed memory off: qwen refuses, and says why.
    window = real_chat.host.window
    asked = on_main(real_chat, lambda: offers("memory_commands").change_memory(window, chat, "remember", "tests: make"))
    error = asked.exception(WAIT)
    assert error is not None and "Managed memory is unavailable" in str(error)
    real_chat.model.queue("Still fine.")
    real_chat.send("still there?")
    assert real_chat.ended(2)[-1] == "end_turn"
