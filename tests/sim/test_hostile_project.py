"""A hostile project: its `settings` reach every view of its window, so view
settings never tell the package which views are its own (chat, answer,
review tabs). The package knows them from its own records."""

from __future__ import annotations

from typing import Any

from tests.sim.test_chat import ChatRig
from tests.support.editor import PACKAGE

SECRET = "API_KEY=hunter2\n"


def hostile_project(rig: ChatRig, settings: dict[str, Any]) -> None:
    window = rig.host.window
    data = window.project_data() or {}
    window.set_project_data({**data, "settings": settings})


def test_enter_in_a_code_file_of_a_project_that_calls_every_view_a_composer_types_a_newline(rig: ChatRig) -> None:
    rig.load()
    hostile_project(rig, {"qwen_chat.view": "composer", "qwen_chat.chat": 1})
    code = rig.editor.open("secrets.env", SECRET)
    rig.host.user.click(code, len(SECRET))
    binding = rig.host.user.press_key("enter")
    rig.host.wait_idle()
    assert binding is None or not binding.command.startswith("qwen_")
    assert rig.editor.text(code) == SECRET + "\n"  # not erased, not sent
    assert rig.chats.all() == [] and not rig.log.exists()  # no agent started, nothing sent to one
    rig.host.user.press_key("@")  # typing, not "attach a file"
    assert rig.editor.text(code) == SECRET + "\n@"


def test_a_package_load_adopts_no_user_file_of_a_project_that_calls_every_view_a_transcript(rig: ChatRig) -> None:
    rig.load()
    hostile_project(rig, {"qwen_chat.view": "transcript", "qwen_chat.chat": 1})
    first = rig.editor.open("a.py", "x = 1\n")
    second = rig.editor.open("b.py", "y = 2\n")
    rig.host.reload_package(PACKAGE)
    rig.editor.wait_for_package_threads("start", "preload")
    rig.host.wait_idle()
    assert first.is_valid() and second.is_valid()  # none closed as an "extra copy"
    assert rig.editor.text(first) == "x = 1\n" and rig.editor.text(second) == "y = 2\n"
    assert rig.chats.all() == [] and not rig.log.exists()  # nothing adopted, no agent started


def test_the_answer_views_keys_stay_the_users_in_a_project_that_calls_every_view_an_answer(rig: ChatRig) -> None:
    rig.load()
    hostile_project(rig, {"qwen_actions.answer": True})
    code = rig.editor.open("notes.md", "list\n")
    rig.host.user.click(code, 4)
    for key in ("[", "]"):
        binding = rig.host.user.press_key(key)
        assert binding is None or not binding.command.startswith("qwen_")
    assert rig.editor.text(code) == "list[]\n"


def test_closing_a_user_file_of_a_project_that_marks_every_view_as_ours_keeps_the_users_layout(rig: ChatRig) -> None:
    rig.load()
    hostile_project(rig, {"qwen_placement.own_group": 1})  # "the group made for this view"
    two_columns = {"cols": [0.0, 0.5, 1.0], "rows": [0.0, 1.0], "cells": [[0, 0, 1, 1], [1, 0, 2, 1]]}
    rig.host.user.run_command("set_layout", two_columns)
    rig.host.user.focus_group(1)
    notes = rig.editor.open("notes.txt", "mine\n")
    rig.host.user.close(notes)
    rig.host.wait_idle()
    assert rig.host.window.layout() == two_columns  # no group of the user's merged away
