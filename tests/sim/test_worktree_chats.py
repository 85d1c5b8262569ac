"""Chats in git worktrees of their own, in the simulated editor with the
BUILT package and the scripted ACP agent: New Chat in a Worktree makes the
worktree and a chat whose session works there (its tabs and the status bar
name it); the agent's file methods reach the worktree only, never the
user's files or their unsaved buffers; refusals make nothing; Discard
Worktree asks first and leaves no branch and no folder; Worktrees… reopens
a worktree's chat on its conversation; Branch from Here in a worktree chat
opens the branch in the same worktree."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.sim.test_chat import FAKE_AGENT, WAIT, ChatRig
from tests.sim.test_chat_agent_work import request
from tests.support.editor import PACKAGE, require_built, wait_for_package_threads
from tests.support.headless import HeadlessSublime

pytestmark = pytest.mark.skipif(shutil.which("git") is None or sys.platform == "win32", reason="needs git")


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout


def as_repository(workspace: Path) -> None:
    git(workspace, "init", "-q", "-b", "main")
    (workspace / "a.txt").write_text("one\n")
    git(workspace, "add", "a.txt")
    git(workspace, "commit", "-q", "-m", "first")


def worktree_path(rig: ChatRig, name: str) -> Path:
    """Where the package puts worktree `name` of the workspace's repository."""
    commands = sys.modules[f"{PACKAGE}.plugin.chat.worktrees.worktree_commands"]
    store = rig.host.run_on_main(commands.worktrees_folder)
    core = sys.modules[f"{PACKAGE}.core.worktrees.worktrees"]
    return Path(core.repository_folder(store, str(rig.editor.workspace))) / name


def script(rig: ChatRig, turns: list[list[dict[str, Any]]]) -> None:
    """The agent's turns, written before it starts (the chat starts it)."""
    (rig.tmp / "script.json").write_text(json.dumps({"turns": turns, "state": str(rig.tmp / "agent-state"),
                                                     "log": str(rig.log)}))


def new_worktree_chat(rig: ChatRig, name: str) -> Any:
    before = {chat.chat_id for chat in rig.chats.all()}
    rig.host.user.run_command("qwen_chat_new_worktree", {"name": name})
    wait_for_package_threads(rig.host, "worktree", "preload")
    rig.host.wait_idle()
    return next((chat for chat in rig.chats.all() if chat.chat_id not in before), None)


def send_to(rig: ChatRig, chat: Any, text: str) -> None:
    rig.host.user.focus(chat.composer_view)
    rig.host.user.type(chat.composer_view, text)
    rig.host.user.press_key("enter")


def branches(repo: Path) -> list[str]:
    return git(repo, "branch", "--format=%(refname:short)").split()


@pytest.fixture
def repo_rig(rig: ChatRig) -> ChatRig:
    as_repository(rig.editor.workspace)
    rig.load()
    return rig


def test_a_worktree_chat_works_in_its_worktree_and_its_agent_never_reaches_the_users_files(repo_rig: ChatRig) -> None:
    rig, workspace = repo_rig, repo_rig.editor.workspace
    users = rig.host.user.open_file(workspace / "a.txt")
    rig.host.user.type(users, "typed by the user, unsaved ")
    users_text = rig.editor.text(users)
    worktree = worktree_path(rig, "fix-it")
    script(rig, [[
        request("fs/write_text_file", path=str(worktree / "a.txt"), content="the agent's\n"),
        request("fs/write_text_file", path=str(workspace / "a.txt"), content="escaped\n"),
        request("fs/read_text_file", path=str(workspace / "a.txt")),
        request("fs/write_text_file", path=str(workspace / "new.txt"), content="escaped\n"),
        {"chunks": ["done"]},
    ]])
    chat = new_worktree_chat(rig, "fix-it")
    assert chat is not None and chat.worktree.path == str(worktree) and chat.worktree.branch == "qwen/fix-it"
    rig.host.user.focus(users)  # the user's file has the keys: the selection is what a chat would send
    send_to(rig, chat, "fix it")
    rig.ended()
    answers = rig.answered("fs/write_text_file", 3)
    assert answers[0] is None or "error" not in json.dumps(answers[0])
    assert all("outside" in json.dumps(answer) for answer in answers[1:])
    assert "outside" in json.dumps(rig.answered("fs/read_text_file")[0])
    assert "typed by the user" not in rig.log.read_text()  # never read
    sent = rig.received("session/prompt")[0]["params"]["prompt"]
    assert sent == [{"type": "text", "text": "fix it"}]  # the user's file is no context of a worktree chat
    assert (worktree / "a.txt").read_text() == "the agent's\n"
    assert (workspace / "a.txt").read_text() == "one\n" and not (workspace / "new.txt").exists()
    assert rig.editor.text(users) == users_text and users.is_dirty()
    assert [m["params"]["cwd"] for m in rig.received("session/new")] == [str(worktree)]
    assert "fix-it" in chat.transcript_view.name() and "fix-it" in chat.composer_view.name()
    assert "worktree fix-it" in rig.host.run_on_main(lambda: users.get_status("qwen_chat"))
    assert "works in the worktree fix-it" in rig.editor.text(chat.transcript_view)
    assert git(workspace, "status", "--porcelain") == "" and branches(workspace) == ["main", "qwen/fix-it"]


def test_a_worktree_chat_and_the_normal_chat_share_one_agent_in_their_own_folders(repo_rig: ChatRig) -> None:
    rig, workspace = repo_rig, repo_rig.editor.workspace
    rig.send("in the project")
    rig.ended()
    chat = new_worktree_chat(rig, "side")
    send_to(rig, chat, "in the worktree")
    rig.ended(2)
    cwds = [m["params"]["cwd"] for m in rig.received("session/new")]
    assert cwds == [str(workspace), str(worktree_path(rig, "side"))]
    assert len(rig.received("initialize")) == 1


@pytest.mark.parametrize("name", ["taken", "TAKEN", "bad name", "../x"])
def test_a_refused_name_makes_no_worktree_and_no_chat_and_says_why(repo_rig: ChatRig, name: str) -> None:
    rig, workspace = repo_rig, repo_rig.editor.workspace
    git(workspace, "branch", "qwen/taken")
    before = (branches(workspace), git(workspace, "status", "--porcelain"))
    assert new_worktree_chat(rig, name) is None
    errors = [d.message for d in rig.host.dialogs if d.kind == "error"]
    assert len(errors) == 1 and "no worktree was made" in errors[0]
    assert any(e == "worktree_refused" for e, _ in rig.events)
    assert (branches(workspace), git(workspace, "status", "--porcelain")) == before
    assert not worktree_path(rig, name).exists()


def test_a_folder_that_is_no_repository_is_refused(rig: ChatRig) -> None:
    rig.load()
    assert new_worktree_chat(rig, "task") is None
    assert "not in a git repository" in next(d.message for d in rig.host.dialogs if d.kind == "error")


def test_discard_asks_then_leaves_no_branch_and_no_folder(repo_rig: ChatRig) -> None:
    rig, workspace = repo_rig, repo_rig.editor.workspace
    chat = new_worktree_chat(rig, "drop-me")
    path = Path(chat.worktree.path)
    (path / "a.txt").write_text("work to throw away\n")
    rig.host.app.answers.push("ok_cancel", False)
    rig.host.user.run_command("qwen_worktree_discard", {"chat": chat.chat_id})
    wait_for_package_threads(rig.host, "worktree")
    assert path.is_dir() and "qwen/drop-me" in branches(workspace) and chat in rig.chats.all()
    rig.host.user.run_command("qwen_worktree_discard", {"chat": chat.chat_id})
    wait_for_package_threads(rig.host, "worktree")
    rig.host.wait_idle()
    asked = [d for d in rig.host.dialogs if d.kind == "ok_cancel"]
    assert len(asked) == 2 and str(path) in asked[1].message and "qwen/drop-me" in asked[1].message
    assert not path.exists() and branches(workspace) == ["main"]
    assert chat not in rig.chats.all() and not chat.transcript_view.is_valid()
    assert (workspace / "a.txt").read_text() == "one\n"


def test_discard_is_for_worktree_chats_only(repo_rig: ChatRig) -> None:
    rig = repo_rig
    rig.open()
    enabled = rig.host.run_on_main(
        lambda: sys.modules[f"{PACKAGE}.plugin.chat.worktrees.worktree_commands"].QwenWorktreeDiscardCommand(
            rig.host.window).is_enabled())
    assert enabled is False


def test_worktrees_lists_them_and_reopens_a_closed_chat_on_its_conversation(repo_rig: ChatRig) -> None:
    rig = repo_rig
    chat = new_worktree_chat(rig, "again")
    send_to(rig, chat, "remember me")
    rig.ended()
    session = chat.core.state.session_id
    rig.host.user.run_command("qwen_chat_close", {"chat": chat.chat_id})
    rig.host.wait_idle()
    rig.host.user.run_command("qwen_worktrees")
    wait_for_package_threads(rig.host, "worktree")
    panel = rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)[0]
    assert [str(getattr(item, "trigger", item)) for item in panel.items] == ["again"]
    rig.host.user.choose_quick_panel(0)
    rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)
    rig.host.user.choose_quick_panel(0)  # Open Its Chat
    rig.host.wait_idle()
    reopened = rig.host.wait_for(lambda: next((c for c in rig.chats.all() if c.worktree is not None), None),
                                 timeout=WAIT)
    assert reopened is not chat and reopened.worktree == chat.worktree
    rig.host.wait_for(lambda: reopened.core.state.session_id == session, timeout=WAIT)
    loads = rig.host.wait_for(lambda: rig.received("session/load"), timeout=WAIT)
    assert [load["params"]["cwd"] for load in loads] == [chat.worktree.path]
    rig.host.wait_for(lambda: "remember me" in rig.editor.text(reopened.transcript_view), timeout=WAIT)  # replayed


def test_worktrees_discards_a_worktree_whose_chat_is_closed(repo_rig: ChatRig) -> None:
    rig, workspace = repo_rig, repo_rig.editor.workspace
    chat = new_worktree_chat(rig, "closed")
    path = Path(chat.worktree.path)
    rig.host.user.run_command("qwen_chat_close", {"chat": chat.chat_id})
    rig.host.user.run_command("qwen_worktrees")
    wait_for_package_threads(rig.host, "worktree")
    rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)
    rig.host.user.choose_quick_panel(0)
    rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)
    rig.host.user.choose_quick_panel(2)  # Discard Worktree…
    wait_for_package_threads(rig.host, "worktree")
    rig.host.wait_idle()
    assert [d.kind for d in rig.host.dialogs] == ["ok_cancel"]
    assert not path.exists() and branches(workspace) == ["main"]
    assert any(e == "worktree_discarded" for e, _ in rig.events)


def test_worktrees_opens_a_worktree_in_a_new_window(repo_rig: ChatRig) -> None:
    rig = repo_rig
    chat = new_worktree_chat(rig, "look")
    first = rig.host.window
    rig.host.user.run_command("qwen_worktrees")
    wait_for_package_threads(rig.host, "worktree")
    rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)
    rig.host.user.choose_quick_panel(0)
    panel = rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)[0]
    assert [str(item) for item in panel.items][1] == "Open Worktree in New Window"
    rig.host.user.choose_quick_panel(1)
    rig.host.wait_idle()
    others = [w for w in rig.host.sublime.windows() if w.id() != first.id()]
    assert len(others) == 1 and others[0].folders() == [chat.worktree.path]
    assert first.folders() == [str(rig.editor.workspace)]


def test_a_request_handler_made_after_its_worktree_chat_closed_still_confines_to_the_worktree(
        repo_rig: ChatRig) -> None:
    rig = repo_rig
    rig.editor.open("open.txt", "the user's\n")
    chat = new_worktree_chat(rig, "late")
    rig.host.user.run_command("qwen_chat_close", {"chat": chat.chat_id})
    rig.host.wait_idle()
    handler = rig.host.run_on_main(lambda: rig.chats.request_handler(rig.host.window, chat.chat_id))
    assert rig.host.run_on_main(handler._where) == ([chat.worktree.path], [])


def test_a_reload_leaves_no_worktree_chat_running_in_the_project(repo_rig: ChatRig) -> None:
    rig, workspace = repo_rig, repo_rig.editor.workspace
    rig.send("in the project")
    rig.ended()
    chat = new_worktree_chat(rig, "kept")
    send_to(rig, chat, "in the worktree")
    rig.ended(2)
    rig.host.reload_package(PACKAGE)
    rig.watch()
    window = rig.host.window
    rig.host.wait_for(lambda: len(rig.chats.of_window(window)) == 1, timeout=WAIT)
    rig.editor.wait_for_package_threads("start", "preload")
    rig.host.wait_idle()
    assert [c.worktree for c in rig.chats.of_window(window)] == [None]
    assert sorted(view.name() for view in window.views()) == ["Qwen Chat", "Qwen Chat: message"]
    assert Path(chat.worktree.path).is_dir() and "qwen/kept" in branches(workspace)  # Worktrees… reopens it


def test_the_driver_makes_lists_and_discards_worktree_chats(tmp_path: Path) -> None:
    require_built()
    home, workspace = tmp_path / "home", (tmp_path / "workspace").resolve()
    workspace.mkdir()
    as_repository(workspace)
    turns = tmp_path / "script.json"
    turns.write_text(json.dumps({"turns": [[{"echo": "answer to "}]], "log": str(tmp_path / "agent-log.jsonl")}))
    user = home / ".config" / "sublime-text" / "Packages" / "User"
    user.mkdir(parents=True)
    (user / "QwenCompanion.sublime-settings").write_text(json.dumps({
        "qwen_command": [sys.executable, str(FAKE_AGENT), str(turns)], "worktrees_folder": str(tmp_path / "trees")}))
    editor = HeadlessSublime(workspace, home)
    try:
        made = editor.do("chat_new", worktree="task")
        assert made["ok"], made
        path = Path(made["worktree"]["path"])
        assert made["worktree"]["branch"] == "qwen/task" and path.is_relative_to(tmp_path / "trees")
        assert editor.do("chat", chat=made["chat"], text="hi")["ok"]
        editor.wait_event(lambda e: e.get("event") == "chat_turn_ended" and e["chat"] == made["chat"])
        assert "answer to hi" in editor.do("chat_text", chat=made["chat"])["text"]
        listed = editor.do("worktrees")["worktrees"]
        assert listed == [{"name": "task", "path": str(path), "branch": "qwen/task", "chat": made["chat"],
                           "state": "empty"}]
        refused = editor.do("chat_new", worktree="task")
        assert not refused["ok"] and "already exists" in refused["error"]
        gone = editor.do("worktree_discard", chat=made["chat"])
        assert gone["ok"] and gone["worktree"]["path"] == str(path)
        assert not path.exists() and branches(workspace) == ["main"]
        assert editor.do("worktrees")["worktrees"] == []
    finally:
        editor.kill()


def test_branch_from_here_in_a_worktree_chat_opens_a_chat_in_the_same_worktree(repo_rig: ChatRig) -> None:
    rig, workspace = repo_rig, repo_rig.editor.workspace
    (rig.tmp / "script.json").write_text(json.dumps({
        "turns": [[{"chunks": ["one"]}], [{"chunks": ["two"]}], [{"chunks": ["three"]}]],
        "state": str(rig.tmp / "agent-state"), "log": str(rig.log),
        "agent_name": "qwen-code", "branch_points": True}))  # qwen's branch, as qwen 0.24.4 answers it
    chat = new_worktree_chat(rig, "fork")
    send_to(rig, chat, "first question")
    rig.ended()
    send_to(rig, chat, "second question")
    rig.ended(2)
    before = {c.chat_id for c in rig.chats.all()}
    rig.host.user.run_command("qwen_chat_branch", {"turn": 0, "chat": chat.chat_id})
    branched = rig.host.wait_for(lambda: next((c for c in rig.chats.all() if c.chat_id not in before), None),
                                 timeout=WAIT)
    assert branched.worktree == chat.worktree  # the same worktree record: confined to it, listed with it
    loads = rig.host.wait_for(lambda: rig.received("session/load"), timeout=WAIT)
    assert [load["params"]["cwd"] for load in loads] == [chat.worktree.path]
    rig.host.wait_for(lambda: "first question" in rig.editor.text(branched.transcript_view), timeout=WAIT)
    assert "second question" not in rig.editor.text(branched.transcript_view)
    assert "⎇ fork" in branched.transcript_view.name() and "⎇ fork" in branched.composer_view.name()
    send_to(rig, branched, "third question")
    rig.ended(3)
    prompts = rig.received("session/prompt")
    assert prompts[-1]["params"]["sessionId"] == branched.core.state.session_id != chat.core.state.session_id
    assert [m["params"]["cwd"] for m in rig.received("session/new")] == [chat.worktree.path]  # no session in the project
    assert git(workspace, "status", "--porcelain") == ""
