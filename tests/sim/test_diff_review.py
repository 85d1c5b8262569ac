"""Diff reviews in the simulated editor: openDiff / closeDiff from a CLI session,
the review tabs, layout and focus, and what the user's answers send back."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sublime_sim.sublime import View
from tests.support.editor import BUILT_PACKAGE, DIFF_VIEW, PACKAGE, Editor, open_editor

TWO_COLUMNS = {"cols": [0.0, 0.5, 1.0], "rows": [0.0, 1.0], "cells": [[0, 0, 1, 1], [1, 0, 2, 1]]}
ONE_GROUP = {"cols": [0.0, 1.0], "rows": [0.0, 1.0], "cells": [[0, 0, 1, 1]]}


@pytest.fixture
def editor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Editor]:
    with open_editor(tmp_path, monkeypatch) as editor:
        yield editor


def accepted(path: Path, content: str) -> dict[str, object]:
    return {"jsonrpc": "2.0", "method": "ide/diffAccepted", "params": {"filePath": str(path), "content": content}}


def rejected(path: Path) -> dict[str, object]:
    return {"jsonrpc": "2.0", "method": "ide/diffRejected", "params": {"filePath": str(path)}}


# --- opening ------------------------------------------------------------------


def test_open_diff_answers_at_once_and_shows_a_side_by_side_review(editor: Editor) -> None:
    path = editor.file("app.py", "def f():\n    return 1\n")
    cli = editor.cli()

    assert cli.open_diff(path, "def f():\n    return 2\n") == {"content": [], "isError": False}
    original, proposed = editor.review(path)

    window = editor.window
    assert window.layout() == TWO_COLUMNS
    assert window.get_view_index(original)[0] == 0 and window.get_view_index(proposed)[0] == 1
    assert window.active_view_in_group(1) == proposed  # in front of its group, without the keys
    assert [(r.a, r.b) for r in proposed.sel()] == [(9, 9)]  # the caret waits at the first change
    # Left: what the file holds now, read-only; right: the proposal, editable.
    assert editor.text(original) == "def f():\n    return 1\n"
    assert original.is_read_only() and original.is_scratch()
    assert editor.text(proposed) == "def f():\n    return 2\n"
    assert not proposed.is_read_only() and proposed.is_scratch()
    assert proposed.syntax().name == original.syntax().name == "Python"
    assert editor.host.view_state(proposed).buffer.reference_document == "def f():\n    return 1\n"
    # Marked for the context feature; not files on disk.
    for view in (original, proposed):
        assert view.settings().get(DIFF_VIEW) is True
        assert view.file_name() is None
    banner = editor.banner_html(proposed)
    assert 'href="accept"' in banner and 'href="reject"' in banner and "app.py" in banner
    assert cli.quiet()
    editor.host.assert_no_errors()


def test_the_review_opens_in_the_window_whose_folder_holds_the_file(editor: Editor, tmp_path: Path) -> None:
    other_folder = tmp_path / "other"
    other_folder.mkdir()
    second = editor.host.user.new_window()
    editor.host.user.set_folders([str(other_folder)], window=second)
    editor.host.user.focus_window(editor.window if editor.window != second else editor.host.windows()[0])
    path = other_folder / "lib.txt"
    path.write_text("old\n")
    cli = editor.cli()  # connected to the first window's server

    original, proposed = editor.propose(cli, path, "new\n", window=second)
    assert original.window() == second and proposed.window() == second
    editor.host.user.click_annotation(proposed, "accept")
    assert cli.next_notification() == accepted(path, "new\n")


# --- answers ------------------------------------------------------------------


def test_accept_link_sends_the_edited_text_and_restores_layout_and_focus(editor: Editor) -> None:
    user = editor.host.user
    notes = editor.file("notes.txt", "my notes\n")
    notes_view = user.open_file(notes)
    path = editor.file("a.txt", "one\ntwo\nthree\n")
    owner, bystander = editor.cli("owner"), editor.cli("bystander")

    original, proposed = editor.propose(owner, path, "one\nTWO\nthree\n")
    user.replace(proposed, (8, 13), "HAND-EDITED")  # "three" -> by hand
    user.click_annotation(proposed, "accept")

    assert owner.next_notification() == accepted(path, "one\nTWO\nHAND-EDITED\n")
    assert bystander.quiet()
    assert not original.is_valid() and not proposed.is_valid()
    assert editor.review_views() == []
    assert editor.window.layout() == ONE_GROUP
    assert editor.window.active_view() == notes_view
    assert path.read_text() == "one\ntwo\nthree\n"  # the CLI writes the file, not the package
    editor.host.assert_no_errors()


def test_reject_link_sends_a_rejection(editor: Editor) -> None:
    path = editor.file("a.txt", "x\n")
    cli = editor.cli()
    _, proposed = editor.propose(cli, path, "y\n")

    editor.host.user.click_annotation(proposed, "reject")
    assert cli.next_notification() == rejected(path)
    assert editor.review_views() == []
    assert editor.window.layout() == ONE_GROUP
    assert path.read_text() == "x\n"


@pytest.mark.parametrize(
    ("command", "method"), [("qwen_accept_diff", "ide/diffAccepted"), ("qwen_reject_diff", "ide/diffRejected")]
)
def test_palette_commands_answer_the_focused_review(editor: Editor, command: str, method: str) -> None:
    path = editor.file("a.txt", "x\n")
    cli = editor.cli()
    original, _ = editor.propose(cli, path, "y\n")

    editor.host.user.focus(original)  # either tab of the review answers it
    editor.host.user.run_command(command)
    assert cli.next_notification()["method"] == method
    assert editor.review_views() == []


def test_palette_lists_both_commands(editor: Editor) -> None:
    entries = json.loads((BUILT_PACKAGE / "Default.sublime-commands").read_text())
    captions = {e["caption"]: e["command"] for e in entries}
    assert captions["Qwen Code: Accept Diff"] == "qwen_accept_diff"
    assert captions["Qwen Code: Reject Diff"] == "qwen_reject_diff"


def test_key_bindings_work_only_in_review_tabs(editor: Editor) -> None:
    user = editor.host.user
    other = editor.file("other.txt", "o\n")
    other_view = user.open_file(other)
    path = editor.file("a.txt", "x\n")
    cli = editor.cli()

    _, proposed = editor.propose(cli, path, "y\n")
    user.focus(other_view)
    assert user.press_key("ctrl+k, y") is None  # outside a review: not ours
    assert cli.quiet()

    user.focus(proposed)
    binding = user.press_key("ctrl+k, y")
    assert binding is not None and binding.command == "qwen_accept_diff"
    assert cli.next_notification() == accepted(path, "y\n")

    _, proposed = editor.propose(cli, path, "z\n")
    user.focus(proposed)
    binding = user.press_key("ctrl+k, x")
    assert binding is not None and binding.command == "qwen_reject_diff"
    assert cli.next_notification() == rejected(path)


def test_saving_the_proposal_accepts_it_and_writes_nothing(editor: Editor) -> None:
    path = editor.file("a.txt", "x\n")
    cli = editor.cli()
    _, proposed = editor.propose(cli, path, "y\n")

    editor.host.user.type(proposed, "typed ")
    editor.host.user.save(proposed)  # ctrl+s
    assert cli.next_notification() == accepted(path, "typed y\n")
    assert editor.host.dialogs == []  # no save dialog for the scratch tab
    assert path.read_text() == "x\n"
    assert sorted(p.name for p in editor.workspace.iterdir()) == ["a.txt"]


@pytest.mark.parametrize("side", [0, 1])
def test_closing_either_tab_rejects_and_closes_the_other(editor: Editor, side: int) -> None:
    path = editor.file("a.txt", "x\n")
    cli = editor.cli()
    views = editor.propose(cli, path, "y\n")

    assert editor.host.user.close(views[side])
    assert cli.next_notification() == rejected(path)
    editor.settle()
    assert not views[1 - side].is_valid()
    assert editor.window.layout() == ONE_GROUP
    assert cli.quiet()
    editor.host.assert_no_errors()


def test_closing_the_file_side_keeps_an_edited_proposal_open(editor: Editor) -> None:
    path = editor.file("a.txt", "x\n")
    cli = editor.cli()
    original, proposed = editor.propose(cli, path, "y\n")
    editor.host.user.type(proposed, "mine ")

    assert editor.host.user.close(original)
    assert cli.next_notification() == rejected(path)
    editor.settle()
    assert proposed.is_valid() and editor.text(proposed) == "mine y\n"
    assert proposed.name().endswith("(not applied)") and "closed the file" in editor.banner_html(proposed)
    assert path.read_text() == "x\n"
    editor.host.assert_no_errors()


# --- what is sent: line endings, final newline, Unicode -------------------------


# (file on disk, newContent, a hand edit (old, new) or None, the text sent on accept)
LINE_ENDING_CASES: list[tuple[bytes, str, tuple[str, str] | None, str]] = [
    # The CLI proposes `\n` text for a CRLF file and converts when it writes:
    # an unedited proposal goes back exactly as it came, edits in its convention.
    (b"one\r\ntwo\r\n", "one\nTWO\n", None, "one\nTWO\n"),
    (b"one\r\ntwo\r\n", "one\nTWO\n", ("TWO", "2"), "one\n2\n"),
    (b"one\r\ntwo\r\n", "one\r\nTWO\r\n", ("one", "ONE"), "ONE\r\nTWO\r\n"),
    # No final newline: none is added.
    (b"one\r\ntwo", "one\ntwo!", None, "one\ntwo!"),
    (b"one\ntwo", "one\ntwo!", ("two!", "two?"), "one\ntwo?"),
    # A final newline is not dropped; an added empty last line survives.
    (b"one\n", "one\n\n", None, "one\n\n"),
    (b"one\n", "one\n", ("one\n", "one\n\n"), "one\n\n"),
]


def test_accepted_text_keeps_the_proposals_line_endings_and_the_final_newline(editor: Editor) -> None:
    cli = editor.cli()
    for number, (on_disk, proposal, edit, sent) in enumerate(LINE_ENDING_CASES):
        path = editor.workspace / f"f{number}.txt"
        path.write_bytes(on_disk)
        original, proposed = editor.propose(cli, path, proposal)
        assert "\r" not in editor.text(original) + editor.text(proposed)  # Sublime's buffers hold `\n`
        if edit is not None:
            start = editor.text(proposed).index(edit[0])
            editor.host.user.replace(proposed, (start, start + len(edit[0])), edit[1])

        editor.host.user.click_annotation(proposed, "accept")
        assert cli.next_notification() == accepted(path, sent), LINE_ENDING_CASES[number]


def test_non_ascii_text_round_trips(editor: Editor) -> None:
    path = editor.workspace / "ünï.md"
    path.write_text("Grüße\n", encoding="utf-8")
    cli = editor.cli()
    original, proposed = editor.propose(cli, path, "Grüße, 世界 — ✓ 🎉\n")
    assert editor.text(original) == "Grüße\n"

    editor.host.user.click(proposed, proposed.size() - 1)
    editor.host.user.type(proposed, " ñ€")
    editor.host.user.click_annotation(proposed, "accept")
    assert cli.next_notification() == accepted(path, "Grüße, 世界 — ✓ 🎉 ñ€\n")


def test_an_emptied_proposal_is_not_accepted(editor: Editor) -> None:
    path = editor.file("a.txt", "x\n")
    cli = editor.cli()
    _, proposed = editor.propose(cli, path, "y\n")

    editor.host.user.replace(proposed, (0, proposed.size()), "")
    editor.host.user.click_annotation(proposed, "accept")
    # The CLI would take "" for "unchanged" and write its proposal: say so instead.
    assert cli.quiet()
    assert proposed.is_valid() and "cannot take an empty text" in editor.banner_html(proposed)
    editor.host.user.click_annotation(proposed, "reject")
    assert cli.next_notification() == rejected(path)


# --- new files, unsaved work ----------------------------------------------------


def test_a_new_file_shows_an_empty_original_and_a_rejection_leaves_nothing(editor: Editor) -> None:
    path = editor.workspace / "sub" / "new.py"
    cli = editor.cli()
    original, proposed = editor.propose(cli, path, "print('new')\n")

    assert original.name() == "new.py (new file)" and editor.text(original) == ""
    assert "does not exist yet" in editor.banner_html(proposed)
    editor.host.user.click_annotation(proposed, "reject")
    assert cli.next_notification() == rejected(path)
    editor.settle()
    assert not path.exists() and not path.parent.exists()
    assert editor.window.views() == []
    assert all(v.file_name() != str(path) for w in editor.host.windows() for v in w.views())


def test_an_accepted_new_file_sends_its_text(editor: Editor) -> None:
    path = editor.workspace / "new.txt"
    cli = editor.cli()
    _, proposed = editor.propose(cli, path, "fresh")
    editor.host.user.save(proposed)
    assert cli.next_notification() == accepted(path, "fresh")


def test_unsaved_changes_are_shown_explained_and_kept(editor: Editor) -> None:
    user = editor.host.user
    path = editor.file("a.txt", "disk line\n")
    buffer = user.open_file(path)
    user.click(buffer, buffer.size())
    user.type(buffer, "unsaved line\n")
    assert buffer.is_dirty()
    cli = editor.cli()

    original, proposed = editor.propose(cli, path, "disk line\nproposed line\n")
    # The left side is the buffer as the user sees it, unsaved work included.
    assert editor.text(original) == "disk line\nunsaved line\n"
    assert editor.host.view_state(proposed).buffer.reference_document == "disk line\nunsaved line\n"
    banner = editor.banner_html(proposed)
    assert "unsaved changes" in banner and "neither saved nor discarded" in banner

    user.click_annotation(proposed, "accept")
    assert cli.next_notification() == accepted(path, "disk line\nproposed line\n")
    editor.settle()
    assert buffer.is_valid() and buffer.is_dirty()
    assert editor.text(buffer) == "disk line\nunsaved line\n"
    assert path.read_text() == "disk line\n"
    assert editor.host.dialogs == []


def test_rejecting_a_review_of_a_dirty_file_keeps_the_buffer(editor: Editor) -> None:
    user = editor.host.user
    path = editor.file("a.txt", "disk\n")
    buffer = user.open_file(path)
    user.type(buffer, "mine ")
    cli = editor.cli()
    original, _ = editor.propose(cli, path, "theirs\n")

    user.close(original)
    assert cli.next_notification() == rejected(path)
    editor.settle()
    assert buffer.is_valid() and buffer.is_dirty() and editor.text(buffer) == "mine disk\n"
    assert editor.window.active_view() == buffer


# --- several reviews ------------------------------------------------------------


def test_a_second_open_diff_for_the_same_file_replaces_the_first(editor: Editor) -> None:
    path = editor.file("a.txt", "x\n")
    first, second = editor.cli("first"), editor.cli("second")
    editor.propose(first, path, "from first\n")

    second.open_diff(path, "from second\n")
    assert first.next_notification() == rejected(path)
    editor.settle()
    _, proposed = editor.review(path)
    assert len(editor.review_views()) == 2
    assert editor.text(proposed) == "from second\n"

    editor.host.user.click_annotation(proposed, "accept")
    assert second.next_notification() == accepted(path, "from second\n")
    assert first.quiet()
    assert editor.window.layout() == ONE_GROUP


def test_a_replaced_review_keeps_what_the_user_typed(editor: Editor) -> None:
    path = editor.file("a.txt", "x\n")
    cli = editor.cli()
    _, old = editor.propose(cli, path, "first\n")
    editor.host.user.type(old, "my edit ")

    cli.open_diff(path, "second\n")
    assert cli.next_notification() == rejected(path)
    editor.settle()
    assert old.is_valid() and editor.text(old) == "my edit first\n"
    assert old.settings().get(DIFF_VIEW) is None and "not applied" in old.name()
    assert "newer proposal" in editor.banner_html(old)
    _, new = editor.review(path)
    assert editor.text(new) == "second\n"


def test_two_reviews_from_two_clis_live_side_by_side(editor: Editor) -> None:
    a, b = editor.workspace / "a.txt", editor.workspace / "b.txt"
    a.write_text("a\n")
    b.write_text("b\n")
    cli_a, cli_b = editor.cli("a"), editor.cli("b")
    cli_a.open_diff(a, "A\n")
    cli_b.open_diff(b, "B\n")
    a_left, a_right = editor.review(a)
    b_left, b_right = editor.review(b)

    window = editor.window
    assert [window.get_view_index(v)[0] for v in (a_left, a_right, b_left, b_right)] == [0, 1, 0, 1]
    editor.host.user.click_annotation(b_right, "accept")
    assert cli_b.next_notification() == accepted(b, "B\n")
    assert window.layout() == TWO_COLUMNS  # a's review is still open
    assert a_left.is_valid() and a_right.is_valid()

    editor.host.user.click_annotation(a_right, "reject")
    assert cli_a.next_notification() == rejected(a)
    assert window.layout() == ONE_GROUP
    assert cli_a.quiet() and cli_b.quiet()


def test_a_window_with_several_groups_gets_its_layout_and_tabs_back(editor: Editor) -> None:
    user = editor.host.user
    window = editor.window
    rows = {"cols": [0.0, 1.0], "rows": [0.0, 0.5, 1.0], "cells": [[0, 0, 1, 1], [0, 1, 1, 2]]}
    editor.host.run_on_main(lambda: window.set_layout(rows))
    top_file, bottom_file = editor.workspace / "top.txt", editor.workspace / "bottom.txt"
    top_file.write_text("t\n")
    bottom_file.write_text("b\n")
    top = user.open_file(top_file, group=0)
    bottom = user.open_file(bottom_file, group=1)
    user.focus(bottom)
    path = editor.file("a.txt", "x\n")
    cli = editor.cli()

    original, proposed = editor.propose(cli, path, "y\n")
    # The review splits the group the user works in (the bottom one); the top group stays as it was.
    assert window.layout() == {"cols": [0.0, 0.5, 1.0], "rows": [0.0, 0.5, 1.0],
                               "cells": [[0, 0, 2, 1], [0, 1, 1, 2], [1, 1, 2, 2]]}
    assert window.get_view_index(original)[0] == 1 and window.get_view_index(proposed)[0] == 2
    assert window.active_view_in_group(0) == top
    user.click_annotation(proposed, "reject")
    cli.next_notification()
    editor.settle()
    assert window.layout() == rows
    assert window.get_view_index(top) == (0, 0) and window.get_view_index(bottom) == (1, 0)
    assert window.active_view() == bottom


# --- the CLI's side: closeDiff, sessions that end --------------------------------


def test_close_diff_returns_the_current_text_and_rejects(editor: Editor) -> None:
    path = editor.workspace / "a.txt"
    path.write_bytes(b"x\r\n")
    cli = editor.cli()
    _, proposed = editor.propose(cli, path, "y\n")
    editor.host.user.type(proposed, "edited ")

    assert cli.close_diff(path) == "edited y\n"
    assert cli.next_notification() == rejected(path)
    editor.settle()
    assert editor.review_views() == []
    assert editor.window.layout() == ONE_GROUP


def test_close_diff_with_suppress_notification_sends_nothing(editor: Editor) -> None:
    path = editor.file("a.txt", "x\n")
    cli = editor.cli()
    editor.propose(cli, path, "y\n")

    assert cli.close_diff(path, suppress=True) == "y\n"
    editor.settle()
    assert cli.quiet()
    assert editor.window.views() == []  # nothing was edited, so nothing is kept
    assert editor.window.layout() == ONE_GROUP


def test_edits_survive_when_the_terminal_answers_first(editor: Editor) -> None:
    user = editor.host.user
    terminal_file = editor.file("terminal.txt", "$ qwen\n")
    user.open_file(terminal_file)
    path = editor.file("a.txt", "x\n")
    cli = editor.cli()
    _, proposed = editor.propose(cli, path, "y\n")
    user.type(proposed, "precious ")

    assert cli.close_diff(path, suppress=True) == "precious y\n"
    editor.settle()
    assert cli.quiet()
    # The edited proposal stays open as a plain scratch tab that says what happened.
    assert proposed.is_valid() and editor.text(proposed) == "precious y\n"
    assert proposed.is_scratch() and proposed.settings().get(DIFF_VIEW) is None
    assert proposed.name() == "a.txt (not applied)"
    assert "answered in the terminal" in editor.banner_html(proposed)
    assert 'href="accept"' not in editor.banner_html(proposed)
    assert editor.window.layout() == ONE_GROUP
    assert proposed.window() == editor.window
    assert editor.window.active_view() == proposed  # the CLI's answer is not the user's: the keys stay where they typed
    assert any("not applied" in m for m in editor.host.status_messages)
    # Nothing answers for it any more.
    user.focus(proposed)
    user.save(proposed, editor.workspace / "kept.txt")
    assert (editor.workspace / "kept.txt").read_text() == "precious y\n"
    assert cli.quiet()


def test_close_diff_of_a_path_without_a_review_answers_null(editor: Editor) -> None:
    cli = editor.cli()
    assert cli.close_diff(editor.workspace / "none.txt") is None
    assert cli.close_diff(editor.workspace / "none.txt", suppress=True) is None


class OtherOwner:
    """A review opened by another feature (the chat, a quick action)."""

    note = None
    alive = True

    def __init__(self) -> None:
        self.heard: list[str] = []

    def accepted(self, text: str) -> None:
        self.heard.append(f"accepted {text!r}")

    def rejected(self) -> None:
        self.heard.append("rejected")


def test_close_diff_leaves_a_review_the_cli_did_not_open_alone(editor: Editor) -> None:
    # A qwen in the terminal may close its own reviews, but not read or end
    # what the chat's agent or a quick action proposed for the same file.
    path = editor.file("a.txt", "x\n")
    owner = OtherOwner()
    reviews = sys.modules[f"{PACKAGE}.plugin.reviews.review_tabs"].reviews
    read_disk_file = sys.modules[f"{PACKAGE}.core.reviews"].read_disk_file

    def propose() -> None:
        reviews.show(*reviews.propose(str(path), "secret\n", owner, read_disk_file(str(path))))

    editor.host.run_on_main(propose)
    _, proposed = editor.review(path)
    cli = editor.cli()
    assert cli.close_diff(path) is None
    editor.settle()
    assert owner.heard == [] and proposed.is_valid() and proposed.settings().get(DIFF_VIEW)


def test_a_review_whose_session_ends_is_orphaned_and_accepting_it_is_harmless(editor: Editor) -> None:
    path = editor.file("a.txt", "x\n")
    owner, other = editor.cli("owner"), editor.cli("other")
    _, proposed = editor.propose(owner, path, "y\n")
    assert "Orphaned" not in editor.banner_html(proposed)

    owner.delete()
    editor.host.wait_for(lambda: "Orphaned" in editor.banner_html(proposed))
    editor.host.user.click_annotation(proposed, "accept")
    editor.settle()
    assert other.quiet()
    assert path.read_text() == "x\n"
    # The text stays reachable; nothing is waiting for it.
    assert proposed.is_valid() and editor.text(proposed) == "y\n" and proposed.settings().get(DIFF_VIEW) is None
    assert "session that proposed this change" in editor.banner_html(proposed)
    assert editor.window.layout() == ONE_GROUP
    editor.host.assert_no_errors()


# --- bad calls ------------------------------------------------------------------


BAD_CALLS: list[tuple[str, dict[str, object], str]] = [
    ("openDiff", {"filePath": "relative.txt", "newContent": "x"}, "absolute"),
    ("openDiff", {"filePath": "/abs.txt"}, "newContent"),
    ("openDiff", {"filePath": "/abs.txt", "newContent": 5}, "newContent"),
    ("closeDiff", {"filePath": "relative.txt"}, "absolute"),
    ("closeDiff", {"filePath": "/abs.txt", "suppressNotification": "yes"}, "suppressNotification"),
]


def test_bad_arguments_are_errors_that_say_why(editor: Editor) -> None:
    cli = editor.cli()
    for tool, arguments, says in BAD_CALLS:
        result = cli.call(tool, arguments)
        assert result["isError"] is True, (tool, arguments)
        assert says in result["content"][0]["text"], (tool, arguments, result)
    editor.settle()
    assert editor.review_views() == []
    assert cli.quiet()


def test_a_directory_cannot_be_reviewed(editor: Editor) -> None:
    cli = editor.cli()
    result = cli.open_diff(editor.workspace, "x")
    assert result["isError"] is True and "is a directory" in result["content"][0]["text"]
    editor.settle()
    assert editor.window.views() == [] and editor.window.layout() == ONE_GROUP


# --- windows, reloads, a busy main thread ----------------------------------------


def test_closing_the_window_that_holds_a_review_rejects_it(editor: Editor, tmp_path: Path) -> None:
    other_folder = tmp_path / "other"
    other_folder.mkdir()
    second = editor.host.user.new_window()
    editor.host.user.set_folders([str(other_folder)], window=second)
    path = other_folder / "a.txt"
    path.write_text("x\n")
    cli = editor.cli(window=editor.host.windows()[0])
    editor.propose(cli, path, "y\n", window=second)

    assert editor.host.user.close_window(second)
    assert cli.next_notification() == rejected(path)
    editor.host.assert_no_errors()


def test_a_reload_of_the_package_ends_open_reviews_without_losing_the_proposal(editor: Editor) -> None:
    path = editor.file("a.txt", "x\n")
    cli = editor.cli()
    original, proposed = editor.propose(cli, path, "y\n")
    editor.host.user.type(proposed, "mine ")

    editor.host.reload_package("QwenCompanion")
    editor.settle()
    assert not original.is_valid()
    assert proposed.is_valid() and editor.text(proposed) == "mine y\n"
    assert proposed.settings().get(DIFF_VIEW) is None and proposed.name().endswith("(not applied)")
    banner = editor.banner_html(proposed)
    assert "reloaded" in banner and 'href="accept"' not in banner
    editor.host.assert_no_errors()


def test_disabling_and_enabling_the_package_adopts_the_review_tabs(editor: Editor) -> None:
    path = editor.file("a.txt", "x\n")
    cli = editor.cli()
    original, proposed = editor.propose(cli, path, "y\n")
    editor.host.user.type(proposed, "mine ")

    editor.host.disable_package("QwenCompanion")
    editor.host.enable_package("QwenCompanion")
    editor.settle()
    assert not original.is_valid()
    assert proposed.is_valid() and editor.text(proposed) == "mine y\n"
    assert proposed.name().endswith("(not applied)")
    editor.host.assert_no_errors()


def test_close_diff_answers_with_the_users_edits_while_the_main_thread_is_busy(editor: Editor) -> None:
    import threading

    path = editor.file("a.txt", "x\n")
    cli = editor.cli()
    _, proposed = editor.propose(cli, path, "y\n")
    editor.host.user.type(proposed, "mine ")

    held, release = threading.Event(), threading.Event()

    def hold_the_main_thread() -> None:
        with editor.host.watchdog.internal():  # the test's stand-in for a busy editor, not a package callback
            held.set()
            release.wait(10)

    busy = threading.Thread(target=lambda: editor.host.run_on_main(hold_the_main_thread))
    busy.start()
    assert held.wait(10)  # closeDiff comes while the main thread is held, however loaded the machine
    try:
        # The main thread is held until closeDiff has answered: waiting for it would hang here.
        assert cli.close_diff(path) == "mine y\n"
        assert cli.next_notification() == rejected(path)
        assert proposed.is_valid()  # the tabs close once the main thread is free
    finally:
        release.set()
        busy.join()
    editor.settle()
    assert [view.name() for view in editor.review_views()] == []
    assert proposed.is_valid() and proposed.name().endswith("(not applied)")  # the edits stay reachable
    assert cli.quiet()


# --- keyboard focus: the qwen terminal keeps it ------------------------------------


def focused(editor: Editor) -> int:
    return int(editor.host.app.focused_view_id())


def terminal_tab(editor: Editor) -> View:
    view = editor.host.user.new_file()
    view.settings().set("terminus_view", True)  # what Terminus sets on its terminals
    editor.host.user.focus(view)
    editor.settle()
    return view


def test_a_review_opens_without_taking_focus_from_the_terminal_tab(editor: Editor) -> None:
    path = editor.file("a.txt", "x\n")
    terminal = terminal_tab(editor)
    cli = editor.cli()
    _, proposed = editor.propose(cli, path, "y\n")
    assert focused(editor) == terminal.id()
    # The CLI asks "Apply this change?" in the terminal now: the answer goes there.
    editor.host.user.type(View(focused(editor)), "1\n")
    assert editor.text(proposed) == "y\n" and editor.text(terminal) == "1\n"

    assert cli.close_diff(path) == "y\n"
    editor.settle()
    assert editor.review_views() == [] and focused(editor) == terminal.id()
    editor.host.assert_no_errors()


def test_a_review_opens_without_taking_focus_from_the_terminal_panel(editor: Editor) -> None:
    path = editor.file("a.txt", "x\n")
    panel = editor.window.create_output_panel("Terminus")
    panel.settings().set("terminus_view", True)
    editor.window.run_command("show_panel", {"panel": "output.Terminus"})
    editor.window.focus_view(panel)
    editor.settle()
    cli = editor.cli()
    editor.propose(cli, path, "y\n")
    assert focused(editor) == panel.id()
    assert editor.window.active_panel() == "output.Terminus"
    cli.close_diff(path)
    editor.settle()
    assert focused(editor) == panel.id()


def test_a_review_leaves_the_keys_in_the_code_tab(editor: Editor) -> None:
    code = editor.open("a.txt", "x\n")
    cli = editor.cli()
    _, proposed = editor.propose(cli, editor.workspace / "a.txt", "y\n")
    assert focused(editor) == code.id()  # what the user types keeps going into their file
    group, _ = editor.window.get_view_index(proposed)
    assert editor.window.active_view_in_group(group) == proposed  # shown all the same


def test_accepting_after_the_file_changed_on_disk_warns_first(editor: Editor) -> None:
    path = editor.file("a.txt", "x\n")
    cli = editor.cli()
    _, proposed = editor.propose(cli, path, "y\n")
    path.write_text("saved meanwhile\n")  # the user saved the file in another tab

    editor.host.user.click_annotation(proposed, "accept")
    editor.settle()
    assert cli.quiet()  # the CLI would have written the proposal over the saved text
    assert "changed on disk" in editor.banner_html(proposed)
    assert [view.id() for view in editor.review_views()][-1] == proposed.id()

    editor.host.user.click_annotation(proposed, "accept")  # the user read the warning: write it anyway
    assert cli.next_notification() == accepted(path, "y\n")
    editor.host.assert_no_errors()


def test_accepting_when_the_file_is_unchanged_on_disk_needs_one_click(editor: Editor) -> None:
    path = editor.file("a.txt", "x\r\n")
    cli = editor.cli()
    _, proposed = editor.propose(cli, path, "y\r\n")
    path.write_bytes(b"x\r\n")  # written again, same text
    editor.host.user.click_annotation(proposed, "accept")
    assert cli.next_notification() == accepted(path, "y\r\n")


def test_saving_the_proposal_from_the_palette_leaves_the_review_open(editor: Editor) -> None:
    # The palette bypasses on_text_command, so the package never sees this save:
    # Sublime asks where to save the unnamed tab; cancelled, nothing is written.
    path = editor.file("a.txt", "x\n")
    cli = editor.cli()
    _, proposed = editor.propose(cli, path, "y\n")
    editor.host.user.focus(proposed)
    editor.host.user.run_command("save")
    editor.settle()
    assert [dialog.kind for dialog in editor.host.dialogs] == ["save"]
    assert cli.quiet() and path.read_text() == "x\n"
    assert sorted(p.name for p in editor.workspace.iterdir()) == ["a.txt"]

    editor.host.user.run_command("qwen_accept_diff")  # the palette's Accept Diff still answers
    assert cli.next_notification() == accepted(path, "y\n")


def test_saving_the_proposal_from_the_file_menu_accepts_it(editor: Editor) -> None:
    path = editor.file("a.txt", "x\n")
    cli = editor.cli()
    _, proposed = editor.propose(cli, path, "y\n")
    editor.host.user.focus(proposed)
    editor.host.user.run_command("save", via="menu")
    assert cli.next_notification() == accepted(path, "y\n")
    assert editor.host.dialogs == []
