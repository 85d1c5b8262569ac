"""A hostile agent's huge mode name and a flood of usage updates in the
simulated editor with the BUILT package: names are cut when adopted, and
the status bar is refreshed once for the updates that arrived while the main
thread was busy, not once per update (counted, not timed)."""

from __future__ import annotations

import sys
from typing import Any

from tests.sim.test_chat import ChatRig
from tests.sim.test_chat_notify import usage_chunk
from tests.support.editor import PACKAGE

UPDATES = 2000
HUGE = 2 * 1024 * 1024


def test_a_huge_mode_name_is_cut_and_a_usage_flood_refreshes_the_status_bar_once(rig: ChatRig) -> None:
    flood: list[dict[str, Any]] = [
        {"stall": 0.5},
        {"update": {"sessionUpdate": "current_mode_update", "currentModeId": "m" * HUGE}},
        *[usage_chunk(10 + n, 1) for n in range(UPDATES)],
    ]
    rig.load([flood])
    name_cap = sys.modules[f"{PACKAGE}.core.chat.chat_state"].NAME_MAX_CHARS
    _, composer = rig.open()
    refreshes: list[int] = []
    rig.chats.status_listeners.append(refreshes.append)
    rig.host.watchdog.limit_ms = None  # the main thread is kept busy on purpose below
    held_from: list[int] = []

    def hold_the_main_thread() -> None:
        held_from.append(len(refreshes))  # on the main thread: no refresh runs from here until it returns
        while not any(event == "chat_turn_ended" for event, _ in rig.events):
            pass  # every update arrives (and asks for a refresh) while the main thread is held

    rig.send("flood")
    rig.host.sublime.set_timeout(hold_the_main_thread)
    rig.host.wait_for(lambda: any(event == "chat_turn_ended" for event, _ in rig.events), timeout=60)
    rig.host.wait_idle()
    assert len(refreshes) - held_from[0] <= 2  # the updates' one refresh (and the turn's end's), not one per update
    status = composer.get_status("qwen_chat")
    assert "m" * (name_cap - 1) + "…" in status and "m" * name_cap not in status
    assert rig.chat().core.state.usage.report()["turn"]["requests"] == UPDATES
