"""The chat commands' bases (plugin/chat/command_bases.py) in the simulated
editor: a command on a chat named by id never reaches another window's chat,
and a command run in a chat's composer works on that chat, whichever is
active, and does nothing in a code view."""

from __future__ import annotations

from tests.sim.test_chat import WAIT, ChatRig
from tests.sim.test_chats import new_chat_by_key


def test_a_chat_named_by_id_is_closed_or_renamed_only_from_its_own_window(rig: ChatRig) -> None:
    rig.load()
    rig.open()
    first, window = rig.chat(), rig.host.window
    other = rig.host.user.new_window()
    rig.host.user.set_folders([rig.editor.workspace], window=other)
    rig.host.run_on_main(lambda: other.run_command("qwen_chat"))
    theirs = rig.host.wait_for(lambda: rig.chats.get(other), timeout=WAIT)
    rig.host.run_on_main(lambda: other.run_command("qwen_chat_rename", {"chat": first.chat_id, "title": "taken"}))
    rig.host.run_on_main(lambda: other.run_command("qwen_chat_close", {"chat": first.chat_id}))
    rig.host.wait_idle()
    assert first in rig.chats.of_window(window) and first.title != "taken"
    rig.host.run_on_main(lambda: window.run_command("qwen_chat_rename", {"chat": first.chat_id, "title": "mine"}))
    assert first.title == "mine" and theirs.title != "mine"


def test_up_in_a_composer_steps_through_that_chats_prompts_and_leaves_a_code_view_alone(rig: ChatRig) -> None:
    rig.load([[{"echo": "one: "}], [{"echo": "two: "}]])
    rig.send("to the first")
    rig.ended()
    first = rig.chat()
    second = new_chat_by_key(rig)
    rig.host.user.type(second.composer_view, "to the second")
    rig.host.user.press_key("enter")
    rig.ended(2)
    assert rig.chat() is second
    composer = first.composer_view  # not the active chat's
    rig.host.run_on_main(lambda: composer.run_command("qwen_chat_history", {"step": -1}))
    assert composer.substr(rig.host.sublime.Region(0, composer.size())) == "to the first"
    code = rig.editor.open("a.py", "x = 1\n")
    rig.host.run_on_main(lambda: code.run_command("qwen_chat_history", {"step": -1}))
    assert code.substr(rig.host.sublime.Region(0, code.size())) == "x = 1\n"
