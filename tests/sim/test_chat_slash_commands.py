"""The composer's slash commands with the scripted agent posing as qwen
0.24.4: a `/` completes the commands the agent advertised, or, before any
`available_commands_update`, those qwen's `supported_commands` lists, each
with its description (an agent's name that is not one plain word left out);
a slash command's status (`_meta.source: "slash_command"`) is a note in the
transcript, not the model's words."""

from __future__ import annotations

from typing import Any

from tests.sim.test_chat import WAIT, ChatRig

SUPPORTED = {"qwen/status/session/supported_commands": {"availableCommands": [
    {"name": "stats", "description": "Show the session's statistics"},
    {"name": "rm -rf; x", "description": "not one word"},
    {"name": "about", "description": "About \u202eqwen\x1b[31m"},
]}}


def completions(rig: ChatRig) -> dict[str, str]:
    _, composer = rig.open()
    rig.host.user.type(composer, "/")
    return {item.trigger: item.annotation for item in rig.host.user.query_completions(composer, "")}


def test_a_slash_completes_qwens_supported_commands_with_their_descriptions(rig: ChatRig) -> None:
    rig.script_extras.update(agent_name="qwen-code", announce_commands=False, qwen_answers=SUPPORTED)
    rig.load([[{"chunks": ["Hi."]}]])
    rig.send("hello")
    assert rig.ended() == ["end_turn"]
    assert rig.chat().state.commands == []  # nothing advertised
    shown = completions(rig)
    assert shown["stats"] == "Show the session's statistics"
    assert shown["about"].startswith("About qwen") and not {"\u202e", "\x1b"} & set(shown["about"])
    assert {"clear", "help", "status"} <= set(shown) and not any(" " in name for name in shown)


def test_another_agent_is_asked_no_qwen_method_for_completions(rig: ChatRig) -> None:
    rig.script_extras.update(announce_commands=False, qwen_answers=SUPPORTED)
    rig.load([[{"chunks": ["Hi."]}]])
    rig.send("hello")
    assert rig.ended() == ["end_turn"]
    assert set(completions(rig)) == {"clear", "help", "status"}
    assert rig.received("qwen/status/session/supported_commands") == []


def slash_output(text: str) -> dict[str, Any]:
    return {"update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text},
                       "_meta": {"source": "slash_command"}}}


def test_a_slash_commands_status_is_a_note_not_the_models_words(rig: ChatRig) -> None:
    rig.script_extras.update(agent_name="qwen-code")
    rig.load([[slash_output("Session Stats  \nTokens: 42"), {"chunks": ["Model words."]}]])
    rig.send("/stats")
    assert rig.ended() == ["end_turn"]
    text = rig.host.wait_for(lambda: "Model words." in rig.transcript() and rig.transcript(), timeout=WAIT)
    assert "> Session Stats\n> Tokens: 42" in text
    assert text.index("> Session Stats") < text.index("## Qwen")  # the model's words under their own header
