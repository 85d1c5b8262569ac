"""A turn's changes in Sublime's own diff, in the simulated editor with the
BUILT package and the scripted ACP agent: checkpoints before each file's
first write, the turn's list, reference documents, Keep and Undo Turn
(byte-exact, one undo step in open views, the user's edits never lost)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.sim.test_chat import WAIT, ChatRig
from tests.sim.test_chat_agent_work import request, wait_answers
from tests.sublime_sim.fixtures import write_package
from tests.support.editor import wait_for_package_threads

CRLF_BOM = b"\xef\xbb\xbfone\r\ntwo\r\nthree\r\n"
LATIN = "café\nligne 2\n".encode("latin-1")


def turn_events(rig: ChatRig, count: int = 1) -> list[dict[str, Any]]:
    rig.host.wait_for(lambda: len([e for e, _ in rig.events if e == "turn_changes"]) >= count, timeout=WAIT)
    return [d for e, d in rig.events if e == "turn_changes"]


def reference(rig: ChatRig, view: Any) -> str | None:
    state = rig.host.app.view(view.id())
    return None if state is None else state.buffer.reference_document


def two_file_turn(rig: ChatRig) -> tuple[Path, Path, Any]:
    """The agent reads and rewrites an open CRLF+BOM file and a closed Latin-1 file."""
    workspace = rig.editor.workspace
    opened, closed = workspace / "win.txt", workspace / "latin.txt"
    opened.write_bytes(CRLF_BOM)
    closed.write_bytes(LATIN)
    rig.load([[request("fs/read_text_file", path=str(opened)), request("fs/read_text_file", path=str(closed)),
               request("fs/write_text_file", path=str(opened), content="one\nTWO\nthree\nfour\n"),
               request("fs/write_text_file", path=str(opened), content="one\nTWO\nthree\nfour\nfive\n"),
               request("fs/write_text_file", path=str(closed), content="café\n")]])
    view = rig.host.user.open_file(opened)
    rig.send("change both")
    assert rig.ended() == ["end_turn"]
    assert wait_answers(rig, "fs/write_text_file", 3) == [None, None, None]
    return opened, closed, view


def test_a_turn_lists_its_files_and_open_views_diff_against_the_checkpoint(rig: ChatRig) -> None:
    opened, closed, view = two_file_turn(rig)
    event = turn_events(rig)[0]
    assert event["turn"] == 1 and event["window"] == rig.host.window.id()
    assert event["files"] == [{"path": str(opened), "added": 3, "removed": 1, "state": "changed"},
                              {"path": str(closed), "added": 0, "removed": 1, "state": "changed"}]
    assert reference(rig, view) == "one\ntwo\nthree\n"  # the text before the first write of the turn
    assert "2 files changed" in rig.host.run_on_main(lambda: view.get_status("qwen_turn_changes"))
    rig.host.wait_for(lambda: "Turn 1: 2 files changed — review: Ctrl+K, D" in rig.transcript(), timeout=WAIT)
    # Sublime's own Revert Hunk on the agent's change, against that reference
    rig.host.user.click(view, 5)
    rig.host.user.press_key("ctrl+k, ctrl+z")
    assert rig.editor.text(view) == "one\ntwo\nthree\nfour\nfive\n"


def test_the_list_opens_a_closed_file_at_its_first_change_with_its_reference(rig: ChatRig) -> None:
    _, closed, _ = two_file_turn(rig)
    turn_events(rig)
    rig.host.user.focus(rig.chat().composer_view)
    binding = rig.host.user.press_key("ctrl+k, d")  # from the chat, as anywhere
    assert binding is not None and binding.command == "qwen_turn_changes"
    panel = rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)[-1]
    assert [str(item[0]) for item in panel.items][-2:] == ["Keep All", "Undo Turn"]
    rig.host.user.choose_quick_panel(1)  # the closed file
    rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)
    rig.host.user.choose_quick_panel(0)  # open at its first change
    view = rig.host.wait_for(lambda: next((v for v in rig.host.window.views() if v.file_name() == str(closed)), None),
                             timeout=WAIT)
    rig.host.wait_for(lambda: reference(rig, view) == "café\nligne 2\n", timeout=WAIT)
    assert rig.host.run_on_main(lambda: view.rowcol(view.sel()[0].b)) == (1, 0)
    window = rig.host.window
    chat_column = window.get_view_index(rig.chat().composer_view)[0]
    assert window.get_view_index(view)[0] != chat_column  # in the code's group, not the chat's


def open_panels(rig: ChatRig) -> list[Any]:
    return [q for q in rig.host.quick_panels if not q.done]


def test_the_turns_end_line_opens_its_list_by_its_link_or_enter(rig: ChatRig) -> None:
    first, second = rig.editor.workspace / "a.txt", rig.editor.workspace / "b.txt"
    first.write_text("a\n")
    second.write_text("b\n")
    rig.load([[request("fs/read_text_file", path=str(first)), request("fs/write_text_file", path=str(first), content="A\n")],
              [request("fs/read_text_file", path=str(second)), request("fs/write_text_file", path=str(second), content="B\n")]])
    rig.send("one")
    rig.send("two")
    assert rig.ended(2) == ["end_turn", "end_turn"]
    turn_events(rig, 2)
    transcript, _ = rig.open()
    rig.host.wait_for(lambda: len(rig.host.app.view(transcript.id()).phantoms) == 2, timeout=WAIT)
    rig.host.user.click_phantom(transcript, "turn_changes:1")  # the first turn's, not the last's
    panel = rig.host.wait_for(lambda: open_panels(rig), timeout=WAIT)[-1]
    assert panel.placeholder == "Qwen Code: turn 1's changes" and len(panel.items) == 4
    rig.host.user.cancel_quick_panel()
    rig.host.wait_for(lambda: not open_panels(rig), timeout=WAIT)
    # Enter elsewhere in the transcript does nothing; on a turn's line, it opens that turn's list.
    rig.host.user.focus(transcript)
    rig.host.user.click(transcript, 0)
    rig.host.user.press_key("enter")
    assert not open_panels(rig)
    at = rig.host.run_on_main(lambda: transcript.find("Turn 1: 1 file changed — review", 0).b)
    rig.host.user.click(transcript, at)
    binding = rig.host.user.press_key("enter")
    assert binding is not None and binding.command == "qwen_turn_changes_at_caret"
    panel = rig.host.wait_for(lambda: open_panels(rig), timeout=WAIT)[-1]
    assert panel.placeholder == "Qwen Code: turn 1's changes"
    # Enter again takes the pre-selected item: never Undo Turn (Enter, Enter must not restore every file).
    rig.host.user.choose_quick_panel(max(panel.selected_index, 0))
    panel = rig.host.wait_for(lambda: open_panels(rig), timeout=WAIT)[-1]  # the file's own list
    assert str(panel.items[max(panel.selected_index, 0)]) == "Open at its first change"
    rig.host.user.cancel_quick_panel()
    rig.host.wait_idle()
    assert first.read_text() == "A\n" and second.read_text() == "B\n"


def test_a_turn_that_ends_behind_another_chat_is_linked_and_listed_in_its_own_chat(rig: ChatRig) -> None:
    changed = rig.editor.workspace / "a.txt"
    changed.write_text("a\n")
    rig.load([[request("fs/read_text_file", path=str(changed)), request("fs/write_text_file", path=str(changed), content="A\n"),
               {"chunks": ["done"], "delay": 1.0}]])
    transcript, _ = rig.open()
    asking = rig.chat()
    rig.send("one")
    rig.host.wait_for(lambda: changed.read_text() == "A\n", timeout=WAIT)
    rig.host.run_on_main(lambda: rig.host.window.run_command("qwen_chat_new"))  # the user turns to another chat
    rig.host.wait_idle()
    assert rig.chat() is not asking
    assert rig.ended(1) == ["end_turn"]
    turn_events(rig)
    # The link goes after the end line in the asking chat's transcript, and lists that chat's turn.
    rig.host.wait_for(lambda: len(rig.host.app.view(transcript.id()).phantoms) == 1, timeout=WAIT)
    rig.host.user.click_phantom(transcript, "turn_changes:1")
    panel = rig.host.wait_for(lambda: open_panels(rig), timeout=WAIT)[-1]
    assert panel.placeholder == "Qwen Code: turn 1's changes" and len(panel.items) == 4
    rig.host.user.choose_quick_panel("Undo Turn")
    wait_for_package_threads(rig.host, "turn undo")
    rig.host.wait_for(lambda: changed.read_text() == "a\n", timeout=WAIT)


def test_undo_turn_restores_every_file_byte_exact_in_one_undo_step(rig: ChatRig) -> None:
    opened, closed, view = two_file_turn(rig)
    turn_events(rig)
    rig.host.user.run_command("qwen_turn_undo")
    wait_for_package_threads(rig.host, "turn undo")
    rig.host.wait_idle()
    assert opened.read_bytes() == CRLF_BOM and closed.read_bytes() == LATIN
    assert rig.editor.text(view) == "one\ntwo\nthree\n" and not view.is_dirty()
    files = rig.chat().request_handler().files.turns.files(1)
    assert [f.state for f in files] == ["reverted", "reverted"]
    rig.host.run_on_main(lambda: view.run_command("undo"))  # one step back: the agent's text
    assert rig.editor.text(view) == "one\nTWO\nthree\nfour\nfive\n"


def test_undo_keeps_the_users_later_edits_in_undo_history_and_unsaved(rig: ChatRig) -> None:
    opened, _, view = two_file_turn(rig)
    turn_events(rig)
    rig.host.user.click(view, 0)
    rig.host.user.type(view, "mine ")
    rig.host.user.run_command("qwen_turn_undo", {"path": str(opened)})
    wait_for_package_threads(rig.host, "turn undo")
    rig.host.wait_idle()
    assert rig.editor.text(view) == "one\ntwo\nthree\n" and view.is_dirty()  # not saved over the user's edit
    assert opened.read_bytes() != CRLF_BOM  # the file on disk waits for the user's save
    rig.host.run_on_main(lambda: view.run_command("undo"))
    assert rig.editor.text(view) == "mine one\nTWO\nthree\nfour\nfive\n"


def undo_turn(rig: ChatRig, args: dict[str, Any] | None = None) -> None:
    rig.host.user.run_command("qwen_turn_undo", args)
    wait_for_package_threads(rig.host, "turn undo")
    rig.host.wait_idle()


def test_undo_never_saves_over_a_line_the_user_saved_since(rig: ChatRig) -> None:
    """Finding 4: the agent writes a file open in a tab; the user adds a line
    and saves; Undo leaves the user's line on disk and in the view, and says which file."""
    opened, _, view = two_file_turn(rig)
    turn_events(rig)
    rig.host.user.click(view, 0)
    rig.host.user.type(view, "the user's line\n")
    rig.host.user.save(view)
    saved = opened.read_bytes()
    assert b"the user's line" in saved
    undo_turn(rig, {"path": str(opened)})
    assert opened.read_bytes() == saved
    assert rig.editor.text(view).startswith("the user's line\n") and not view.is_dirty()
    assert any(str(opened) in message and "changed since the agent wrote it" in message
               for _, message in rig.host.app.status_messages)
    assert [f.state for f in rig.chat().request_handler().files.turns.files(1) if f.path == str(opened)] == ["changed"]


def test_undo_of_a_file_the_turn_made_open_in_a_tab_removes_it_never_saves_it_empty(rig: ChatRig) -> None:
    made = rig.editor.workspace / "made.txt"
    rig.load([[request("fs/write_text_file", path=str(made), content="made by the agent\n")]])
    rig.send("make it")
    assert rig.ended() == ["end_turn"]
    assert wait_answers(rig, "fs/write_text_file") == [None]
    turn_events(rig)
    view = rig.host.user.open_file(made)
    undo_turn(rig)
    assert not made.exists()  # removed: neither emptied nor saved again
    assert [f.state for f in rig.chat().request_handler().files.turns.files(1)] == ["reverted"]
    assert rig.editor.text(view) == "made by the agent\n"  # the tab keeps the text until the user closes it


def test_undo_of_a_made_file_the_user_changed_since_keeps_it(rig: ChatRig) -> None:
    made = rig.editor.workspace / "made.txt"
    rig.load([[request("fs/write_text_file", path=str(made), content="made by the agent\n")]])
    rig.send("make it")
    assert rig.ended() == ["end_turn"]
    turn_events(rig)
    view = rig.host.user.open_file(made)
    rig.host.user.click(view, 0)
    rig.host.user.type(view, "mine ")
    rig.host.user.save(view)
    undo_turn(rig)
    assert made.read_text() == "mine made by the agent\n"
    assert rig.editor.text(view) == "mine made by the agent\n"


def test_a_file_changed_on_disk_after_the_agent_is_never_overwritten(rig: ChatRig) -> None:
    _, closed, _ = two_file_turn(rig)
    turn_events(rig)
    closed.write_bytes(b"the user's own\n")
    rig.host.user.run_command("qwen_turn_undo", {"path": str(closed)})
    wait_for_package_threads(rig.host, "turn undo")
    assert closed.read_bytes() == b"the user's own\n"
    assert [f.state for f in rig.chat().request_handler().files.turns.files(1)] == ["changed", "changed"]


def test_keep_makes_the_current_text_the_reference(rig: ChatRig) -> None:
    opened, _, view = two_file_turn(rig)
    turn_events(rig)
    rig.host.user.run_command("qwen_turn_keep", {"path": str(opened)})  # one file: the turn still asks
    assert rig.host.run_on_main(lambda: view.get_status("qwen_turn_changes"))
    rig.host.user.run_command("qwen_turn_keep")
    wait_for_package_threads(rig.host, "turn undo")
    rig.host.wait_idle()
    assert rig.host.run_on_main(lambda: view.get_status("qwen_turn_changes")) == ""
    assert reference(rig, view) == rig.editor.text(view)  # not in a repository: its own text
    assert [f.state for f in rig.chat().request_handler().files.turns.files(1)] == ["kept", "kept"]
    assert opened.read_bytes() == b"\xef\xbb\xbfone\r\nTWO\r\nthree\r\nfour\r\nfive\r\n"


def git(folder: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                   check=True, capture_output=True)


def test_keep_gives_a_file_of_a_repository_its_text_in_gits_index(rig: ChatRig) -> None:
    workspace = rig.editor.workspace
    tracked, untracked = workspace / "tracked.txt", workspace / "loose.txt"
    tracked.write_bytes(b"committed\r\n")
    git(workspace, "init", "-q")
    git(workspace, "add", "tracked.txt")
    git(workspace, "commit", "-q", "-m", "one")
    tracked.write_bytes(b"staged\r\nline\r\n")
    git(workspace, "add", "tracked.txt")  # the index now differs from HEAD and from the agent's text
    untracked.write_text("loose\n")
    rig.load([[request("fs/read_text_file", path=str(tracked)), request("fs/read_text_file", path=str(untracked)),
               request("fs/write_text_file", path=str(tracked), content="the agent's\n"),
               request("fs/write_text_file", path=str(untracked), content="the agent's too\n")]])
    views = [rig.host.user.open_file(tracked), rig.host.user.open_file(untracked)]
    rig.send("change them")
    assert rig.ended() == ["end_turn"]
    turn_events(rig)
    rig.host.user.run_command("qwen_turn_keep")
    wait_for_package_threads(rig.host, "turn undo")
    rig.host.wait_idle()
    assert reference(rig, views[0]) == "staged\nline\n"  # what Sublime's gutter compares with, newlines as "\n"
    assert reference(rig, views[1]) == "the agent's too\n"  # untracked: its own text


def test_a_file_a_command_changed_after_the_agent_read_it_is_listed_outside(rig: ChatRig) -> None:
    workspace = rig.editor.workspace
    built, untouched = workspace / "built.txt", workspace / "untouched.txt"
    built.write_text("old\n")
    untouched.write_text("same\n")
    rig.load([[request("fs/read_text_file", path=str(built)), request("fs/read_text_file", path=str(untouched)),
               {"stall": 1}]])
    rig.send("build")
    wait_answers(rig, "fs/read_text_file", 2)
    built.write_text("made by a shell command\n")  # while the turn runs, not through the editor
    assert rig.ended() == ["end_turn"]
    assert turn_events(rig)[0]["files"] == [{"path": str(built), "added": 0, "removed": 0, "state": "outside"}]
    rig.host.user.run_command("qwen_turn_undo")
    wait_for_package_threads(rig.host, "turn undo")
    assert built.read_text() == "made by a shell command\n"  # never overwritten


def open_view_of(rig: ChatRig, path: Path) -> Any:
    return rig.host.run_on_main(lambda: rig.host.window.find_open_file(str(path)))


def test_following_the_agent_shows_its_files_without_taking_the_focus(rig: ChatRig) -> None:
    workspace = rig.editor.workspace
    read, written = workspace / "read.txt", workspace / "written.txt"
    read.write_text("1\n2\n3\n4\n")
    written.write_text("a\nb\nc\n")
    rig.load([[request("fs/read_text_file", path=str(read), line=3, limit=1)],
              [request("fs/read_text_file", path=str(written)),
               request("fs/write_text_file", path=str(written), content="a\nB\nc\n")]], chat_follow_agent=True)
    code = rig.editor.open("code.py", "x = 1\n")
    rig.send("read")
    assert rig.ended() == ["end_turn"]
    composer = rig.chat().composer_view
    shown = rig.host.wait_for(lambda: open_view_of(rig, read), timeout=WAIT)
    rig.host.wait_idle()
    assert rig.host.run_on_main(lambda: shown.rowcol(shown.sel()[0].b)) == (2, 0)  # line 3
    window = rig.host.window
    assert rig.host.run_on_main(lambda: window.get_view_index(shown)[0]) == rig.host.run_on_main(
        lambda: window.get_view_index(code)[0])  # the code's group, not the chat's
    assert rig.host.run_on_main(lambda: window.active_view()) == composer  # the focus stayed
    rig.send("write")
    assert rig.ended(2) == ["end_turn", "end_turn"]
    changed = rig.host.wait_for(lambda: open_view_of(rig, written), timeout=WAIT)
    rig.host.wait_idle()
    assert rig.host.run_on_main(lambda: changed.rowcol(changed.sel()[0].b)) == (1, 0)  # its first change
    assert rig.host.run_on_main(lambda: window.active_view()) == composer


def test_by_default_the_agents_files_do_not_open(rig: ChatRig) -> None:
    _, closed, _ = two_file_turn(rig)
    turn_events(rig)
    assert open_view_of(rig, closed) is None


def test_a_buffer_unsaved_before_the_turn_gets_its_unsaved_text_back_unsaved(rig: ChatRig) -> None:
    workspace = rig.editor.workspace
    path = workspace / "draft.txt"
    rig.load([[request("fs/read_text_file", path=str(path)),
               request("fs/write_text_file", path=str(path), content="the agent's\n")]])
    view = rig.editor.open("draft.txt", "saved\n")
    rig.host.user.type(view, "unsaved ")  # the agent reads this unsaved text, then writes (and saves)
    rig.send("rewrite")
    assert rig.ended() == ["end_turn"]
    assert turn_events(rig)[0]["files"] == [{"path": str(path), "added": 1, "removed": 1, "state": "changed"}]
    assert reference(rig, view) == "unsaved saved\n"
    rig.host.user.run_command("qwen_turn_undo")
    wait_for_package_threads(rig.host, "turn undo")
    rig.host.wait_idle()
    assert rig.editor.text(view) == "unsaved saved\n" and view.is_dirty()  # never saved for the user
    assert path.read_text() == "the agent's\n"  # the user's save decides what the file holds


def test_a_changed_file_opened_later_through_a_symlinked_folder_gets_its_reference(rig: ChatRig) -> None:
    _, closed, _ = two_file_turn(rig)
    turn_events(rig)
    linked = rig.editor.workspace / "linked"
    linked.symlink_to(rig.editor.workspace, target_is_directory=True)
    view = rig.host.user.open_file(linked / closed.name)  # the same file, spelled through a link
    rig.host.wait_for(lambda: reference(rig, view) == "café\nligne 2\n", timeout=WAIT)


def test_a_changed_file_opened_later_diffs_against_its_checkpoint_until_kept(rig: ChatRig) -> None:
    _, closed, _ = two_file_turn(rig)
    turn_events(rig)
    view = rig.host.user.open_file(closed)  # however it is opened (here: File > Open)
    rig.host.wait_for(lambda: reference(rig, view) == "café\nligne 2\n", timeout=WAIT)
    rig.host.user.run_command("qwen_turn_keep")
    rig.host.run_on_main(lambda: view.close())
    again = rig.host.user.open_file(closed)
    wait_for_package_threads(rig.host, "turn summary")
    rig.host.wait_idle()
    assert reference(rig, again) is None  # kept: Sublime's own reference again


FORMAT_ON_SAVE = '''
    import re

    import sublime
    import sublime_plugin


    class TidyOnSaveCommand(sublime_plugin.TextCommand):
        def run(self, edit):
            whole = sublime.Region(0, self.view.size())
            tidy = re.sub(r" *= *", " = ", self.view.substr(whole))
            if tidy != self.view.substr(whole):
                self.view.replace(edit, whole, tidy)


    class TidyOnSave(sublime_plugin.EventListener):
        def on_pre_save(self, view):
            view.run_command("tidy_on_save")
'''


@pytest.mark.parametrize("rewrite", ["ensure_newline_at_eof_on_save", "a format-on-save package"])
def test_what_a_save_rewrites_in_the_agents_write_is_the_agents_not_the_users(rig: ChatRig, rewrite: str) -> None:
    """Sublime's save runs on_pre_save listeners (Default's settings, format-on-save
    packages) that rewrite the buffer: what the package records is what was saved,
    so the agent's next edit lands and Undo Turn puts the file back."""
    if rewrite == "ensure_newline_at_eof_on_save":
        rig.host.user.edit_settings_file("Preferences.sublime-settings", {"ensure_newline_at_eof_on_save": True})
        first, second = "a\nb", "a\nb\nc"
        saved_first, saved_second = "a\nb\n", "a\nb\nc\n"
    else:
        write_package(rig.host.packages_dir, "Tidy", {"tidy.py": FORMAT_ON_SAVE})
        rig.host.load_package("Tidy")
        first, second = "x=1\n", "x = 1\ny=2\n"
        saved_first, saved_second = "x = 1\n", "x = 1\ny = 2\n"
    path = rig.editor.workspace / "notes.txt"
    path.write_text("before the turns\n")
    rig.load([[request("fs/read_text_file", path=str(path)),
               request("fs/write_text_file", path=str(path), content=first)],
              [request("fs/write_text_file", path=str(path), content=second)]])
    view = rig.host.user.open_file(path)
    rig.send("write it")
    assert rig.ended() == ["end_turn"]
    assert wait_answers(rig, "fs/write_text_file") == [None]
    assert path.read_text() == saved_first and rig.editor.text(view) == saved_first and not view.is_dirty()
    rig.send("edit it again")  # its next edit, on the text it wrote
    assert rig.ended(2)[-1] == "end_turn"
    assert wait_answers(rig, "fs/write_text_file", 2) == [None, None], "the agent was told the user edited it"
    assert path.read_text() == saved_second and not view.is_dirty()
    turn_events(rig, 2)
    for turn, back_to in ((2, saved_first), (1, "before the turns\n")):
        undo_turn(rig, {"turn": turn})
        assert path.read_text() == back_to and rig.editor.text(view) == back_to, f"Undo Turn {turn} refused"
    assert not any("changed since" in message for _, message in rig.host.app.status_messages)


def test_undo_turn_puts_back_a_file_whose_save_gave_the_agents_text_a_final_newline(rig: ChatRig) -> None:
    rig.host.user.edit_settings_file("Preferences.sublime-settings", {"ensure_newline_at_eof_on_save": True})
    path = rig.editor.workspace / "notes.txt"
    path.write_text("mine\n")
    rig.load([[request("fs/read_text_file", path=str(path)),
               request("fs/write_text_file", path=str(path), content="the agent's, no final newline")]])
    view = rig.host.user.open_file(path)
    rig.send("write it")
    assert rig.ended() == ["end_turn"] and wait_answers(rig, "fs/write_text_file") == [None]
    assert path.read_text() == "the agent's, no final newline\n"
    turn_events(rig)
    undo_turn(rig)
    assert path.read_text() == "mine\n" and rig.editor.text(view) == "mine\n", "Undo Turn refused"
    assert [f.state for f in rig.chat().request_handler().files.turns.files(1)] == ["reverted"]
