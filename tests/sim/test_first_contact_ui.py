"""What a user meets in their first minutes, against the strict simulator: the
package's key chords next to widely installed packages, Esc leaving Sublime's
own Esc alone, the chat's syntax and settings, the composer's completions,
Ask About Selection's question and the review's banner."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sim.test_actions import ActionRig
from tests.sim.test_chat import ChatRig
from tests.sublime_sim import _jsonc, _keymap
from tests.sublime_sim.popular_keymaps import write_popular_keymaps
from tests.support.editor import BUILT_PACKAGE, PACKAGE, Editor, open_editor


@pytest.fixture
def rig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatRig]:
    with open_editor(tmp_path, monkeypatch, load=False) as editor:
        yield ChatRig(editor, tmp_path)


def _our_chords() -> list[dict[str, Any]]:
    entries = _jsonc.decode_file_text((BUILT_PACKAGE / "Default.sublime-keymap").read_text(encoding="utf-8"))
    return [e for e in entries if len(e["keys"]) > 1]


@pytest.mark.parametrize("platform", ["linux", "windows", "osx"])
def test_no_chord_of_ours_is_taken_by_a_popular_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, platform: str) -> None:
    with open_editor(tmp_path, monkeypatch, load=False, platform=platform) as editor:
        others = write_popular_keymaps(editor.host.packages_dir)
        app = editor.host.app
        bindings = _keymap.load_bindings(app)
        assert any(b.source.startswith("Packages/SublimeLinter/keymaps/") for b in bindings) or platform == "osx"
        for entry in _our_chords():
            keys = _keymap.normalize_keys(entry["keys"], platform)
            owners = {b.source.split("/")[1] for b in bindings if b.keys == keys}
            assert owners == {PACKAGE}, (entry, owners & set(others) or owners)
        view = editor.open("a.py", "x = 1\n")
        chat = _keymap.find_binding(app, view.id(), _keymap.normalize_keys(["primary+k", "c"], platform))
        assert chat is not None and chat.command == "qwen_chat"


def _esc(rig: ChatRig) -> str:
    """The command Esc runs ("" when no binding holds: Sublime closes a popup itself)."""
    binding = rig.host.user.press_key("escape")
    return binding.command if binding is not None else ""


def test_esc_in_the_chat_leaves_sublimes_own_esc_alone(rig: ChatRig) -> None:
    rig.load()
    transcript, composer = rig.open()
    window = rig.host.window
    for view in (composer, transcript):
        rig.host.user.focus(view)
        rig.host.run_on_main(lambda: window.show_quick_panel(["a", "b"], lambda index: None))
        assert _esc(rig) == "hide_overlay"
        rig.host.user.cancel_quick_panel()
        rig.host.run_on_main(functools.partial(view.show_popup, "<p>hover</p>"))
        assert _esc(rig) == ""
        rig.host.run_on_main(view.hide_popup)
        rig.host.run_on_main(lambda: window.run_command("show_panel", {"panel": "console"}))
        assert _esc(rig) == "hide_panel"
        rig.host.run_on_main(lambda: window.run_command("hide_panel"))
    rig.host.user.focus(composer)
    rig.host.user.type(composer, "one two")
    rig.host.user.set_selection(composer, [0, 4])
    assert _esc(rig) == "single_selection"
    rig.host.user.set_selection(composer, [7])
    assert _esc(rig) == "qwen_chat_cancel"


def test_esc_in_the_answer_view_leaves_sublimes_own_esc_alone(rig: ChatRig) -> None:
    rig.load()
    window = rig.host.window
    answer = rig.host.run_on_main(window.new_file)
    sys.modules[f"{PACKAGE}.plugin.actions.answer"]._answer_views.add(answer.id())  # one of the package's answer views
    rig.host.user.focus(answer)
    rig.host.run_on_main(lambda: window.show_quick_panel(["a"], lambda index: None))
    assert _esc(rig) == "hide_overlay"
    rig.host.user.cancel_quick_panel()
    assert _esc(rig) == "qwen_cancel_action"


def test_the_ask_chord_reaches_our_command_with_sublimelinter_installed(editor_with_linter: Editor) -> None:
    view = editor_with_linter.open("a.py", "x = 1\n")
    editor_with_linter.host.user.set_selection(view, [(0, 5)])
    binding = editor_with_linter.host.user.press_key("ctrl+k, i")
    assert binding is not None and (binding.command, binding.args) == ("qwen_action", {"action": "ask"})
    assert editor_with_linter.host.user.press_key("ctrl+k, a").command == "sublime_linter_panel_toggle"  # type: ignore[union-attr]


@pytest.fixture
def editor_with_linter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Editor]:
    with open_editor(tmp_path, monkeypatch, load=False) as editor:
        write_popular_keymaps(editor.host.packages_dir)
        editor.load([editor.workspace])
        yield editor


def test_the_commands_reference_lists_the_chords_of_the_keymap() -> None:
    reference = (Path(__file__).resolve().parents[2] / "docs" / "commands.md").read_text(encoding="utf-8")
    for entry in _our_chords():
        first, letter = entry["keys"][0], entry["keys"][1].upper()
        lead = "Ctrl+K" if first == "primary+k" else first.upper()  # the review view's own chords: A, K
        assert f"<kbd>{lead}</kbd>, <kbd>{letter}</kbd>" in reference, json.dumps(entry)


def test_the_chat_syntax_loads_and_its_headings_and_settings_are_the_chats(rig: ChatRig) -> None:
    rig.load([[{"chunks": ["Hello."]}]])
    rig.send("hi")
    rig.ended()
    text = rig.transcript()
    transcript, composer = rig.open()
    assert not [d for d in rig.host.app.dialogs if d.kind == "error"]
    for view in (transcript, composer):
        assert view.syntax().name == "Qwen Chat"
    you, qwen = text.index("## You") + 3, text.index("## Qwen") + 3
    assert transcript.scope_name(you).split()[-2:] == ["markup.heading.qwen-chat.user", "entity.name.section.qwen-chat.user"]
    assert transcript.scope_name(qwen).split()[-2:] == ["markup.heading.qwen-chat.agent", "entity.name.section.qwen-chat.agent"]
    settings = _jsonc.decode_file_text((BUILT_PACKAGE / "syntaxes" / "QwenChat.sublime-settings").read_text(encoding="utf-8"))
    assert transcript.settings().get("result_file_regex") == settings["result_file_regex"]


def test_prose_in_the_composer_pops_no_completions_and_enter_sends(rig: ChatRig) -> None:
    rig.load([[{"chunks": ["ok"]}]])
    _, composer = rig.open()
    user = rig.host.user
    user.type(composer, "hello world")
    user.press_key("shift+enter")
    user.type(composer, "hel")
    assert not composer.is_auto_complete_visible()
    binding = user.press_key("enter")
    assert binding is not None and binding.command == "qwen_chat_send"
    assert rig.ended() == ["end_turn"]
    assert rig.received("session/prompt")[0]["params"]["prompt"][0]["text"] == "hello world\nhel"


def test_a_slash_opens_the_list_of_commands_and_only_those(rig: ChatRig) -> None:
    rig.load()
    _, composer = rig.open()
    rig.host.user.type(composer, "/")
    assert composer.is_auto_complete_visible()
    items = rig.host.app.view(composer.id()).auto_complete
    assert items and all(type(item).__name__ == "CompletionItem" for item in items)  # no words of the buffer
    assert "clear" in [item.trigger for item in items]


@pytest.fixture
def action_rig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ActionRig]:
    with open_editor(tmp_path, monkeypatch, load=False) as editor:
        yield ActionRig(editor, tmp_path)


@pytest.mark.parametrize("via", ["key", "menu"])
def test_ask_from_its_key_or_a_menu_asks_for_the_question_first(action_rig: ActionRig, via: str) -> None:
    action_rig.load([{"text": "Because pi."}])
    action_rig.open_area()
    user = action_rig.host.user
    if via == "key":
        user.press_key("ctrl+k, i")
    else:
        user.run_command("qwen_action", {"action": "ask"}, via="menu")
    action_rig.host.wait_idle()
    assert not action_rig.log.exists()  # nothing runs before the question is typed
    assert not user.submit_command_input("   ")  # an empty question is refused
    assert user.submit_command_input("Why 3.14?")
    action_rig.finished()
    assert "Why 3.14?" in action_rig.prompt()


def test_the_review_banner_is_at_the_top_and_splits_no_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with open_editor(tmp_path, monkeypatch) as editor:
        path = editor.file("app.py", "a = 1\nb = 2\nc = 3\n")
        _, proposed = editor.propose(editor.cli(), path, "a = 1\nb = 20\nc = 3\n")
        assert [(row, place) for row, place, _ in editor.host.drawn_phantoms(proposed)] == []  # nothing between its lines
        banner = editor.host.view_state(proposed).regions["qwen_companion.review"]
        assert banner.regions == [(0, 0)] and 'href="accept"' in banner.annotations[0]
        editor.host.user.click_annotation(proposed, "reject")
        editor.host.wait_idle()
        assert not proposed.is_valid()
