"""A hostile agent floods the chat with tool calls (issue 24, item 9): the
main thread never runs a transcript update longer than 100 ms of CPU (the
watchdog), and an update's work follows what it adds, never the length of the
transcript (counted, not timed)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest

from tests.sim.test_chat import ChatRig
from tests.sublime_sim._rope import Rope

FLOOD_WAIT = 300.0


def turn_ended(rig: ChatRig) -> None:
    rig.host.wait_for(lambda: any(e == "chat_turn_ended" for e, _ in rig.events), timeout=FLOOD_WAIT)


def test_a_flood_of_tool_calls_never_blocks_the_main_thread(rig: ChatRig) -> None:
    rig.load([[{"tool_calls": 10_000}]])
    rig.open()
    rig.host.wait_idle()
    rig.host.watchdog.take()
    rig.host.watchdog.limit_ms = 100  # the goal
    try:
        rig.send("flood")
        turn_ended(rig)
        text = rig.transcript()
        assert rig.host.watchdog.take() == []
    finally:
        rig.host.watchdog.limit_ms = None
    assert text.count("read `read f") == 10_000 and "`read f9999.py` — completed" in text


class Update:
    def __init__(self, added: int) -> None:
        self.added = added  # characters the update's edits carry
        self.read = 0  # characters of the view's text handed to the package
        self.calls = 0  # Python calls made


def test_an_updates_work_follows_its_edits_not_the_transcripts_length(rig: ChatRig, monkeypatch: pytest.MonkeyPatch) -> None:
    updates: list[Update] = []
    current: list[Update] = []
    main = threading.current_thread()  # replaced below by the thread that applies updates

    def counting(method: Callable[..., str]) -> Callable[..., str]:
        def read(self: Rope, *args: int) -> str:
            text = method(self, *args)
            if current and threading.current_thread() is main:
                current[0].read += len(text)
            return text
        return read

    monkeypatch.setattr(Rope, "__str__", counting(Rope.__str__))
    monkeypatch.setattr(Rope, "substr", counting(Rope.substr))
    # The profiler below multiplies what each update costs: the main-thread
    # limit is the test above's (100 ms, with nothing counting).
    rig.host.watchdog.limit_ms = None
    # Paced (16 pauses, each three of the streamer's batch intervals), so that
    # the editor applies the flood in many updates however fast the agent runs:
    # early and late ones are compared below.
    rig.load([[{"tool_calls": 4000, "pause_every": 250, "pause": 0.15}]])
    rig.open()
    window_chat = rig.chat()
    original = window_chat.apply_pending

    def counted_apply() -> None:
        nonlocal main
        main = threading.current_thread()
        with window_chat._pending_lock:
            added = sum(len(edit.text) for edit in window_chat._pending)
        update = Update(added)
        current[:] = [update]

        def profile(frame: FrameType, event: str, arg: Any) -> None:
            if event == "call":
                update.calls += 1

        sys.setprofile(profile)
        try:
            original()
        finally:
            sys.setprofile(None)
            current.clear()
        if added:
            updates.append(update)

    window_chat.apply_pending = counted_apply
    rig.send("flood")
    turn_ended(rig)
    assert rig.transcript().count("— completed") == 4000
    assert len(updates) >= 8
    for update in updates:
        assert update.read <= update.added + 1000, "an update read the transcript, not just what it added"
    quarter = len(updates) // 4

    def calls_per_char(part: list[Update]) -> float:
        return sum(u.calls for u in part) / sum(u.added for u in part)

    assert calls_per_char(updates[-quarter:]) <= 2 * calls_per_char(updates[:quarter]) + 0.01
