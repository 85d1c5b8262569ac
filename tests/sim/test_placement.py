"""Where the package's views open, in the simulated editor with the BUILT
package: the code the user works on stays visible (`host.visible_views`:
each group's selected tab and the shown output panel). Answers beside the
code, in the bottom panel or in a tab (`actions_answer_place`), reused and
with their history a key away; reviews in the code's groups while the chat
keeps its column; paths relative to the window's folder; the model by name."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sim.test_actions import ActionRig
from tests.sim.test_chat import WAIT, ChatRig
from tests.sim.test_chat_agent_work import EDIT_OPTIONS, pending, request
from tests.support.editor import PACKAGE, open_editor

SINGLE = {"cols": [0.0, 1.0], "rows": [0.0, 1.0], "cells": [[0, 0, 1, 1]]}
PANEL = "output.qwen_answer"
CHAT_LAYOUT = {"cols": [0.0, 0.6, 1.0], "rows": [0.0, 0.78, 1.0], "cells": [[0, 0, 1, 2], [1, 0, 2, 1], [1, 1, 2, 2]]}
# Sublime's own Esc binding for panels, as its Default keymap has it (all platforms).
DEFAULT_ESCAPE = ('[{ "keys": ["escape"], "command": "hide_panel", "args": {"cancel": true},'
                  ' "context": [{ "key": "panel_visible", "operator": "equal", "operand": true }] }]')


@pytest.fixture
def actions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ActionRig]:
    with open_editor(tmp_path, monkeypatch, load=False) as editor:
        yield ActionRig(editor, tmp_path)


@pytest.fixture
def chat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatRig]:
    with open_editor(tmp_path, monkeypatch, load=False) as editor:
        yield ChatRig(editor, tmp_path)


def answer_views(rig: ActionRig) -> list[Any]:
    return [v for v in rig.host.window.views() if v.settings().get("qwen_actions.answer")]


def explain(rig: ActionRig, count: int = 1) -> Any:
    code = rig.open_area()
    rig.run("explain")
    assert rig.finished(count)[-1] == "answered"
    return code


# --- answers ------------------------------------------------------------------


def test_explain_answers_beside_the_code_which_keeps_the_focus_and_gets_its_layout_back(actions: ActionRig) -> None:
    actions.load([{"text": "It is the area."}])
    window = actions.host.window
    assert window.layout() == SINGLE
    code = explain(actions)
    [answer] = answer_views(actions)
    assert window.num_groups() == 2
    assert window.get_view_index(code)[0] == 0 and window.get_view_index(answer)[0] == 1
    assert actions.host.visible_views(window) == [code, answer]
    assert window.active_view() == code  # Explain keeps the focus in the code
    actions.host.user.close(answer)
    actions.host.wait_idle()
    assert window.layout() == SINGLE and actions.host.visible_views(window) == [code]
    assert window.active_view() == code


def test_a_second_explain_reuses_the_answer_and_the_previous_one_is_a_key_away(actions: ActionRig) -> None:
    actions.load([{"text": "First answer."}])
    code = explain(actions)
    actions.steps([{"text": "Second answer."}])
    explain(actions, 2)
    [answer] = answer_views(actions)
    assert actions.host.window.num_groups() == 2  # no second group, no second tab
    assert "Second answer." in actions.answer() and "First answer." not in actions.answer()
    assert actions.host.visible_views(actions.host.window) == [code, answer]
    actions.host.user.focus(answer)
    actions.host.user.press_key("[")
    assert "First answer." in actions.answer()
    assert "answer 1 of 2" in actions.host.status_messages[-1]
    actions.host.user.press_key("]")
    assert "Second answer." in actions.answer()


def test_the_panel_place_answers_in_the_bottom_panel_and_esc_in_the_code_hides_it(actions: ActionRig) -> None:
    default = actions.host.app.packages_dir / "Default"
    default.mkdir(exist_ok=True)
    (default / "Default.sublime-keymap").write_text(DEFAULT_ESCAPE)
    actions.load([{"text": "In the panel."}], actions_answer_place="panel")
    window = actions.host.window
    code = explain(actions)
    answer = window.find_output_panel("qwen_answer")
    assert answer is not None and "In the panel." in actions.editor.text(answer)
    assert window.active_panel() == PANEL and window.layout() == SINGLE
    assert actions.host.visible_views(window) == [code, answer] and window.active_view() == code
    assert answer_views(actions) == []  # no tab
    binding = actions.host.user.press_key("escape")
    assert binding is not None and binding.command == "hide_panel"  # Sublime's own Esc: the package takes none here
    assert window.active_panel() is None and actions.host.visible_views(window) == [code]
    actions.steps([{"text": "Again."}])
    explain(actions, 2)
    assert window.active_panel() == PANEL and "Again." in actions.editor.text(answer)


def test_the_tab_place_opens_a_tab_in_the_codes_group_with_the_focus(actions: ActionRig) -> None:
    actions.load([{"text": "In a tab."}], actions_answer_place="tab")
    window = actions.host.window
    code = explain(actions)
    [answer] = answer_views(actions)
    assert window.layout() == SINGLE and window.get_view_index(answer)[0] == window.get_view_index(code)[0]
    assert window.active_view() == answer


def test_the_answers_header_names_the_file_relative_to_the_folder(actions: ActionRig) -> None:
    actions.load([{"text": "ok"}])
    explain(actions)
    header = actions.answer().split("\n\n")[1]
    assert header.startswith("`geometry.py` 4:1-6:1")
    assert str(actions.editor.workspace) not in actions.answer()


def test_an_answer_beside_the_code_leaves_the_chats_column_alone(actions: ActionRig) -> None:
    actions.load([{"text": "Beside."}])
    window = actions.host.window
    chat_layout = CHAT_LAYOUT
    actions.host.run_on_main(lambda: window.set_layout(chat_layout))
    code = actions.open_area()
    actions.host.user.focus(code)
    explain(actions)
    [answer] = answer_views(actions)
    assert window.get_view_index(code)[0] == 0 and window.get_view_index(answer)[0] == 3
    assert window.layout() == {"cols": [0.0, 0.3, 0.6, 1.0], "rows": [0.0, 0.78, 1.0],  # the code's cell halved
                               "cells": [[0, 0, 1, 2], [2, 0, 3, 1], [2, 1, 3, 2], [1, 0, 2, 2]]}
    actions.host.user.close(answer)
    actions.host.wait_idle()
    assert window.layout() == chat_layout


def test_an_answer_run_from_the_chats_composer_splits_the_codes_column(actions: ActionRig) -> None:
    """Defect guarded: an answer run from the chat's composer (the active view
    one of the package's own) split the chat's column instead of the code's."""
    actions.load([{"text": "Beside."}])
    window = actions.host.window
    code = actions.open_area()
    actions.host.user.run_command("qwen_chat")
    actions.host.wait_idle()
    chat = sys.modules[f"{PACKAGE}.plugin.chat.window_chats"].chats.get(window)
    transcript, composer = chat.transcript_view, chat.composer_view

    def place(view: Any) -> tuple[float, ...]:
        """The view's group's cell as fractions of the window (cell indices move when a column is added)."""
        layout = window.layout()
        x1, y1, x2, y2 = layout["cells"][window.get_view_index(view)[0]]
        return layout["cols"][x1], layout["rows"][y1], layout["cols"][x2], layout["rows"][y2]

    chat_places = [place(transcript), place(composer)]
    code_before = place(code)
    actions.host.user.focus(composer)
    actions.host.user.type(composer, "what does area do?")
    actions.host.user.set_selection(composer, [(0, composer.size())])
    actions.run("explain")
    assert actions.finished()[-1] == "answered"
    [answer] = answer_views(actions)
    assert [place(transcript), place(composer)] == chat_places  # the chat's column as it was
    left, top, right, bottom = code_before  # the code's cell, halved: the code on the left, the answer on the right
    assert place(code) == (left, top, place(answer)[0], bottom) and place(answer)[1:] == (top, right, bottom)


def test_closing_an_answer_that_is_not_the_last_group_leaves_the_later_groups_in_their_cells(actions: ActionRig) -> None:
    actions.load([{"text": "Beside."}])
    window = actions.host.window
    code = explain(actions)
    [answer] = answer_views(actions)
    # The user adds a column of two groups after the answer's (as the chat's column is).
    four = {"cols": [0.0, 0.3, 0.6, 1.0], "rows": [0.0, 0.5, 1.0],
            "cells": [[0, 0, 1, 2], [1, 0, 2, 2], [2, 0, 3, 1], [2, 1, 3, 2]]}
    actions.host.user.run_command("set_layout", four)
    actions.host.user.focus_group(2)
    top = actions.host.user.new_file()
    actions.host.user.focus_group(3)
    bottom = actions.host.user.new_file()
    actions.host.user.focus(code)
    assert window.get_view_index(answer)[0] == 1
    actions.host.user.close(answer)
    actions.host.wait_idle()
    layout = window.layout()
    cell_of = {view.id(): layout["cells"][window.get_view_index(view)[0]] for view in (code, top, bottom)}
    assert layout == {"cols": [0.0, 0.6, 1.0], "rows": [0.0, 0.5, 1.0], "cells": [[0, 0, 1, 2], [1, 0, 2, 1], [1, 1, 2, 2]]}
    assert cell_of == {code.id(): [0, 0, 1, 2], top.id(): [1, 0, 2, 1], bottom.id(): [1, 1, 2, 2]}  # each in its cell
    assert window.active_view() == code


# --- reviews and the chat -----------------------------------------------------


def edit_permission(path: str, old: str, new: str) -> dict[str, Any]:
    diff = {"type": "diff", "path": path, "oldText": old, "newText": new}
    raw = {"file_path": path, "old_string": old, "new_string": new}
    return request("session/request_permission",
                   toolCall={"toolCallId": "e1", "status": "pending", "kind": "edit", "title": "hello.py",
                             "locations": [{"path": path}], "content": [diff], "rawInput": raw},
                   options=EDIT_OPTIONS)


def test_a_chat_permissions_review_opens_in_the_codes_groups_and_the_transcript_stays_visible(chat: ChatRig) -> None:
    workspace = chat.editor.workspace
    path = str(workspace / "hello.py")
    (workspace / "hello.py").write_text("print('hi')\n")
    chat.load([[edit_permission(path, "print('hi')\n", "print('hello')\n")]])
    window = chat.host.window
    code = chat.host.user.open_file(workspace / "hello.py")
    chat.host.wait_idle()
    chat.send("edit")
    pending(chat)
    review = chat.host.wait_for(lambda: chat.editor.review_views() or None, timeout=WAIT)
    chat.host.wait_idle()
    transcript, composer = chat.chat().transcript_view, chat.chat().composer_view
    visible = chat.host.visible_views(window)
    assert transcript in visible and composer in visible
    assert set(review) <= set(visible)
    chat_groups = {window.get_view_index(transcript)[0], window.get_view_index(composer)[0]}
    assert not chat_groups & {window.get_view_index(v)[0] for v in review}
    assert window.get_view_index(review[0])[0] == window.get_view_index(code)[0]
    assert chat.host.app.focused_view_id() == composer.id()  # the review took no keys: the user typed in the composer
    chat.host.user.run_command("qwen_chat_permission", {"option": "cancel"})
    chat.host.wait_for(lambda: not chat.editor.review_views(), timeout=WAIT)
    chat.host.wait_idle()
    assert transcript in chat.host.visible_views(window) and code in chat.host.visible_views(window)


def test_an_edit_permission_shows_what_changes_and_tool_lines_show_relative_paths(chat: ChatRig) -> None:
    workspace = chat.editor.workspace
    (workspace / "src").mkdir()
    path = str(workspace / "src" / "hello.py")
    (workspace / "src" / "hello.py").write_text("print('hi')\n")
    read = {"update": {"sessionUpdate": "tool_call", "toolCallId": "r1", "title": "ReadFile", "kind": "read",
                       "status": "completed", "locations": [{"path": path, "line": 3}]}}
    outside = {"update": {"sessionUpdate": "tool_call", "toolCallId": "r2", "title": "ReadFile", "kind": "read",
                          "status": "completed", "locations": [{"path": "/etc/hosts"}]}}
    chat.load([[read, outside, edit_permission(path, "print('hi')\n", "print('hello')\n")]])
    chat.send("edit")
    pending(chat)
    text = chat.host.wait_for(lambda: "**Permission**" in chat.transcript() and chat.transcript(), timeout=WAIT)
    assert "src/hello.py:3 — completed" in text and " /etc/hosts — completed" in text
    assert "src/hello.py: +1 −1 line(s)\n-print('hi')\n+print('hello')\n" in text
    assert "file_path" not in text and str(workspace) not in text
    chat.host.user.run_command("qwen_chat_permission", {"option": "cancel"})


def test_the_status_names_the_model_not_qwens_id(chat: ChatRig) -> None:
    unlisted = {"notify": "qwen/notify/session/model-update",
                "params": {"currentModelId": "$runtime|openai|glm-4.6(openai)"}}
    chat.load([[{"chunks": ["hi"]}], [unlisted, {"chunks": ["switched"]}]])
    chat.send("hello")
    chat.ended()
    chat.host.wait_idle()
    status = chat.chat().transcript_view.get_status("qwen_chat")
    assert "fake-model" in status and "$runtime" not in status
    chat.send("again")
    chat.ended(2)
    chat.host.wait_idle()
    status = chat.chat().transcript_view.get_status("qwen_chat")
    assert "glm-4.6" in status and "$runtime" not in status
    chat.send("/status")
    text = chat.host.wait_for(lambda: "Model:" in chat.transcript() and chat.transcript(), timeout=WAIT)
    assert "Model: glm-4.6" in text and "$runtime" not in text
    assert sys.modules[f"{PACKAGE}.plugin.chat.agent.chat_report"].chat_report(chat.host.window).count("$runtime") == 0


def test_a_file_put_in_the_answers_group_joins_the_code_when_the_answer_closes(actions: ActionRig) -> None:
    actions.load([{"text": "ok"}])
    window = actions.host.window
    actions.host.run_on_main(lambda: window.set_layout(CHAT_LAYOUT))  # Sublime would fold it into the last group
    code = actions.open_area()
    actions.host.user.focus(code)
    explain(actions)
    [answer] = answer_views(actions)
    other = actions.host.user.open_file(actions.editor.file("other.py", "y = 2\n"), group=3)
    actions.host.user.close(answer)
    actions.host.wait_idle()
    assert window.layout() == CHAT_LAYOUT
    assert window.views_in_group(0) == [code, other]


def test_a_dragged_divider_still_gives_the_group_back_but_a_rearranged_layout_stays(actions: ActionRig) -> None:
    actions.load([{"text": "ok"}])
    window = actions.host.window
    explain(actions)
    [answer] = answer_views(actions)
    dragged = {"cols": [0.0, 0.7, 1.0], "rows": [0.0, 1.0], "cells": [[0, 0, 1, 1], [1, 0, 2, 1]]}
    actions.host.run_on_main(lambda: window.set_layout(dragged))
    actions.host.user.close(answer)
    actions.host.wait_idle()
    assert window.layout() == SINGLE
    actions.steps([{"text": "again"}])
    explain(actions, 2)
    [answer] = answer_views(actions)
    stacked = {"cols": [0.0, 1.0], "rows": [0.0, 0.5, 1.0], "cells": [[0, 0, 1, 1], [0, 1, 1, 2]]}
    actions.host.run_on_main(lambda: window.set_layout(stacked))  # the user's own arrangement
    actions.host.user.close(answer)
    actions.host.wait_idle()
    assert window.layout() == stacked


def test_the_group_is_given_back_after_a_package_reload_too(actions: ActionRig) -> None:
    actions.load([{"text": "ok"}])
    window = actions.host.window
    explain(actions)
    [answer] = answer_views(actions)
    actions.host.reload_package(PACKAGE)
    actions.host.user.close(answer)
    actions.host.wait_idle()
    assert window.layout() == SINGLE


def test_the_chat_opened_beside_an_answer_gets_a_column_of_its_own(actions: ActionRig) -> None:
    """The chat's transcript and composer never land as tabs of the answer's
    group (or the code's): code, answer and transcript all stay in view."""
    actions.load([{"text": "Beside."}])
    window = actions.host.window
    code = explain(actions)
    [answer] = answer_views(actions)
    actions.host.user.run_command("qwen_chat")
    actions.host.wait_idle()
    chat = sys.modules[f"{PACKAGE}.plugin.chat.window_chats"].chats.get(window)
    transcript, composer = chat.transcript_view, chat.composer_view
    groups = {name: window.get_view_index(view)[0] for name, view in
              [("code", code), ("answer", answer), ("transcript", transcript), ("composer", composer)]}
    assert len(set(groups.values())) == 4, groups
    assert actions.host.visible_views(window) == sorted([code, answer, transcript, composer],
                                                        key=lambda view: window.get_view_index(view)[0])
