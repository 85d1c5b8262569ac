"""Steer on `chat_transport: "serve"` against the real `qwen serve` of
0.24.4 and the fake model, through the package loaded in the simulator: a
prompt queued during a turn is steered from Edit Queued Prompt… (offered
there on serve), the agent adds it to its next model request after the
turn's tool call, and the transcript shows it once, where it entered, marked
steered; one steered (by the headless driver's `chat_steer`) into a turn
that ends before it is taken goes as a turn of its own, shown once."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.e2e.test_chat_e2e import WAIT, RealChat
from tests.e2e.test_chat_queue_e2e import do, driver_of
from tests.rig.fake_model import Reply, read_file, user_texts
from tests.support.editor import PACKAGE
from tests.unit.test_serve_steer import words_filling_the_limit_with

pytestmark = pytest.mark.e2e

STEER_PREFIX = "[User message received during tool execution]: "  # 0.24.4's wording in the model request


def steer_from_the_queue_list(chat: RealChat, text: str, context: list[dict[str, object]] | None = None) -> None:
    """Queue `text` (with `context` attached) during the running turn, then Steer it from Edit Queued Prompt…."""
    conversation = chat.chat().core
    assert conversation.send(text, context)
    chat.host.wait_for(lambda: len(conversation.queue) == 1, timeout=WAIT)
    chat.host.user.run_command("qwen_chat_queued")
    chat.host.user.choose_quick_panel(0)  # the prompt's actions
    steer = sys.modules[f"{PACKAGE}.plugin.chat.prompts.queue_commands"].STEER
    assert steer in chat.host.quick_panels[-1].items  # offered on serve
    chat.host.user.choose_quick_panel(steer)
    chat.host.wait_for(lambda: len(conversation.queue) == 0, timeout=WAIT)


def steered_events(chat: RealChat) -> list[tuple[str, bool]]:
    return [(d["text"], d["late"]) for e, d in chat.events if e == "chat_steered"]


def a_turn_reading_the_notes(chat: RealChat, workspace: Path, then: str) -> None:
    """A turn that streams slowly, then reads a file (the tool call a steer
    waits for), then answers `then`; returns once it streams."""
    notes = workspace / "notes.txt"
    notes.write_text("alpha\n")
    chat.model.queue(
        Reply(text="Reading the notes slowly. " * 12, chunk_size=4, delay=0.05,
              tool_calls=read_file(str(notes)).tool_calls),
        Reply(text=then),
    )
    chat.send("Read the notes")
    chat.host.wait_for(lambda: "Reading the notes" in chat.chat().core.streamer.transcript.text(), timeout=WAIT)


def test_a_steer_during_a_tool_call_reaches_the_next_model_request(serve_chat: RealChat, workspace: Path) -> None:
    a_turn_reading_the_notes(serve_chat, workspace, "Switched as you asked.")
    steer_from_the_queue_list(serve_chat, "read todo.txt instead")
    assert serve_chat.ended() == ["end_turn"]
    requests = serve_chat.model.agent_requests
    assert len(requests) == 2 and "\n" + STEER_PREFIX + "read todo.txt instead" in user_texts(requests[1])
    assert not any("read todo.txt instead" in text for text in user_texts(requests[0]))
    serve_chat.host.wait_for(lambda: steered_events(serve_chat) == [("read todo.txt instead", False)], timeout=WAIT)
    text = serve_chat.transcript()
    assert text.count("read todo.txt instead") == 1  # shown once, though the daemon told of it and the model saw it
    assert text.index("Reading the notes") < text.index("Steered: added to the running turn") \
        < text.index("read todo.txt instead") < text.index("Switched as you asked.")
    assert serve_chat.chat().core.queue.prompts() == []


def test_a_steer_its_turn_never_took_goes_as_a_turn_of_its_own(serve_chat: RealChat) -> None:
    serve_chat.model.queue(Reply(text="Talking without tools. " * 16, chunk_size=4, delay=0.05),
                           Reply(text="Answered the late steer."))
    serve_chat.send("Just talk")
    serve_chat.host.wait_for(lambda: "Talking without" in serve_chat.chat().core.streamer.transcript.text(),
                             timeout=WAIT)
    conversation = serve_chat.chat().core
    assert conversation.send("and add a summary")
    assert do(driver_of(serve_chat), "chat_steer", index=0)["prompts"] == []
    assert serve_chat.ended() == ["end_turn"]
    serve_chat.host.wait_for(lambda: "Answered the late steer." in serve_chat.transcript(), timeout=WAIT)
    requests = serve_chat.model.agent_requests
    assert len(requests) == 2 and user_texts(requests[1])[-1] == "and add a summary"  # a prompt, not an addition
    assert steered_events(serve_chat) == [("and add a summary", True)]
    text = serve_chat.transcript()
    assert text.count("and add a summary") == 1  # the daemon's echo of the turn it made of it is not shown again
    assert text.index("Talking without") < text.index("the turn had ended") < text.index("and add a summary") \
        < text.index("Answered the late steer.")


def test_a_steer_with_the_editors_context_brings_it_to_the_next_model_request(
    serve_chat: RealChat, workspace: Path
) -> None:
    """A prompt carries the active file's link and the selection: Steer is
    offered for it all the same, and the model's next request holds both."""
    a_turn_reading_the_notes(serve_chat, workspace, "Looked at your selection.")
    uri = (workspace / "app.py").as_uri()
    context: list[dict[str, object]] = [
        {"type": "resource_link", "uri": uri, "name": "app.py", "description": "The user's active file."},
        {"type": "resource", "resource": {"uri": f"{uri}#L2-L2", "mimeType": "text/plain", "text": "SELECTED_LINE = 42"}},
    ]
    steer_from_the_queue_list(serve_chat, "check the selected line", context)  # offered with the context attached
    assert serve_chat.ended() == ["end_turn"]
    requests = serve_chat.model.agent_requests
    assert len(requests) == 2
    later = "\n".join(user_texts(requests[1]))
    assert "check the selected line" in later and "app.py" in later and "SELECTED_LINE = 42" in later, later[-2000:]
    serve_chat.host.wait_for(lambda: steered_events(serve_chat) == [("check the selected line", False)], timeout=WAIT)


def test_steer_is_offered_up_to_the_daemons_limit_and_the_daemon_takes_it(
    serve_chat: RealChat, workspace: Path
) -> None:
    """The daemon counts the whole message as sent (the linked file's line
    too) in UTF-16 units: a steer one emoji past that is not offered, one
    at it is offered and taken."""
    a_turn_reading_the_notes(serve_chat, workspace, "Took the long steer.")
    link: dict[str, object] = {"type": "resource_link", "uri": (workspace / "app.py").as_uri(), "name": "app.py",
                               "description": "The user's active file."}
    words = words_filling_the_limit_with([link], "\N{GRINNING FACE}")
    conversation = serve_chat.chat().core
    assert conversation.send(words + "\N{GRINNING FACE}", [link])
    serve_chat.host.wait_for(lambda: len(conversation.queue) == 1, timeout=WAIT)
    serve_chat.host.user.run_command("qwen_chat_queued")
    serve_chat.host.user.choose_quick_panel(0)
    steer = sys.modules[f"{PACKAGE}.plugin.chat.prompts.queue_commands"].STEER
    assert steer not in serve_chat.host.quick_panels[-1].items  # the daemon would refuse it
    serve_chat.host.user.cancel_quick_panel()
    conversation.queue.remove(conversation.queue.prompts()[0])
    steer_from_the_queue_list(serve_chat, words, [link])
    assert serve_chat.ended() == ["end_turn"]
    serve_chat.host.wait_for(lambda: [late for _, late in steered_events(serve_chat)] == [False], timeout=WAIT)
    assert "not steered" not in serve_chat.transcript()
