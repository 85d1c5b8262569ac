"""`display_text`: what an agent or a record names is shown as one clean,
bounded line wherever it is adopted (Chat History, a branch's or session's
title, modes, models and option names)."""

from __future__ import annotations

from qwencompanion_src.core.chat.agent.session_options import Choice, parse_options
from qwencompanion_src.core.chat.chat_state import ChatState
from qwencompanion_src.core.chat.history.history import entry_of
from qwencompanion_src.core.display_text import display_text

SPOOF = "\u202eexe.txt\u2066 \x1b[2J\x00\x9b\u200b\ud800\ue000"


def test_controls_bidi_and_format_characters_go_and_the_line_is_bounded() -> None:
    assert display_text("Report" + SPOOF, 100) == "Reportexe.txt [2J"
    assert display_text(" a\n\tb\u2028c ", 100) == "a b c"
    assert display_text("x" * 10, 5) == "xxxx…" and display_text("x" * 5, 5) == "xxxxx"
    assert display_text(None, 5) == "" and display_text(7, 5) == ""
    assert display_text("\u200b" * 1_000_000 + "late", 10) == ""  # a bounded scan, not a million characters


def test_chat_history_shows_the_agents_title_and_first_prompt_cleaned() -> None:
    entry = entry_of({"sessionId": "s-1", "title": "Fix" + SPOOF, "updatedAt": "2026\x1b",
                      "_meta": {"preview": "prompt\u202e" + "p" * 1000}})
    assert entry is not None
    assert (entry.title, entry.updated) == ("Fixexe.txt [2J", "2026")
    assert entry.first_prompt.startswith("promptppp") and entry.first_prompt.endswith("…")


def test_session_titles_modes_and_options_are_cleaned_when_adopted() -> None:
    state = ChatState()
    state._adopt_title("Title" + SPOOF)
    assert state.session_title == "Titleexe.txt [2J"
    assert Choice("plan", "Plan" + SPOOF, "Desc" + SPOOF) == Choice("plan", "Planexe.txt [2J", "Descexe.txt [2J")
    options = parse_options([{"id": "o\x00", "name": "N" + SPOOF, "type": "boolean", "currentValue": True}])
    assert options is not None and options.options[0].name == "Nexe.txt [2J" and options.options[0].id == "o\x00"
