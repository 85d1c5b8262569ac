"""The prompt queue against the real `qwen --acp` (0.24.4) and the fake
model, through the headless driver's verbs: prompts typed during a turn go
out in order as the next turns, Send Now stops the running turn for the
chosen one, and a rejection's reason is the model's next user message,
before the prompts queued already."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_chat_e2e import WAIT, RealChat
from tests.headless import ACTIONS, Driver
from tests.rig.fake_model import Reply, is_agent_request, tool_call, user_texts

pytestmark = pytest.mark.e2e
COMMANDS = Path(__file__).resolve().parents[2] / "Default.sublime-commands"
SLOW = Reply(text="slow words " * 400, chunk_size=5, delay=0.05)  # about 40 s unless cancelled


def driver_of(chat: RealChat) -> Driver:
    driver = Driver(chat.host, lambda _: None)
    driver.windows[chat.host.window.id()] = chat.host.window
    return driver


def do(driver: Driver, verb: str, **action: Any) -> dict[str, Any]:
    return ACTIONS[verb](driver, action)


def turns_asked(chat: RealChat, prompts: list[str]) -> bool:
    """Whether the agent requests' newest user messages end with `prompts`, in
    order (the CLI puts its reminders and the editor's context before them)."""
    newest = [user_texts(body)[-1] for body in chat.model.agent_requests]
    return len(newest) == len(prompts) and all(text.endswith(p) for text, p in zip(newest, prompts, strict=True))


def streaming(chat: RealChat) -> None:
    chat.host.wait_for(lambda: "slow words" in chat.chat().core.streamer.transcript.text(), timeout=WAIT)


def test_prompts_typed_during_a_turn_are_the_next_turns_in_order(real_chat: RealChat) -> None:
    driver = driver_of(real_chat)
    running = threading.Event()
    real_chat.model.queue(Reply(text="slow words " * 60, chunk_size=5, hold=running), "Second answered.", "Third answered.")
    do(driver, "chat", text="first")
    streaming(real_chat)
    assert do(driver, "chat", text="second")["queued"] == 1
    assert do(driver, "chat", text="third")["queued"] == 2
    assert do(driver, "queue")["prompts"] == ["second", "third"]
    running.set()
    assert real_chat.ended(3) == ["end_turn"] * 3
    assert turns_asked(real_chat, ["first", "second", "third"])
    text = real_chat.transcript()
    assert text.index("## You\n\nsecond") < text.index("Second answered.") < text.index("## You\n\nthird")
    assert do(driver, "queue")["prompts"] == []


def test_send_now_cancels_the_turn_and_sends_that_prompt_next(real_chat: RealChat) -> None:
    driver = driver_of(real_chat)
    real_chat.model.queue(SLOW, "B answered.", "A answered.")
    do(driver, "chat", text="long job")
    streaming(real_chat)
    do(driver, "chat", text="prompt a")
    do(driver, "chat", text="prompt b")
    assert do(driver, "queue_move", index=1, to=0)["prompts"] == ["prompt b", "prompt a"]
    assert do(driver, "queue_edit", index=0, text="prompt B")["prompts"] == ["prompt B", "prompt a"]
    do(driver, "send_now", index=1)  # prompt a first, now
    assert real_chat.ended(3) == ["cancelled", "end_turn", "end_turn"]
    assert turns_asked(real_chat, ["long job", "prompt a", "prompt B"])
    assert "> cancelled" in real_chat.transcript()


def test_a_rejections_reason_is_the_models_next_request_before_the_queue(real_chat: RealChat) -> None:
    driver = driver_of(real_chat)
    command = "rm -rf build"
    real_chat.model.queue(tool_call("run_shell_command", {"command": command, "description": "clean"}),
                          "Understood, the build folder stays.", "Queued one answered.")
    do(driver, "chat", text="clean up")
    real_chat.host.wait_for(lambda: any(e == "permission_requested" for e, _ in real_chat.events), timeout=WAIT)
    assert do(driver, "chat", text="queued one")["queued"] == 1
    do(driver, "permission", reason="keep the build folder, the tests read it")
    assert real_chat.ended(3) == ["end_turn"] * 3  # 0.24.4 ends the turn on the rejection
    # The tool call's request and the one after the rejection ask "clean up"; then the reason, then the queue.
    assert turns_asked(real_chat, ["clean up", "keep the build folder, the tests read it", "queued one"])
    text = real_chat.transcript()
    assert "## You\n\nkeep the build folder, the tests read it" in text  # the user's words
    assert text.index("Understood, the build folder stays.") < text.index("## You\n\nqueued one")


def test_qwen_offers_no_way_to_add_to_a_running_turn_so_no_steer_is_shown(real_chat: RealChat) -> None:
    """Steer would need a method that adds words to the running turn. 0.24.4
    advertises none at initialize, answers ACP's draft session/inject "method
    not found", and its qwen/control/session/btw answers a side question
    from a fork of the session (a request without tools) that the running
    turn never sees. So the editor offers no Steer."""
    running = threading.Event()
    real_chat.model.queue(Reply(text="slow words " * 60, chunk_size=5, hold=running))
    real_chat.send("work")
    streaming(real_chat)
    conversation = real_chat.chat().core
    bridge = conversation.connection.bridge
    session = {"sessionId": conversation.state.session_id}

    def ask(method: str, params: dict[str, Any]) -> Any:
        try:  # on the chat's own thread, where its agent connection lives
            return conversation.thread.submit(bridge.request(method, params)).result(WAIT)
        except Exception as error:
            return error

    refused = ask("session/inject", {**session, "prompt": [{"type": "text", "text": "STEER-INJECT"}]})
    assert "Method not found" in str(refused)
    side = ask("qwen/control/session/btw", {**session, "question": "STEER-BTW what now?"})
    assert side == {**session, "answer": "OK."}  # the fake model's answer to a side request
    assert any("STEER-BTW" in json.dumps(body) for body in real_chat.model.requests if not is_agent_request(body))
    running.set()
    assert real_chat.ended() == ["end_turn"]
    turn_requests = [json.dumps(body) for body in real_chat.model.agent_requests]
    assert turn_requests and not any("STEER" in body for body in turn_requests)  # the turn never saw either
    palette = [entry["caption"] for entry in json.loads(COMMANDS.read_text())]
    assert not any("Steer" in caption for caption in palette)
