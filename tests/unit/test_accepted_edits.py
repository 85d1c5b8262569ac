"""A text the user accepted in a review belongs to its tool call's write, and
never outlives that call or its turn."""

from __future__ import annotations

from qwencompanion_src.core.chat.requests.accepted_edits import AcceptedEdits


def test_the_write_of_the_file_takes_the_text_once() -> None:
    edits = AcceptedEdits()
    assert edits.keep("call1", "/w/a.py", "mine\n", edits.turn)
    assert edits.take("/w/b.py") is None
    assert edits.take("/w/a.py") == "mine\n"
    assert edits.take("/w/a.py") is None


def test_the_text_goes_when_its_call_ends_without_the_write() -> None:
    edits = AcceptedEdits()
    edits.keep("call1", "/w/a.py", "mine\n", edits.turn)
    edits.keep("call2", "/w/b.py", "other\n", edits.turn)
    edits.call_ended("call1")
    assert edits.take("/w/a.py") is None
    assert edits.take("/w/b.py") == "other\n"


def test_the_text_goes_when_its_turn_ends_without_the_write() -> None:
    edits = AcceptedEdits()
    edits.keep("call1", "/w/a.py", "mine\n", edits.turn)
    edits.turn_ended()
    assert edits.take("/w/a.py") is None


def test_a_text_accepted_after_its_call_ended_is_not_kept() -> None:
    edits = AcceptedEdits()
    turn = edits.turn
    edits.call_ended("call1")
    assert not edits.keep("call1", "/w/a.py", "mine\n", turn)
    assert edits.take("/w/a.py") is None


def test_a_text_accepted_after_its_turn_ended_is_not_kept() -> None:
    edits = AcceptedEdits()
    asked_in = edits.turn
    edits.turn_ended()  # the agent ended its turn with the prompt still open
    assert not edits.keep("call1", "/w/a.py", "mine\n", asked_in)
    assert edits.take("/w/a.py") is None  # the next turn's write of the file gets the agent's text
    # A prompt asked in the new turn keeps its text.
    assert edits.keep("call1", "/w/a.py", "mine\n", edits.turn)
