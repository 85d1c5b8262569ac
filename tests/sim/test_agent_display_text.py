"""Text an agent supplies for the chat's tabs, Switch Chat and the status bar
is shown without control or bidi characters and bounded: a title with
U+202E, ESC and NUL cannot reorder or hide what the user reads."""

from __future__ import annotations

import unicodedata
from typing import Any

from tests.sim.test_chat import WAIT, ChatRig

SPOOF = "\u202eexe.txt\u2066 \x1b[2J\x00\x9b\u200b"
HOSTILE_OPTION = {"id": "effort", "name": "Effort" + SPOOF, "type": "select", "currentValue": "high",
                  "options": [{"value": "high", "name": "High" + SPOOF}]}


def shown_cleanly(text: str) -> bool:
    return not any(unicodedata.category(char) in ("Cc", "Cf") for char in text)


def test_an_agents_title_and_option_names_lose_their_control_and_bidi_characters(rig: ChatRig) -> None:
    rig.script_extras.update(more_options=[HOSTILE_OPTION])
    rig.load([[{"update": {"sessionUpdate": "session_info_update", "title": "Report" + SPOOF}},
               {"chunks": ["Done."]}]])
    rig.send("hi")
    rig.ended()
    chat = rig.chat()
    transcript, composer = chat.transcript_view, chat.composer_view
    rig.host.wait_for(lambda: "Report" in transcript.name(), timeout=WAIT)
    status = rig.host.wait_for(lambda: composer.get_status("qwen_chat"), timeout=WAIT)
    rig.host.user.run_command("qwen_chat_switch")
    panel = rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)[0]
    items: list[Any] = panel.items
    shown = [transcript.name(), composer.name(), status, *(str(getattr(item, "trigger", item)) for item in items)]
    assert all(shown_cleanly(text) for text in shown), shown
    assert transcript.name() == "Qwen Chat: Reportexe.txt [2J" and "Effortexe.txt [2J: Highexe.txt [2J" in status
