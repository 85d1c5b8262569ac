"""A hostile agent's session list (Chat History) in the simulated editor with
the BUILT package: the list kept and shown is bounded (MAX_LISTED_SESSIONS),
each title is cut to the cap qwen puts on renameSession (TITLE_MAX_CHARS),
and the message read from the agent is let go once handled, not held while
the agent is idle (counted in objects, not timed); a list longer than the
editor takes is answered with a clear message, not waited for."""

from __future__ import annotations

import gc
import sys
from typing import Any

from tests.sim.test_chat import WAIT, ChatRig
from tests.support.editor import PACKAGE


def agents_module() -> Any:
    return sys.modules[f"{PACKAGE}.core.chat.agent.agents"]


def held_session_lists(longer_than: int) -> int:
    """Lists of more than `longer_than` made-up sessions still reachable in this process."""
    gc.collect()
    return sum(1 for thing in gc.get_objects()
               if isinstance(thing, list) and len(thing) > longer_than and isinstance(thing[-1], dict)
               and str(thing[-1].get("sessionId", "")).startswith("listed-"))


CAP, TITLE_CAP = 1000, 200  # checked against the package's own once it is loaded


def test_a_huge_session_list_is_bounded_titles_are_capped_and_nothing_is_held_once_shown(rig: ChatRig) -> None:
    rig.script_extras["listed_sessions"] = {"count": CAP + 500, "title_chars": TITLE_CAP * 5}
    rig.load([[{"chunks": ["Hi."]}]])
    cap, title_cap = agents_module().MAX_LISTED_SESSIONS, agents_module().TITLE_MAX_CHARS
    assert (cap, title_cap) == (CAP, TITLE_CAP)
    rig.send("hello")  # the agent started and answered: the list is the last thing it sends
    assert rig.ended() == ["end_turn"]
    rig.host.wait_for(lambda: rig.chat().core.state.commands, timeout=WAIT)  # its last unasked update came
    rig.host.wait_idle()
    rig.host.user.run_command("qwen_chat_sessions")
    panel = rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)[0]
    titles = [str(getattr(item, "trigger", item)) for item in panel.items]
    assert len(titles) == cap
    assert titles[0] == "hello" and {len(title) for title in titles[1:]} == {title_cap}
    rig.host.user.cancel_quick_panel()
    rig.host.wait_idle()
    del panel
    assert held_session_lists(cap) == 0  # the agent's whole list is gone, the agent idle


def test_a_session_list_longer_than_the_editor_takes_is_answered_with_a_clear_message(rig: ChatRig) -> None:
    # Two titles of 17 MiB: one session/list answer of more than MAX_MESSAGE_BYTES (32 MiB).
    rig.script_extras["listed_sessions"] = {"count": 2, "title_chars": 17 * 1024 * 1024}
    rig.load([[{"chunks": ["Hi."]}]])
    rig.send("hello")
    assert rig.ended() == ["end_turn"]
    rig.host.wait_idle()
    rig.host.user.run_command("qwen_chat_sessions")
    said = rig.host.wait_for(lambda: [m for m in rig.host.status_messages if "could not list the sessions" in m],
                             timeout=WAIT)
    assert "the agent's answer was 34 MB, more than the 32 MB the editor takes" in said[0]
    assert not [q for q in rig.host.quick_panels if not q.done]
