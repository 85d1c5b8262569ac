"""Review comments in the simulated editor with the BUILT package and the
scripted ACP agent: Add Comment from its key on the user's selection, its
mark in every view of the file following the user's edits, outdated when its
lines are deleted, and Send Review reaching the agent as one prompt with the
file, lines and quote, shown compactly in the transcript; the keys and the
focus stay the user's throughout."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from tests.sim.test_chat import WAIT, ChatRig
from tests.sim.test_chat_rewind import agent_history
from tests.support.editor import PACKAGE

LINES = "".join(f"value_{n} = {n}\n" for n in range(1, 11))


def marks() -> Any:
    return sys.modules[f"{PACKAGE}.plugin.chat.comments.comment_marks"]


def comment_lines(rig: ChatRig) -> list[tuple[int, int, str]]:
    return [(c.line, c.end_line, c.state) for c in marks().book.of_chat(rig.chat().chat_id)]


def test_a_comment_follows_edits_goes_outdated_and_reaches_the_agent_with_its_quote(rig: ChatRig) -> None:
    source = rig.editor.workspace / "code.py"
    source.write_text(LINES)
    rig.load([[{"chunks": ["reviewed"]}]])
    rig.open()
    view = rig.host.user.open_file(source)
    code_in_front = rig.host.run_on_main(lambda: rig.host.window.active_view())
    rig.host.user.set_selection(view, [(view.text_point(2, 3), view.text_point(3, 2))])  # lines 3-4
    rig.host.user.press_key(["ctrl+k", "m"])
    rig.host.user.submit_input_panel("name these better")
    assert comment_lines(rig) == [(3, 4, "pending")]
    key = f"qwen_comment_{marks().book.of_chat(rig.chat().chat_id)[0].comment_id}"
    assert rig.host.run_on_main(lambda: view.get_regions(key)) != []
    rig.host.user.set_selection(view, [0])
    rig.host.user.type(view, "# header\n# more\n")  # two lines above: the comment moves down with its text
    assert comment_lines(rig) == [(5, 6, "pending")]
    rig.host.user.set_selection(view, [(view.text_point(8, 0), view.text_point(8, 0))])
    rig.host.user.press_key(["ctrl+k", "m"])  # line 9: value_7
    rig.host.user.submit_input_panel("drop this line?")
    seven = view.text_point(8, 0)
    rig.host.user.replace(view, (seven, view.full_line(seven).end()), "")  # its line deleted
    assert comment_lines(rig) == [(5, 6, "pending"), (9, 9, "outdated")]
    assert rig.host.run_on_main(lambda: rig.host.window.active_view()) == code_in_front  # the keys stayed in the code
    rig.host.user.save(view)

    rig.host.user.press_key(["ctrl+k", "r"])
    rig.ended(1)
    prompt = agent_history(rig)[-1]
    assert prompt.startswith("Review: 2 comments on 1 file")
    assert "1. code.py, lines 5-6:\n```\nvalue_3 = 3\nvalue_4 = 4\n```\nname these better" in prompt
    assert "2. code.py, line 9:\n(outdated: these lines were deleted since; the quote is what they held)\n```\nvalue_7 = 7" in prompt
    transcript = rig.transcript()
    assert "Review: 2 comments on 1 file\n- code.py:5-6: name these better\n- code.py:9: drop this line?" in transcript
    assert "```" not in transcript  # compact: no quotes
    rig.host.wait_for(lambda: comment_lines(rig) == [], timeout=WAIT)  # cleared once the turn answering it ended
    assert rig.host.run_on_main(lambda: view.get_regions(key)) == []


def test_an_excluded_files_lines_are_never_quoted_and_the_composer_gives_the_overall_message(rig: ChatRig) -> None:
    secret = rig.editor.workspace / ".env"
    secret.write_text("API_KEY=hunter2-secret\n")
    rig.load()
    rig.open()
    view = rig.host.user.open_file(secret)
    rig.host.user.set_selection(view, [3])
    rig.host.user.press_key(["ctrl+k", "m"])
    rig.host.user.submit_input_panel("rotate this key")
    _, composer = rig.open()
    rig.host.user.type(composer, "Overall: secrets stay out.")
    rig.host.user.press_key(["ctrl+k", "r"])  # Send Review from the composer: its text is the overall message
    rig.ended(1)
    prompt = agent_history(rig)[-1]
    assert "hunter2" not in prompt and "quote is withheld" in prompt and "rotate this key" in prompt
    assert "Overall: secrets stay out." in prompt and rig.editor.text(composer) == ""


def test_comments_on_a_permissions_proposal_reject_it_with_them_as_the_reason(rig: ChatRig) -> None:
    from tests.sim.test_chat_agent_work import EDIT_OPTIONS, request, wait_answers

    path = str(rig.editor.workspace / "hello.py")
    (rig.editor.workspace / "hello.py").write_text("print('hi')\n")
    diff = {"type": "diff", "path": path, "oldText": "print('hi')\n", "newText": "print('hello')\nprint('again')\n"}
    rig.load([[request("session/request_permission",
                       toolCall={"toolCallId": "e1", "status": "pending", "kind": "edit", "title": "Edit hello.py",
                                 "locations": [{"path": path}], "content": [diff]}, options=EDIT_OPTIONS)],
              [{"chunks": ["redone"]}]])
    opened: list[dict[str, Any]] = []
    sys.modules[f"{PACKAGE}.plugin.reviews.review_tabs"].reviews.observers.append(
        lambda event, details: opened.append(details) if event == "diff_opened" else None)
    rig.send("edit")
    shown = rig.host.wait_for(lambda: opened[0] if opened else None, timeout=WAIT)
    proposed = next(v for v in rig.host.window.views() if v.id() == shown["proposed_view"])
    rig.host.user.focus(proposed)  # the user goes to the proposal tab
    rig.host.user.set_selection(proposed, [proposed.text_point(1, 2)])  # line 2 of the proposal
    rig.host.user.press_key(["ctrl+k", "m"])
    rig.host.user.submit_input_panel("no second print")
    rig.host.user.press_key(["ctrl+k", "r"])
    assert wait_answers(rig, "session/request_permission") == [{"outcome": {"outcome": "selected", "optionId": "cancel"}}]
    assert rig.ended(2) == ["end_turn", "end_turn"]
    reason = [m["params"]["prompt"][0]["text"] for m in rig.received("session/prompt")][-1]
    assert reason.startswith("Review: 1 comment on 1 file")
    assert "1. hello.py, line 2:\n```\nprint('again')\n```\nno second print" in reason
    assert "- hello.py:2: no second print" in rig.transcript()
    assert (rig.editor.workspace / "hello.py").read_text() == "print('hi')\n"


@pytest.mark.parametrize("choice", ["Copy the Comments for the Terminal", "Send the Comments to the Chat"])
def test_comments_on_a_cli_review_reject_it_and_go_where_the_user_picks(rig: ChatRig, choice: str) -> None:
    path = rig.editor.file("a.py", "x = 1\n")
    rig.load([[{"chunks": ["noted"]}]])
    rig.open()
    cli = rig.editor.cli()
    _, proposed = rig.editor.propose(cli, path, "x = 2\ny = 3\n")
    rig.host.user.focus(proposed)
    rig.host.user.set_selection(proposed, [proposed.text_point(1, 0)])
    rig.host.user.press_key(["ctrl+k", "m"])
    rig.host.user.submit_input_panel("no y")
    rig.host.user.press_key(["ctrl+k", "r"])
    rig.host.wait_for(lambda: any(not panel.done for panel in rig.host.quick_panels), timeout=WAIT)
    assert cli.next_notification() == {"jsonrpc": "2.0", "method": "ide/diffRejected", "params": {"filePath": str(path)}}
    rig.host.user.choose_quick_panel(choice)
    status = rig.host.status_messages[-1]
    assert "rejected the change to a.py" in status
    if choice.startswith("Copy"):
        copied = rig.host.run_on_main(rig.host.sublime.get_clipboard)
        assert "1. a.py, line 2:\n```\ny = 3\n```\nno y" in copied and "clipboard" in status
        assert marks().book.of_chat(rig.chat().chat_id) == []
    else:
        rig.ended(1)
        assert "1. a.py, line 2:\n```\ny = 3\n```\nno y" in agent_history(rig)[-1] and "went to the chat" in status


def test_edit_delete_and_the_list_whose_pick_opens_the_comment_where_the_user_asked(rig: ChatRig) -> None:
    source, other = rig.editor.workspace / "code.py", rig.editor.workspace / "other.py"
    source.write_text(LINES)
    other.write_text("pass\n")
    rig.load()
    view = rig.host.user.open_file(source)
    rig.host.user.set_selection(view, [view.text_point(6, 1)])
    rig.host.user.run_command("qwen_comment_add")
    rig.host.user.submit_input_panel("first text")
    rig.host.user.set_selection(view, [view.text_point(6, 4)])  # the caret on the comment's line
    rig.host.user.run_command("qwen_comment_edit")
    rig.host.user.submit_input_panel("second text")
    assert [c.text for c in marks().book.of_chat(rig.chat().chat_id)] == ["second text"]
    elsewhere = rig.host.user.open_file(other)
    assert rig.host.run_on_main(lambda: rig.host.window.active_view()) == elsewhere
    rig.host.user.run_command("qwen_comments_list")
    rig.host.user.choose_quick_panel("second text")  # the user's pick: it may take the keys there
    rig.host.wait_for(lambda: rig.host.run_on_main(lambda: rig.host.window.active_view()) == view, timeout=WAIT)
    assert rig.host.run_on_main(lambda: view.rowcol(view.sel()[0].b))[0] == 6
    rig.host.user.run_command("qwen_comment_delete")
    assert marks().book.of_chat(rig.chat().chat_id) == []
    assert rig.host.run_on_main(lambda: [k for k in rig.editor.host.view_state(view).regions if "comment" in k]) == []


def test_a_comment_on_a_file_deleted_since_is_sent_outdated_with_its_text_and_quote(rig: ChatRig) -> None:
    source = rig.editor.workspace / "gone.py"
    source.write_text(LINES)
    rig.load()
    view = rig.host.user.open_file(source)
    rig.host.user.set_selection(view, [view.text_point(1, 0)])
    rig.host.user.press_key(["ctrl+k", "m"])
    rig.host.user.submit_input_panel("keep this file")
    rig.host.user.close(view)
    source.unlink()
    rig.host.user.press_key(["ctrl+k", "r"])
    rig.ended(1)
    prompt = agent_history(rig)[-1]
    assert "1. gone.py, line 2:\n(outdated: the file was deleted or renamed since)\n```\nvalue_2 = 2\n```\nkeep this file" in prompt


def test_the_comments_of_a_chat_closed_since_go_with_the_next_review_of_the_active_chat(rig: ChatRig) -> None:
    source = rig.editor.workspace / "code.py"
    source.write_text(LINES)
    rig.load()
    view = rig.host.user.open_file(source)
    rig.host.user.set_selection(view, [0])
    rig.host.user.press_key(["ctrl+k", "m"])
    rig.host.user.submit_input_panel("from the first chat")
    first = rig.chat()
    rig.host.user.run_command("qwen_chat_new")
    rig.host.wait_for(lambda: rig.chat() is not first, timeout=WAIT)
    rig.host.user.run_command("qwen_chat_close", {"chat": first.chat_id})
    rig.host.wait_for(lambda: rig.chats.by_id(first.chat_id) is None, timeout=WAIT)
    rig.host.user.press_key(["ctrl+k", "r"])
    rig.ended(1)
    assert "1. code.py, line 1:\n```\nvalue_1 = 1\n```\nfrom the first chat" in agent_history(rig)[-1]


def edits_listeners(rig: ChatRig, view: Any) -> int:
    """CommentEditsListeners on the view's buffer, as Sublime's plugin host lists them."""
    listening = rig.host.sublime_plugin.text_change_listeners.get(view.buffer_id(), [])
    return sum(type(tcl).__name__ == "CommentEditsListener" for tcl in listening)


def test_a_file_reopened_with_its_comments_moves_them_with_the_users_edits(rig: ChatRig) -> None:
    source = rig.editor.workspace / "code.py"
    source.write_text(LINES)
    rig.load()
    view = rig.host.user.open_file(source)
    rig.host.user.set_selection(view, [view.text_point(4, 0)])
    rig.host.user.press_key(["ctrl+k", "m"])
    rig.host.user.submit_input_panel("line five")
    rig.host.user.close(view)
    again = rig.host.user.open_file(source)
    assert edits_listeners(rig, again) == 1  # one, however many ways Sublime and the marks attach it
    rig.host.user.set_selection(again, [0])
    rig.host.user.type(again, "# header\n")
    assert comment_lines(rig) == [(6, 6, "pending")]


def test_only_a_buffer_with_comments_hears_each_edit(rig: ChatRig) -> None:
    """No call into Python on each keystroke in every file, nor on each line
    a chat adds to its transcript."""
    source, plain = rig.editor.workspace / "code.py", rig.editor.workspace / "plain.py"
    source.write_text(LINES)
    plain.write_text(LINES)
    rig.load([[{"chunks": ["an answer"]}]])
    transcript, composer = rig.open()
    rig.send("hello")
    rig.ended(1)
    view, other = rig.host.user.open_file(source), rig.host.user.open_file(plain)
    assert (edits_listeners(rig, transcript), edits_listeners(rig, composer)) == (0, 0)
    assert (edits_listeners(rig, view), edits_listeners(rig, other)) == (0, 0)
    rig.host.user.set_selection(view, [0])
    rig.host.user.press_key(["ctrl+k", "m"])
    rig.host.user.submit_input_panel("here")
    assert (edits_listeners(rig, view), edits_listeners(rig, other)) == (1, 0)
