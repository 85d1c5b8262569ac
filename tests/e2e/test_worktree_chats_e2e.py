"""A chat in a git worktree against the real `qwen --acp` (0.24.4) and the
fake model: the session works in the worktree (its shell starts there), the
agent's writes land in the worktree, and the user's file in the project,
open with unsaved changes, stays as the user left it, even when the agent
aims at it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_chat_e2e import WAIT, RealChat
from tests.rig.fake_model import Reply, read_file, tool_call, write_file
from tests.support.editor import PACKAGE, wait_for_package_threads

pytestmark = pytest.mark.e2e


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout


def new_worktree_chat(chat: RealChat, name: str) -> Any:
    chat.host.user.run_command("qwen_chat_new_worktree", {"name": name})
    wait_for_package_threads(chat.host, "worktree", "preload")
    chat.host.wait_idle()
    return chat.host.wait_for(lambda: next((c for c in chat.chats.all() if c.worktree is not None), None), timeout=WAIT)


def tool_results(chat: RealChat) -> str:
    return json.dumps([m for body in chat.model.agent_requests for m in body.get("messages", []) if m.get("role") == "tool"])


def test_a_worktree_chats_agent_writes_in_its_worktree_and_the_users_file_stays(real_chat: RealChat,
                                                                                workspace: Path) -> None:
    git(workspace, "init", "-q", "-b", "main")
    (workspace / "a.txt").write_text("one\n")
    git(workspace, "add", "a.txt")
    git(workspace, "commit", "-q", "-m", "first")
    users = real_chat.host.user.open_file(workspace / "a.txt")
    real_chat.host.user.type(users, "mine, unsaved ")
    typed = real_chat.editor.text(users)
    chat = new_worktree_chat(real_chat, "agent-task")
    worktree = Path(chat.worktree.path)
    real_chat.host.wait_for(lambda: chat.core.state.session_id is not None, timeout=WAIT)
    chat.core.option_setter.set_mode("yolo").result(WAIT)  # no permission asked: the writes go straight to fs methods
    real_chat.model.queue(
        read_file(str(worktree / "a.txt")),
        write_file(str(worktree / "a.txt"), "the agent's\n"),
        write_file(str(worktree / "new.txt"), "new\n"),
        read_file(str(workspace / "a.txt")),
        write_file(str(workspace / "escaped.txt"), "escaped\n"),
        tool_call("run_shell_command", {"command": "pwd > where.txt", "is_background": False}),
        Reply(text="Done."),
    )
    real_chat.host.user.focus(chat.composer_view)
    real_chat.host.user.type(chat.composer_view, "do the task")
    real_chat.host.user.press_key("enter")
    assert real_chat.ended() == ["end_turn"]
    assert (worktree / "a.txt").read_text() == "the agent's\n" and (worktree / "new.txt").read_text() == "new\n"
    assert (worktree / "where.txt").read_text().strip() == str(worktree)  # the session's shell starts there
    results = tool_results(real_chat)  # qwen passes the refusal on as "Invalid params" (-32602)
    assert "Error reading file" in results and "Error writing to file: Invalid params" in results
    assert "mine, unsaved" not in json.dumps(real_chat.model.agent_requests)
    assert (workspace / "a.txt").read_text() == "one\n"
    assert not (workspace / "escaped.txt").exists() and not (workspace / "where.txt").exists()
    assert real_chat.editor.text(users) == typed and users.is_dirty()
    assert git(workspace, "status", "--porcelain") == "" and "qwen/agent-task" in git(workspace, "branch")
    assert "agent-task" in sys.modules[f"{PACKAGE}.plugin.chat.transcript.chat_views"].status_text(chat)
