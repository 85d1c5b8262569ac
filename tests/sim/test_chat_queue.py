"""The prompt queue in the simulated editor, with the BUILT package and the
scripted ACP agent: queued prompts shown below the transcript (a phantom,
never the transcript's text), Edit Queued Prompt… (edit in a prefilled input
panel, move, remove; Ctrl/Cmd+Enter sends one now), Reject with a Reason
putting the reason first, and none of it moving the user's keys; no Steer
over stdio (its agent offers no way to add to a running turn), and a steer
not taken going back first in the queue."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from tests.sim.test_chat import WAIT, ChatRig
from tests.sim.test_chat_permission_rejects import REJECTED_ONCE, permission
from tests.support.editor import PACKAGE

QUEUE_KEY = "qwen_chat_queue"


def queue_phantoms(rig: ChatRig) -> list[str]:
    transcript = rig.chat().transcript_view
    state = rig.host.app.view(transcript.id())
    return [p.content for p in state.phantoms.values() if p.key == QUEUE_KEY]


def queued_texts(rig: ChatRig) -> list[str]:
    return [p.text for p in rig.chat().core.queue.prompts()]


def sent(rig: ChatRig) -> list[str]:
    return [p["params"]["prompt"][0]["text"] for p in rig.received("session/prompt")]


def busy_with(rig: ChatRig, *queued: str) -> None:
    """A turn that runs until cancelled, and `queued` typed meanwhile."""
    rig.send("running")
    rig.host.wait_for(lambda: rig.chat().core.state.agent_status == "busy", timeout=WAIT)
    for text in queued:
        rig.send(text)
    if queued:  # drawn, the last one numbered
        rig.host.wait_for(lambda: len(queue_phantoms(rig)) == 1 and f"{len(queued)}. " in queue_phantoms(rig)[0],
                          timeout=WAIT)


def test_queued_prompts_show_below_the_transcript_never_in_its_text(rig: ChatRig) -> None:
    rig.load([[{"stall": 30}], [{"chunks": ["one done"]}], [{"chunks": ["two done"]}]])
    busy_with(rig, "first <queued>", "second\nwith more lines")
    transcript = rig.chat().transcript_view
    phantom = next(p for p in rig.host.app.view(transcript.id()).phantoms.values() if p.key == QUEUE_KEY)
    assert phantom.region == (transcript.size(), transcript.size())  # after the transcript's end
    assert "1. first &lt;queued&gt;" in phantom.content and "2. second…" in phantom.content  # escaped, numbered
    assert "alpha(0.5)" in phantom.content  # dimmed
    text = rig.transcript()
    assert "first <queued>" not in text and "second" not in text
    rig.host.user.run_command("qwen_chat_cancel")  # Esc drops them: the display goes with them
    rig.host.wait_for(lambda: queue_phantoms(rig) == [], timeout=WAIT)
    assert "2 queued prompt(s) dropped" in rig.transcript()


def test_a_thousand_queued_prompts_show_ten_and_a_count(rig: ChatRig) -> None:
    rig.load([[{"stall": 30}]])
    busy_with(rig)
    conversation = rig.chat().core
    for n in range(1000):
        assert conversation.send(f"prompt {n}")
    conversation.queue_changed()
    rig.host.wait_for(lambda: queue_phantoms(rig) and "… and 990 more" in queue_phantoms(rig)[0], timeout=WAIT)
    content = queue_phantoms(rig)[0]
    assert "10. prompt 9<" in content and "prompt 10<" not in content
    _, composer = rig.open()
    rig.host.user.type(composer, "one too many")
    rig.host.user.press_key("enter")
    assert rig.editor.text(composer) == "one too many"  # refused before the composer was emptied
    assert len(conversation.queue) == 1000


def test_edit_queued_prompt_edits_in_a_prefilled_input_panel(rig: ChatRig) -> None:
    rig.load([[{"stall": 30}], [{"chunks": ["ok"]}], [{"chunks": ["ok"]}]])
    busy_with(rig, "fix the tset", "then lint")
    rig.host.user.run_command("qwen_chat_queued")
    rig.host.user.choose_quick_panel(0)  # Enter: the prompt's actions
    rig.host.user.choose_quick_panel("Edit…")
    assert rig.host.input_panels[-1].initial_text == "fix the tset"
    rig.host.user.submit_input_panel("fix the test")
    assert queued_texts(rig) == ["fix the test", "then lint"]
    rig.host.wait_for(lambda: "1. fix the test" in queue_phantoms(rig)[0], timeout=WAIT)


@pytest.mark.parametrize(("action", "expected"), [("Move Down", ["b", "a", "c"]), ("Remove", ["b", "c"])])
def test_move_and_remove_from_the_actions(rig: ChatRig, action: str, expected: list[str]) -> None:
    rig.load([[{"stall": 30}]])
    busy_with(rig, "a", "b", "c")
    rig.host.user.run_command("qwen_chat_queued")
    rig.host.user.choose_quick_panel(0)
    rig.host.user.choose_quick_panel(action)
    assert queued_texts(rig) == expected
    rig.host.wait_for(lambda: f"1. {expected[0]}<" in queue_phantoms(rig)[0], timeout=WAIT)


def test_ctrl_enter_on_a_queued_prompt_sends_it_now(rig: ChatRig) -> None:
    rig.load([[{"stall": 30}], [{"chunks": ["b answered"]}], [{"chunks": ["a answered"]}]])
    busy_with(rig, "a", "b")
    rig.host.user.run_command("qwen_chat_queued")
    assert "Ctrl+Enter: send now" in (rig.host.quick_panels[-1].placeholder or "")
    rig.host.user.choose_quick_panel(1, modifiers=("primary",))
    assert rig.ended(3) == ["cancelled", "end_turn", "end_turn"]
    assert sent(rig) == ["running", "b", "a"]
    text = rig.transcript()
    assert text.index("## You\n\nb") < text.index("b answered") < text.index("## You\n\na")


def test_a_plain_enter_does_not_send_now(rig: ChatRig) -> None:
    rig.load([[{"stall": 30}]])
    busy_with(rig, "a", "b")
    rig.host.user.run_command("qwen_chat_queued")
    rig.host.user.choose_quick_panel(1, modifiers=("shift",))
    rig.host.wait_idle()
    assert rig.host.quick_panels[-1].items[0] == "Edit…"  # the actions, nothing sent
    assert sent(rig) == ["running"] and rig.chat().core.state.agent_status == "busy"


@pytest.mark.parametrize(("kind", "raw_input"), [
    ("execute", {"command": "rm -rf build"}),
    ("fetch", {"url": "https://example.com/build"}),
    ("edit", {"file_path": "build/out.txt", "content": "x"}),
    ("delete", {"path": "build"}),
])
def test_a_reason_is_the_next_prompt_before_those_queued(rig: ChatRig, kind: str, raw_input: dict[str, Any]) -> None:
    rig.load([[permission({"toolCallId": "t1", "status": "pending", "kind": kind, "title": f"A {kind}",
                           "rawInput": raw_input}), {"stall": 1}],
              [{"chunks": ["understood"]}], [{"chunks": ["queued one answered"]}]])
    rig.send("clean")
    rig.host.wait_for(lambda: any(e == "permission_requested" for e, _ in rig.events), timeout=WAIT)
    rig.send("queued one")
    rig.host.user.run_command("qwen_chat_permission")  # every kind offers it, after the agent's options
    assert rig.host.quick_panels[-1].items[-1] == "Reject with a reason…"
    rig.host.user.choose_quick_panel("Reject with a reason…")
    rig.host.user.submit_input_panel("keep the build folder")
    assert rig.answered("session/request_permission") == [REJECTED_ONCE]
    assert rig.ended(3) == ["end_turn"] * 3
    assert sent(rig) == ["clean", "keep the build folder", "queued one"]
    assert "## You\n\nkeep the build folder" in rig.transcript()  # the user's words


def test_the_queue_changing_never_moves_the_users_keys(rig: ChatRig) -> None:
    rig.load([[{"stall": 0.5}], [{"stall": 0.5}], [{"chunks": ["done"]}]])
    code = rig.editor.open("notes.py", "x = 1\n")
    rig.send("running")
    rig.send("two")
    rig.send("three")
    rig.host.user.focus(code)
    window = rig.host.window
    group = window.active_group()
    assert rig.ended(3) == ["end_turn"] * 3  # the queue drew and emptied meanwhile
    rig.host.wait_for(lambda: queue_phantoms(rig) == [], timeout=WAIT)
    assert window.active_view() == code and window.active_group() == group


def test_the_driver_verbs_change_the_queue(rig: ChatRig) -> None:
    from tests.headless import Driver, do_queue, do_queue_edit, do_queue_move, do_queue_remove, do_send_now

    rig.load([[{"stall": 30}], [{"chunks": ["ok"]}], [{"chunks": ["ok"]}]])
    busy_with(rig, "a", "b", "c")
    driver = Driver(rig.host, lambda _: None)
    chat: dict[str, Any] = {"chat": rig.chat().chat_id}
    assert do_queue(driver, chat)["prompts"] == ["a", "b", "c"]
    assert do_queue_edit(driver, {**chat, "index": 1, "text": "B"})["prompts"] == ["a", "B", "c"]
    assert do_queue_move(driver, {**chat, "index": 2, "to": 0})["prompts"] == ["c", "a", "B"]
    assert do_queue_remove(driver, {**chat, "index": 1})["prompts"] == ["c", "B"]
    with pytest.raises(IndexError, match="2 queued"):
        do_queue_remove(driver, {**chat, "index": 2})
    do_send_now(driver, {**chat, "index": 1})
    assert rig.ended(3) == ["cancelled", "end_turn", "end_turn"]
    assert sent(rig) == ["running", "B", "c"]


def test_steer_is_not_offered_on_stdio(rig: ChatRig) -> None:
    """ACP over stdio has no way to add to a running turn: the queued prompt's
    actions have no Steer, and asking for one by name leaves it queued."""
    rig.load([[{"stall": 30}]])
    busy_with(rig, "a", "b")
    rig.host.user.run_command("qwen_chat_queued")
    rig.host.user.choose_quick_panel(0)
    assert rig.host.quick_panels[-1].items == ["Edit…", "Send Now (stops the running turn)", "Move Up", "Move Down",
                                               "Remove"]
    rig.host.user.run_command("qwen_chat_queued", {"index": 0, "action": "steer"}, via="palette")
    rig.host.wait_idle()
    assert queued_texts(rig) == ["a", "b"] and sent(rig) == ["running"]


def test_a_steer_the_agent_cannot_take_goes_back_first_in_the_queue(rig: ChatRig) -> None:
    """A steer not taken (here the stdio agent's refusal; on serve a turn that
    ended first) is not lost: the prompt goes out next instead."""
    rig.load([[{"stall": 30}]])
    busy_with(rig, "a", "b")
    conversation = rig.chat().core
    conversation.steer(conversation.queue.prompts()[1])
    rig.host.wait_for(lambda: "not steered" in rig.transcript(), timeout=WAIT)
    assert queued_texts(rig) == ["b", "a"] and sent(rig) == ["running"]
    assert "offers no way to add to a running turn" in rig.transcript()


def test_the_queue_stays_below_text_the_agent_adds_after_it_was_drawn(rig: ChatRig) -> None:
    """Each append to the transcript draws the queue again after the new end:
    its place never depends on how Sublime moves an empty phantom region."""
    rig.load([[{"stall": 2}, {"chunks": ["late words"]}, {"stall": 30}]])
    busy_with(rig, "queued meanwhile")
    rig.host.wait_for(lambda: "late words" in rig.transcript(), timeout=WAIT)
    rig.host.wait_idle()
    transcript = rig.chat().transcript_view
    phantom, = (p for p in rig.host.app.view(transcript.id()).phantoms.values() if p.key == QUEUE_KEY)
    assert phantom.region == (transcript.size(), transcript.size())
    rig.host.user.run_command("qwen_chat_cancel")


@pytest.mark.parametrize(("place", "action"), [(2, "Move Down"), (0, "Move Up")])
def test_moving_the_last_prompt_down_or_the_first_up_leaves_the_queue_as_it_is(
        rig: ChatRig, place: int, action: str) -> None:
    rig.load([[{"stall": 30}]])
    busy_with(rig, "a", "b", "c")
    rig.host.user.run_command("qwen_chat_queued")
    rig.host.user.choose_quick_panel(place)
    rig.host.user.choose_quick_panel(action)
    rig.host.wait_idle()
    assert queued_texts(rig) == ["a", "b", "c"]
    rig.host.assert_no_errors()  # no traceback in the console
    rig.host.user.run_command("qwen_chat_queued")  # and the queue's panel opens again
    assert rig.host.quick_panels[-1].items[0] == "1. a"


def test_esc_in_the_queue_panel_closes_it_without_an_error(rig: ChatRig) -> None:
    """Sublime calls a WANT_EVENT panel's callback with the index alone on Esc."""
    rig.load([[{"stall": 30}]])
    busy_with(rig, "a")
    rig.host.user.run_command("qwen_chat_queued")
    rig.host.user.cancel_quick_panel()
    rig.host.wait_idle()
    rig.host.assert_no_errors()
    assert queued_texts(rig) == ["a"] and all(q.done for q in rig.host.quick_panels)


def test_closing_a_chats_tabs_frees_what_was_held_for_its_transcript(rig: ChatRig) -> None:
    """The transcript's folds and its drawn queue are held by view id: a
    closed tab leaves nothing behind (a long session opens many)."""
    rig.load([[{"stall": 30}]])
    busy_with(rig, "queued meanwhile")
    views = sys.modules[f"{PACKAGE}.plugin.chat.transcript.chat_views"]
    queue_view = sys.modules[f"{PACKAGE}.plugin.chat.transcript.queue_view"]
    chat = rig.chat()
    transcript, composer = chat.transcript_view, chat.composer_view
    assert transcript.id() in views._work_folds and transcript.id() in queue_view._drawn
    rig.host.user.run_command("qwen_chat_cancel")
    rig.host.user.close(composer)
    rig.host.user.close(transcript)
    rig.host.wait_idle()
    assert not transcript.is_valid()
    assert transcript.id() not in views._work_folds and transcript.id() not in queue_view._drawn

