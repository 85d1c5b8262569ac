"""The review view of every hunk, in the simulated editor with the BUILT
package and the scripted ACP agent: it opens in the code's group with the
turn's hunks scoped, k / u / Enter on the hunk under the caret, Undo of one
hunk through the write path (one undo step, never over the user's later
text, a buffer with unsaved edits never saved), a closed file undone on
disk in its own encoding, and the keys staying the user's when it opens by
the agent's doing or follows a running turn."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.sim.test_chat import WAIT, ChatRig
from tests.sim.test_chat_agent_work import pending, request, shell_permission, wait_answers
from tests.sim.test_headless_chat import use_scripted_agent
from tests.sim.test_worktree_chats import new_worktree_chat, script, send_to, worktree_path
from tests.sim.test_worktree_review import LINES, agent_edits, open_panel, repo_rig  # noqa: F401  (a fixture)
from tests.support.editor import PACKAGE, open_editor, require_built, wait_for_package_threads
from tests.support.headless import HeadlessSublime

BEFORE = "".join(f"line {n}\n" for n in range(1, 21))
AFTER = BEFORE.replace("line 3\n", "THREE\n").replace("line 17\n", "SEVENTEEN\nmore\n")
FIRST_UNDONE = AFTER.replace("THREE\n", "line 3\n")


def views_module() -> Any:
    return sys.modules[f"{PACKAGE}.plugin.review_hunks.review_view"]


def agent_turn(rig: ChatRig, path: Path, content: str = AFTER, open_it: bool = True) -> Any:
    """The agent reads `path` and rewrites it; the file open in a view unless not `open_it`."""
    path.write_text(BEFORE)
    rig.load([[request("fs/read_text_file", path=str(path)), request("fs/write_text_file", path=str(path), content=content)]])
    view = rig.host.user.open_file(path) if open_it else None
    rig.send("edit it in two places")
    assert rig.ended() == ["end_turn"]
    assert wait_answers(rig, "fs/write_text_file") == [None]
    return view


def review_view(rig: ChatRig) -> Any:
    """The review view once its hunks are shown."""
    record = rig.host.wait_for(lambda: next(iter(views_module()._open.values()), None), timeout=WAIT)
    rig.host.wait_for(lambda: "@@" in rig.editor.text(record.view), timeout=WAIT)
    return record.view


def caret_on(rig: ChatRig, view: Any, text: str) -> None:
    point = rig.editor.text(view).index(text)
    rig.host.user.click(view, point)


def undo_settled(rig: ChatRig) -> None:
    wait_for_package_threads(rig.host, "review undo")
    rig.host.wait_idle()


def test_the_review_opens_in_the_code_group_with_the_turns_hunks_scoped(rig: ChatRig) -> None:
    path = rig.editor.workspace / "notes.txt"
    code = agent_turn(rig, path)
    rig.host.user.focus(code)
    rig.host.user.run_command("qwen_review_changes")
    view = review_view(rig)
    window = rig.host.window
    assert rig.host.run_on_main(lambda: window.get_view_index(view)[0]) == rig.host.run_on_main(
        lambda: window.get_view_index(code)[0])
    assert rig.host.run_on_main(lambda: window.active_view()) == view  # the user asked: it has the keys
    text = rig.editor.text(view)
    assert "== notes.txt  +3 −2  2 hunks pending" in text
    assert "@@ line 3  +1 −1\n line 1\n line 2\n-line 3\n+THREE\n line 4\n" in text
    assert "@@ line 17  +2 −1" in text
    scope_at = lambda snippet: rig.host.run_on_main(lambda: view.scope_name(text.index(snippet) + 1))  # noqa: E731
    assert "markup.inserted" in scope_at("+THREE") and "markup.inserted" in scope_at("+more")
    assert "markup.deleted" in scope_at("-line 3") and "markup.heading" in scope_at("== notes.txt")
    assert "markup" not in scope_at(" line 4")
    assert rig.host.run_on_main(lambda: view.is_read_only())
    placement = sys.modules[f"{PACKAGE}.plugin.placement"]
    assert rig.host.run_on_main(lambda: placement.is_package_view(view))
    # Enter opens the file at the hunk's change, in the code's group
    caret_on(rig, view, "+SEVENTEEN")
    assert rig.host.user.press_key("enter").command == "qwen_review_hunk"
    rig.host.wait_idle()
    assert rig.host.run_on_main(lambda: window.active_view()) == code
    assert rig.host.run_on_main(lambda: code.rowcol(code.sel()[0].b)) == (16, 0)
    # the review's letters are bound in review views only: elsewhere they type
    rig.host.user.click(code, 0)
    assert rig.host.user.press_key("k") is None and rig.editor.text(code).startswith("kline 1")


def test_u_undoes_the_hunk_under_the_caret_alone_as_one_undo_step_and_saves_a_clean_file(rig: ChatRig) -> None:
    path = rig.editor.workspace / "notes.txt"
    code = agent_turn(rig, path)
    rig.host.user.run_command("qwen_review_changes")
    view = review_view(rig)
    caret_on(rig, view, "+THREE")
    binding = rig.host.user.press_key("u")
    assert binding is not None and binding.command == "qwen_review_hunk"
    undo_settled(rig)
    assert rig.editor.text(code) == FIRST_UNDONE and path.read_text() == FIRST_UNDONE
    assert "THREE" not in rig.editor.text(view) and "1 hunk pending · 1 undone" in rig.editor.text(view)
    rig.host.run_on_main(lambda: code.run_command("undo"))  # one undo step brings the agent's lines back
    assert rig.editor.text(code) == AFTER
    caret_on(rig, view, "+SEVENTEEN")
    rig.host.user.press_key("k")
    rig.host.wait_idle()
    assert "0 hunks pending · 1 kept · 1 undone" in rig.editor.text(view)


@pytest.mark.parametrize(("keys", "action", "text", "counts"), [
    ("a, u", "undo_all", BEFORE, "0 hunks pending · 2 undone"), ("a, k", "keep_all", AFTER, "0 hunks pending · 2 kept")])
def test_a_u_undoes_and_a_k_keeps_every_hunk_of_every_file(rig: ChatRig, keys: str, action: str, text: str,
                                                           counts: str) -> None:
    path = rig.editor.workspace / "notes.txt"
    code = agent_turn(rig, path)
    rig.host.user.run_command("qwen_review_changes")
    view = review_view(rig)
    binding = rig.host.user.press_key(keys)
    assert binding is not None and binding.args == {"action": action}
    undo_settled(rig)
    assert rig.editor.text(code) == text and counts in rig.editor.text(view)


def test_undo_is_refused_over_what_the_user_typed_on_the_hunks_lines(rig: ChatRig) -> None:
    path = rig.editor.workspace / "notes.txt"
    code = agent_turn(rig, path)
    caret_on(rig, code, "THREE")
    rig.host.user.type(code, "my ")  # on the hunk's own line
    typed = AFTER.replace("THREE", "my THREE")
    rig.host.user.run_command("qwen_review_changes")
    view = review_view(rig)
    caret_on(rig, view, "+THREE")
    rig.host.user.press_key("u")
    undo_settled(rig)
    assert rig.editor.text(code) == typed and path.read_text() == AFTER
    assert any("not undone" in message and "changed since" in message for _, message in rig.host.app.status_messages)
    assert "@@ line 3" in rig.editor.text(view)  # still pending


def test_undo_keeps_unsaved_edits_elsewhere_and_never_saves_them(rig: ChatRig) -> None:
    path = rig.editor.workspace / "notes.txt"
    code = agent_turn(rig, path)
    rig.host.user.click(code, 0)
    rig.host.user.type(code, "# mine, unsaved\n")
    rig.host.user.run_command("qwen_review_changes")
    view = review_view(rig)
    caret_on(rig, view, "+SEVENTEEN")
    rig.host.user.press_key("u")
    undo_settled(rig)
    expected = "# mine, unsaved\n" + AFTER.replace("SEVENTEEN\nmore\n", "line 17\n")
    assert rig.editor.text(code) == expected
    assert path.read_text() == AFTER  # not saved: the user's unsaved line is theirs to save
    assert rig.host.run_on_main(lambda: code.is_dirty())


def test_a_closed_file_is_undone_on_disk_in_its_own_encoding_and_newlines(rig: ChatRig) -> None:
    path = rig.editor.workspace / "crlf.txt"
    agent_turn(rig, path, open_it=False)
    assert path.read_bytes() == AFTER.encode()
    path.write_bytes(AFTER.replace("\n", "\r\n").encode())  # as a CRLF file holds it (the agent's write keeps the shape)
    rig.host.user.run_command("qwen_review_changes")
    view = review_view(rig)
    caret_on(rig, view, "+THREE")
    rig.host.user.press_key("u")
    undo_settled(rig)
    assert path.read_bytes() == FIRST_UNDONE.replace("\n", "\r\n").encode()


def test_opened_by_the_agents_doing_and_following_a_running_turn_the_keys_stay_the_users(rig: ChatRig) -> None:
    path = rig.editor.workspace / "notes.txt"
    path.write_text(BEFORE)
    rig.load([[request("fs/read_text_file", path=str(path)),
               request("fs/write_text_file", path=str(path), content=BEFORE.replace("line 3\n", "THREE\n")),
               shell_permission("true"),
               request("fs/write_text_file", path=str(path), content=AFTER)]])
    code = rig.host.user.open_file(path)
    rig.send("edit it")
    pending(rig)  # the turn waits on the question, one write landed
    rig.host.user.focus(code)
    keys = rig.host.run_on_main(lambda: rig.host.app.keys())
    window = rig.host.window
    source = sys.modules[f"{PACKAGE}.plugin.review_hunks.turn_source"].turn_source
    rig.host.run_on_main(lambda: views_module().open_review(window, source(window, None, None), by_user=False))
    view = review_view(rig)
    assert "1 hunk pending" in rig.editor.text(view)
    assert rig.host.run_on_main(lambda: rig.host.app.keys_still_there(keys))
    transcript, _ = rig.open()
    rig.host.user.focus(transcript)
    rig.host.user.press_key("1")  # allow: the agent writes again
    assert rig.ended() == ["end_turn"]
    rig.host.user.focus(code)
    keys = rig.host.run_on_main(lambda: rig.host.app.keys())
    rig.host.wait_for(lambda: "2 hunks pending" in rig.editor.text(view), timeout=WAIT)
    assert rig.host.run_on_main(lambda: rig.host.app.keys_still_there(keys))
    assert rig.host.run_on_main(lambda: window.active_view()) == code


def driven_editor(tmp_path: Path, *writes: str) -> tuple[HeadlessSublime, Path]:
    """The headless editor whose agent writes each of `writes` to notes.txt (BEFORE at first), one a turn."""
    require_built()
    home, workspace = tmp_path / "home", (tmp_path / "workspace").resolve()
    workspace.mkdir()
    path = workspace / "notes.txt"
    path.write_text(BEFORE)
    turns = [[{"request": "fs/write_text_file", "params": {"sessionId": "", "path": str(path), "content": text}}]
             for text in writes]
    turns[0].insert(0, {"request": "fs/read_text_file", "params": {"sessionId": "", "path": str(path)}})
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": turns}))
    use_scripted_agent(home, script)
    return HeadlessSublime(workspace, home), path


def test_the_drivers_review_verbs_keep_undo_and_refuse(tmp_path: Path) -> None:
    editor, path = driven_editor(tmp_path, AFTER)
    try:
        assert editor.do("chat_mode", mode="yolo")["ok"]
        assert editor.do("open", path=str(path))["ok"]
        assert editor.do("chat", text="change it")["ok"]
        editor.wait_event(lambda e: e.get("event") == "turn_changes")
        review = editor.do("review_open")
        assert [(h["index"], h["start"], h["state"]) for h in review["hunks"]] == [(0, 3, "pending"), (1, 17, "pending")]
        kept = editor.do("hunk_keep", path=str(path), index=1)  # the hunk of the line the agent added
        assert [(h["index"], h["start"], h["state"]) for h in kept["hunks"]] == [(0, 3, "pending"), (1, 17, "kept")]
        again = editor.do("hunk_keep", path=str(path), index=1)
        assert not again["ok"] and "kept, not pending" in again["error"]
        assert editor.do("set_text", path=str(path), text=AFTER.replace("THREE", "mine"))["ok"]
        refused = editor.do("hunk_undo", path=str(path), index=0)
        assert not refused["ok"] and "changed since" in refused["error"]
        assert editor.do("text", path=str(path))["text"] == AFTER.replace("THREE", "mine")
        assert editor.quit()["ok"]
    finally:
        editor.kill()


@pytest.mark.skipif(shutil.which("git") is None or sys.platform == "win32", reason="needs git")
@pytest.mark.usefixtures("repo_rig")  # the same rig, its folder a repository with b.txt committed
def test_worktree_changes_offer_the_review_and_an_undone_hunk_changes_the_worktrees_file(rig: ChatRig) -> None:
    changed = LINES.replace("line 2\n", "TWO\n").replace("line 18\n", "EIGHTEEN\n")
    chat = agent_edits(rig, "hunks", {"b.txt": changed})
    tree_file = worktree_path(rig, "hunks") / "b.txt"
    comments = sys.modules[f"{PACKAGE}.plugin.chat.comments.comment_marks"].book
    comments.add(chat.chat_id, str(tree_file), 18, None, "why eighteen?")  # as Add Comment… in the worktree's file
    rig.host.user.run_command("qwen_worktree_changes", {"chat": chat.chat_id})
    wait_for_package_threads(rig.host, "worktree")
    open_panel(rig)
    rig.host.user.choose_quick_panel("Review every hunk")
    view = review_view(rig)
    assert "== " in rig.editor.text(view) and "2 hunks pending" in rig.editor.text(view)
    assert "+EIGHTEEN\n   ▸ comment: why eighteen?" in rig.editor.text(view)  # under its line
    caret_on(rig, view, "+EIGHTEEN")
    rig.host.user.press_key("u")
    undo_settled(rig)
    assert tree_file.read_text() == LINES.replace("line 2\n", "TWO\n")
    assert (rig.editor.workspace / "b.txt").read_text() == LINES  # the user's own file is not the worktree's


def test_a_proposals_hunk_is_undone_in_the_proposal_never_in_the_file(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    with open_editor(tmp_path, monkeypatch) as editor:
        path = editor.file("a.txt", BEFORE)
        cli = editor.cli()
        original, proposed = editor.propose(cli, path, AFTER)
        editor.host.user.focus(proposed)
        editor.host.user.run_command("qwen_review_changes")  # from a review's tab: its proposal's hunks
        record = editor.host.wait_for(lambda: next(iter(views_module()._open.values()), None), timeout=WAIT)
        view = record.view
        editor.host.wait_for(lambda: "@@" in editor.text(view), timeout=WAIT)
        assert editor.host.run_on_main(lambda: view.name()) == "Review: proposal for a.txt"
        point = editor.text(view).index("+THREE")
        editor.host.user.click(view, point)
        editor.host.user.press_key("u")
        wait_for_package_threads(editor.host, "review undo")
        editor.host.wait_idle()
        assert editor.text(proposed) == FIRST_UNDONE  # the proposal lost that hunk
        assert path.read_text() == BEFORE and editor.text(original) == BEFORE  # the file is the review's to write
        assert cli.quiet()  # nothing accepted: the proposal tab was not saved
        editor.host.user.click_annotation(proposed, "accept")
        assert cli.next_notification()["params"]["content"] == FIRST_UNDONE


def test_the_driver_opens_every_turn_since_one_against_each_files_earliest_text(tmp_path: Path) -> None:
    editor, path = driven_editor(tmp_path, BEFORE.replace("line 3\n", "THREE\n"), AFTER)
    try:
        assert editor.do("chat_mode", mode="yolo")["ok"]
        turns = []
        for text in ("change line 3", "change line 17"):
            assert editor.do("chat", text=text)["ok"]
            turns.append(editor.wait_event(lambda e: e.get("event") == "turn_changes" and e["turn"] not in turns)["turn"])
        last = editor.do("review_open")
        assert [(h["start"], h["state"]) for h in last["hunks"]] == [(17, "pending")]  # the last turn's alone
        since = editor.do("review_open", since=turns[0])
        assert [(h["index"], h["start"], h["added"], h["removed"]) for h in since["hunks"]] == [(0, 3, 1, 1), (1, 17, 2, 1)]
        undone = editor.do("hunk_undo", path=str(path), index=0)
        assert [(h["index"], h["state"]) for h in undone["hunks"]] == [(0, "undone"), (1, "pending")]
        assert path.read_text() == FIRST_UNDONE
        assert editor.quit()["ok"]
    finally:
        editor.kill()


@pytest.mark.skipif(shutil.which("git") is None or sys.platform == "win32", reason="needs git")
@pytest.mark.usefixtures("repo_rig")
def test_a_worktree_review_follows_the_chats_next_turn(rig: ChatRig) -> None:
    tree_file = worktree_path(rig, "live") / "b.txt"
    two = LINES.replace("line 2\n", "TWO\n")
    script(rig, [[request("fs/write_text_file", path=str(tree_file), content=two), {"chunks": ["one"]}],
                 [request("fs/write_text_file", path=str(tree_file), content=two.replace("line 18\n", "EIGHTEEN\n")),
                  {"chunks": ["two"]}]])
    chat = new_worktree_chat(rig, "live")
    send_to(rig, chat, "first")
    rig.host.wait_for(lambda: [e for e, _ in rig.events if e == "chat_turn_ended"], timeout=WAIT)
    rig.host.user.run_command("qwen_worktree_changes", {"chat": chat.chat_id})
    wait_for_package_threads(rig.host, "worktree")
    open_panel(rig)
    rig.host.user.choose_quick_panel("Review every hunk")
    view = review_view(rig)
    assert "1 hunk pending" in rig.editor.text(view)
    send_to(rig, chat, "second")
    rig.host.wait_for(lambda: len([e for e, _ in rig.events if e == "chat_turn_ended"]) == 2, timeout=WAIT)
    rig.host.wait_for(lambda: "+EIGHTEEN" in rig.editor.text(view), timeout=WAIT)  # no reopening
    assert "2 hunks pending" in rig.editor.text(view)
