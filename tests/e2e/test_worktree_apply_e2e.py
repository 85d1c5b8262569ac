"""Two worktree chats against the real `qwen --acp` (0.24.4) and the fake
model edit the same file differently at the same time; the user's open
file stays as it is meanwhile. Apply to My Files takes the first cleanly
(into the open view, saved); the second then overlaps it: refused whole
with `worktree_apply_conflicts: "refuse"`, standard conflict markers with
"markers", reported per file. Discard leaves no branch and no folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_chat_e2e import WAIT, RealChat
from tests.e2e.test_worktree_chats_e2e import git
from tests.rig.fake_model import JSON, Reply, is_agent_request, read_file, tool_results, user_texts, write_file
from tests.support.editor import wait_for_package_threads

pytestmark = pytest.mark.e2e
LINES = "".join(f"line {n}\n" for n in range(1, 11))


def new_worktree_chat(chat: RealChat, name: str) -> Any:
    before = {c.chat_id for c in chat.chats.all()}
    chat.host.user.run_command("qwen_chat_new_worktree", {"name": name})
    wait_for_package_threads(chat.host, "worktree", "preload")
    chat.host.wait_idle()
    made = chat.host.wait_for(lambda: next((c for c in chat.chats.all() if c.chat_id not in before), None),
                              timeout=WAIT)
    chat.host.wait_for(lambda: made.core.state.session_id is not None, timeout=WAIT)
    made.core.option_setter.set_mode("yolo").result(WAIT)  # no permission asked: the writes go straight to fs methods
    return made


def apply(chat: RealChat, worktree_chat: Any) -> dict[str, list[tuple[str, str]]]:
    before = len([e for e, _ in chat.events if e == "worktree_applied"])
    chat.host.user.run_command("qwen_worktree_apply", {"chat": worktree_chat.chat_id})
    wait_for_package_threads(chat.host, "worktree")
    chat.host.wait_idle()
    done = chat.host.wait_for(lambda: [d for e, d in chat.events if e == "worktree_applied"][before:], timeout=WAIT)
    return {kind: [(o["path"], o["why"]) for o in done[0][kind]] for kind in ("applied", "conflicts", "refused")}


def test_two_worktree_chats_edit_one_file_then_one_applies_cleanly_and_the_other_conflicts(
        real_chat: RealChat, workspace: Path) -> None:
    git(workspace, "init", "-q", "-b", "main")
    (workspace / "a.txt").write_text(LINES)
    git(workspace, "add", "a.txt")
    git(workspace, "commit", "-q", "-m", "first")
    users = real_chat.host.user.open_file(workspace / "a.txt")
    one, two = new_worktree_chat(real_chat, "one"), new_worktree_chat(real_chat, "two")
    edits = {"task one": (Path(one.worktree.path), LINES.replace("line 5\n", "line 5, by one\n")),
             "task two": (Path(two.worktree.path), LINES.replace("line 5\n", "line 5, by two\n"))}

    def respond(body: JSON) -> Reply | None:
        """Each chat's conversation gets its own edit, however the two interleave."""
        task = next((t for t in edits if any(t in said for said in user_texts(body))), None)
        if not is_agent_request(body) or task is None:
            return None
        folder, text = edits[task]
        steps = [read_file(str(folder / "a.txt")), write_file(str(folder / "a.txt"), text), Reply(text="Done.")]
        return steps[min(len(tool_results(body)), 2)]  # qwen writes a file only once it was read

    real_chat.model.set_responder(respond)
    for chat, task in ((one, "task one"), (two, "task two")):  # both sent before either ends
        real_chat.host.user.focus(chat.composer_view)
        real_chat.host.user.type(chat.composer_view, task)
        real_chat.host.user.press_key("enter")
    assert real_chat.ended(2) == ["end_turn", "end_turn"]
    for task, (folder, text) in edits.items():
        assert (folder / "a.txt").read_text() == text, task
    assert (workspace / "a.txt").read_text() == LINES and real_chat.editor.text(users) == LINES  # untouched
    assert git(workspace, "status", "--porcelain") == ""

    first = apply(real_chat, one)
    assert first == {"applied": [("a.txt", "")], "conflicts": [], "refused": []}
    assert real_chat.editor.text(users) == edits["task one"][1] and not users.is_dirty()
    assert (workspace / "a.txt").read_text() == edits["task one"][1]

    real_chat.editor.settings({"worktree_apply_conflicts": "refuse"})
    refused = apply(real_chat, two)
    assert refused == {"applied": [], "conflicts": [], "refused": [("a.txt", "has uncommitted changes in your files")]}
    assert (workspace / "a.txt").read_text() == edits["task one"][1]

    real_chat.editor.settings({"worktree_apply_conflicts": "markers"})
    marked = apply(real_chat, two)
    assert marked == {"applied": [], "conflicts": [("a.txt", "1 conflict marked")], "refused": []}
    text = (workspace / "a.txt").read_text()
    assert "<<<<<<< your files\nline 5, by one\n=======\nline 5, by two\n>>>>>>> worktree two\n" in text
    assert real_chat.editor.text(users) == text and not users.is_dirty()
    assert "conflict: a.txt (1 conflict marked" in real_chat.editor.text(two.transcript_view)

    for chat in (one, two):
        path = Path(chat.worktree.path)
        real_chat.host.user.run_command("qwen_worktree_discard", {"chat": chat.chat_id})
        wait_for_package_threads(real_chat.host, "worktree")
        real_chat.host.wait_idle()
        real_chat.host.wait_for(lambda p=path: not p.exists(), timeout=WAIT)
    assert git(workspace, "branch", "--format=%(refname:short)").split() == ["main"]
    assert git(workspace, "worktree", "list", "--porcelain").count("worktree ") == 1
