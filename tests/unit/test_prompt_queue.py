"""The prompt queue: its operations and bounds (prompt_queue.py), and the
chat's use of it against the scripted ACP agent: queued prompts go out in the
user's order, Send Now stops the running turn for the chosen prompt, a
reason goes before the prompts already queued, Esc drops them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from qwencompanion_src.core.chat.prompts.prompt_queue import (
    MAX_QUEUED,
    QUEUE_FULL,
    PromptQueue,
    QueuedPrompt,
    QueueFull,
)
from tests.unit.test_chat_core import WAIT, Rig, wait_for


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    scripted = Rig(tmp_path)  # the scripted ACP agent's chats
    yield scripted
    scripted.close()


def texts(queue: PromptQueue) -> list[str]:
    return [p.text for p in queue.prompts()]


def filled(*words: str) -> PromptQueue:
    queue = PromptQueue()
    for word in words:
        queue.add(QueuedPrompt(word))
    return queue


def test_prompts_come_out_in_order_and_first_goes_before_the_rest() -> None:
    queue = filled("one", "two")
    assert queue.add(QueuedPrompt("why"), first=True) == 3
    assert [queue.take().text for _ in range(3)] == ["why", "one", "two"]  # type: ignore[union-attr]
    assert queue.take() is None


def test_edit_remove_and_move_act_on_the_prompt_the_user_picked() -> None:
    queue = filled("a", "b", "c", "d")
    picked = queue.at(2)
    queue.take()  # a turn ends between the pick and the change: every index moved
    queue.edit(picked, "C!")
    assert texts(queue) == ["b", "C!", "d"]
    queue.move(picked, 0)
    assert texts(queue) == ["C!", "b", "d"]
    queue.move(picked, 2)
    assert texts(queue) == ["b", "d", "C!"]
    queue.remove(queue.at(0))
    assert texts(queue) == ["d", "C!"]


def test_a_prompt_that_went_out_cannot_be_changed() -> None:
    queue = filled("a", "a")
    gone = queue.at(0)
    assert queue.take() is gone
    for change in (lambda: queue.edit(gone, "x"), lambda: queue.remove(gone), lambda: queue.move(gone, 0)):
        with pytest.raises(ValueError, match="no longer queued"):
            change()
    assert texts(queue) == ["a"]  # the other prompt with the same words is untouched


def test_indexes_out_of_range_are_refused_with_the_count() -> None:
    queue = filled("a")
    with pytest.raises(IndexError, match="1 queued"):
        queue.at(1)
    with pytest.raises(IndexError):
        queue.at(-1)
    with pytest.raises(IndexError):
        queue.move(queue.at(0), 5)


def test_the_queue_holds_at_most_a_thousand_prompts_and_says_why() -> None:
    queue = filled(*(f"p{n}" for n in range(MAX_QUEUED)))
    assert queue.full()
    with pytest.raises(QueueFull, match="1,000 prompts are queued"):
        queue.add(QueuedPrompt("one more"))
    with pytest.raises(QueueFull):
        queue.add(QueuedPrompt("a reason"), first=True)
    assert len(queue) == MAX_QUEUED and "remove some" in QUEUE_FULL
    queue.remove(queue.at(500))
    assert not queue.full()


def test_every_change_moves_the_version_a_display_redraws_on() -> None:
    queue = filled("a", "b")
    seen = {queue.version}
    for change in (lambda: queue.edit(queue.at(0), "A"), lambda: queue.move(queue.at(1), 0),
                   lambda: queue.remove(queue.at(0)), queue.take, queue.clear):
        change()
        assert queue.version not in seen
        seen.add(queue.version)


def sent_prompts(rig: Rig) -> list[str]:
    return [p["params"]["prompt"][0]["text"] for p in rig.received("session/prompt")]


def test_the_users_order_is_the_order_the_turns_take(rig: Rig) -> None:
    chat, view, events = rig.chat([[{"stall": 30}], [{"chunks": ["x"]}], [{"chunks": ["y"]}], [{"chunks": ["z"]}]])
    chat.send("running")
    wait_for(lambda: rig.turns_taken() == 1)
    for word in ("one", "two", "three"):
        assert chat.send(word)
    queue = chat.queue
    queue.edit(queue.at(1), "TWO")
    queue.move(queue.at(2), 0)  # three, one, TWO
    queue.remove(queue.at(1))  # three, TWO
    chat.queue_changed()
    wait_for(lambda: chat.state.queued == 2)
    chat.send_now(queue.at(1))  # TWO next, the stalled turn stopped for it
    wait_for(lambda: len(events.ended) == 3)
    assert events.ended == ["cancelled", "end_turn", "end_turn"]
    assert sent_prompts(rig) == ["running", "TWO", "three"]
    assert view.text.index("## You\n\nTWO") < view.text.index("## You\n\nthree")
    assert chat.state.queued == 0


def test_a_reason_goes_before_the_prompts_queued_already(rig: Rig) -> None:
    gate = rig.tmp / "running-turn-may-end"  # both prompts are queued before it ends, however slow the machine
    chat, view, events = rig.chat([[{"gate": str(gate)}], [{"chunks": ["a"]}], [{"chunks": ["b"]}]])
    chat.send("running")
    wait_for(lambda: rig.turns_taken() == 1)
    chat.send("queued earlier")
    chat.send("do not touch the tests", first=True)
    wait_for(lambda: chat.state.queued == 2)
    gate.touch()
    wait_for(lambda: len(events.ended) == 3)
    assert sent_prompts(rig) == ["running", "do not touch the tests", "queued earlier"]
    assert "## You\n\ndo not touch the tests" in view.text  # the user's words, as the user's


def test_a_full_queue_refuses_the_prompt_in_the_transcript(rig: Rig) -> None:
    chat, view, events = rig.chat([[{"stall": 30}]])
    chat.send("running")
    wait_for(lambda: rig.turns_taken() == 1)
    for n in range(MAX_QUEUED):
        assert chat.send(f"p{n}")
    assert not chat.send("too many")
    wait_for(lambda: QUEUE_FULL in view.text)
    assert "too many" not in chat.history
    chat.cancel()  # Esc: the turn stops and the queued prompts are dropped
    wait_for(lambda: events.ended == ["cancelled"])
    wait_for(lambda: f"{MAX_QUEUED} queued prompt(s) dropped" in view.text)
    assert len(chat.queue) == 0 and sent_prompts(rig) == ["running"]


def test_send_now_of_a_prompt_a_turn_already_took_does_not_cancel_that_turn(rig: Rig) -> None:
    gate = rig.tmp / "turn-may-end"  # the turn still runs when Send Now comes, however slow the machine
    chat, view, events = rig.chat([[{"chunks": ["partial "]}, {"gate": str(gate)}]])
    chat.send("second")
    wait_for(lambda: "partial" in view.text)  # its turn runs: the prompt has left the queue
    taken = QueuedPrompt("second")  # Send Now's prompt, taken by a turn's end before it reached the chat's thread
    rig.thread.submit(chat._send_now(taken)).result(WAIT)
    gate.touch()
    wait_for(lambda: events.ended)
    assert events.ended == ["end_turn"] and not rig.received("session/cancel")


def test_move_by_keeps_a_prompt_within_the_queue() -> None:
    queue = PromptQueue()
    a, b, c = QueuedPrompt("a"), QueuedPrompt("b"), QueuedPrompt("c")
    for prompt in (a, b, c):
        queue.add(prompt)
    queue.move_by(c, 1)  # Move Down on the last
    queue.move_by(a, -1)  # Move Up on the first
    assert [p.text for p in queue.prompts()] == ["a", "b", "c"]
    queue.move_by(a, 1)
    assert [p.text for p in queue.prompts()] == ["b", "a", "c"]
    queue.take()  # a turn takes "b" between the user's pick and the move
    queue.move_by(c, 1)
    assert [p.text for p in queue.prompts()] == ["a", "c"]
