"""Worktree Changes and Apply to My Files in the simulated editor with the
BUILT package and the scripted ACP agent: the changes listed against the
worktree's base, a file opened with its base as reference, Keep and Drop;
Apply merges into the user's files (an open clean file as one undo step, a
file with unsaved edits refused and untouched, conflicts marked or the
apply refused whole per the setting); Worktrees… shows each worktree's
state; an agent that rewrites its worktree's `.git` or plants a repository
gets nothing applied."""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from qwencompanion_src.core.worktrees.worktrees import repository_folder
from tests.sim.test_chat import FAKE_AGENT, WAIT, ChatRig
from tests.sim.test_chat_agent_work import request
from tests.sim.test_chat_turn_changes import FORMAT_ON_SAVE
from tests.sim.test_worktree_chats import as_repository, git, new_worktree_chat, script, send_to, worktree_path
from tests.sublime_sim.fixtures import write_package
from tests.support.editor import PACKAGE, require_built, wait_for_package_threads
from tests.support.headless import HeadlessSublime

pytestmark = pytest.mark.skipif(shutil.which("git") is None or sys.platform == "win32", reason="needs git")
LINES = "".join(f"line {n}\n" for n in range(1, 21))


@pytest.fixture
def repo_rig(rig: ChatRig) -> ChatRig:
    as_repository(rig.editor.workspace)
    workspace = rig.editor.workspace
    (workspace / "b.txt").write_text(LINES)
    git(workspace, "add", "b.txt")
    git(workspace, "commit", "-q", "-m", "b")
    rig.load()
    return rig


def agent_edits(rig: ChatRig, name: str, writes: dict[str, str]) -> Any:
    """A worktree chat whose agent writes `writes` (relative path -> text) in
    one turn; a write into a `.git` asks, and the user says yes (the worst case)."""
    worktree = worktree_path(rig, name)
    script(rig, [[*(request("fs/write_text_file", path=str(worktree / path), content=text)
                    for path, text in writes.items()), {"chunks": ["done"]}]])
    chat = new_worktree_chat(rig, name)
    send_to(rig, chat, "do it")

    def ended_saying_yes() -> bool:
        asked = [q for q in rig.host.quick_panels if not q.done]
        if asked:
            rig.host.user.choose_quick_panel(1)  # Allow once
        return any(e == "chat_turn_ended" for e, _ in rig.events)

    rig.host.wait_for(ended_saying_yes, timeout=WAIT)
    return chat


def apply(rig: ChatRig, chat: Any, files: list[str] | None = None) -> dict[str, Any]:
    before = len([e for e, _ in rig.events if e == "worktree_applied"])
    rig.host.user.run_command("qwen_worktree_apply", {"chat": chat.chat_id, **({"files": files} if files else {})})
    wait_for_package_threads(rig.host, "worktree")
    rig.host.wait_idle()
    done = rig.host.wait_for(lambda: [d for e, d in rig.events if e == "worktree_applied"][before:], timeout=WAIT)
    return {kind: [(o["path"], o["why"]) for o in done[0][kind]] for kind in ("applied", "conflicts", "refused")}


def open_panel(rig: ChatRig) -> Any:
    return rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)[-1]


def reference(rig: ChatRig, view: Any) -> str | None:
    state = rig.host.app.view(view.id())
    return None if state is None else state.buffer.reference_document


def settle(rig: ChatRig) -> None:
    """A file's action done: its paths resolved on a thread of ours, then (Open) its reference
    computed on another, each followed by its main-thread part."""
    for thread in ("worktree", "turn summary"):
        wait_for_package_threads(rig.host, thread)
        rig.host.wait_idle()


def dropped(rig: ChatRig) -> None:
    """Drop done: its views looked for, then the file put back, each on a thread of ours."""
    rig.host.wait_for(lambda: any(e == "worktree_dropped" for e, _ in rig.events), timeout=WAIT)
    rig.host.wait_idle()


def test_worktree_changes_lists_them_and_opens_a_file_with_its_base_as_reference(repo_rig: ChatRig) -> None:
    rig = repo_rig
    chat = agent_edits(rig, "review", {"b.txt": LINES.replace("line 5\n", "line 5 changed\n"), "new.txt": "n\n"})
    rig.host.user.run_command("qwen_worktree_changes", {"chat": chat.chat_id})
    wait_for_package_threads(rig.host, "worktree")
    panel = open_panel(rig)
    assert [list(item) for item in panel.items] == [
        ["b.txt", "+1 −1 · modified"], ["new.txt", "+1 −0 · added"],
        ["Apply to My Files", "merge every change into your files (conflicts per the settings)"]]
    rig.host.user.choose_quick_panel(0)
    assert str(open_panel(rig).items[0]) == "Open with its base as reference"
    rig.host.user.choose_quick_panel(0)
    settle(rig)
    opened = rig.host.wait_for(lambda: next((v for v in rig.host.window.views()
                                             if v.file_name() == str(worktree_path(rig, "review") / "b.txt")), None),
                               timeout=WAIT)
    rig.host.wait_for(lambda: reference(rig, opened) == LINES, timeout=WAIT)
    assert rig.host.run_on_main(lambda: opened.rowcol(opened.sel()[0].b)) == (4, 0)  # at its first change


def test_keep_and_drop(repo_rig: ChatRig) -> None:
    rig = repo_rig
    chat = agent_edits(rig, "pick", {"b.txt": "all new\n", "a.txt": "one, the agent's\n"})
    rig.host.user.run_command("qwen_worktree_changes", {"chat": chat.chat_id})
    wait_for_package_threads(rig.host, "worktree")
    open_panel(rig)
    rig.host.user.choose_quick_panel(1)  # b.txt
    open_panel(rig)
    rig.host.user.choose_quick_panel(2)  # Drop
    dropped(rig)
    tree = worktree_path(rig, "pick")
    assert (tree / "b.txt").read_text() == LINES and (rig.editor.workspace / "b.txt").read_text() == LINES
    rig.host.user.run_command("qwen_worktree_changes", {"chat": chat.chat_id})
    wait_for_package_threads(rig.host, "worktree")
    open_panel(rig)
    rig.host.user.choose_quick_panel(0)  # a.txt
    open_panel(rig)
    rig.host.user.choose_quick_panel(1)  # Keep
    rig.host.wait_idle()
    rig.host.user.run_command("qwen_worktree_changes", {"chat": chat.chat_id})
    wait_for_package_threads(rig.host, "worktree")
    assert list(open_panel(rig).items[0]) == ["a.txt", "+1 −1 · modified · kept"]


def test_open_keep_and_drop_resolve_no_worktree_path_on_the_main_thread(repo_rig: ChatRig,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Resolving a path reads the disk (a network drive, a cold one): the package's realpath and
    isfile of a worktree's files run on its threads, never on Sublime's main thread."""
    rig = repo_rig
    chat = agent_edits(rig, "paths", {"b.txt": LINES.replace("line 5\n", "line 5 changed\n"), "a.txt": "agent's\n"})
    tree = str(worktree_path(rig, "paths"))
    on_main: list[str] = []

    # The review's commands, and the listener that gives a file a turn changed its reference when it loads.
    ours = tuple(f"{PACKAGE}/plugin/chat/{module}" for module in ("worktree_review.py", "turn_review.py"))

    def from_worktree_review() -> bool:
        frame = sys._getframe(2)
        while frame is not None and not frame.f_code.co_filename.endswith(ours):
            frame = frame.f_back
        return frame is not None

    def watched(original: Any) -> Any:
        def resolve(path: Any, *args: Any, **kwargs: Any) -> Any:
            if str(path).startswith(tree) and rig.host.app.main.is_current() and from_worktree_review():
                on_main.append(f"{original.__name__}({path})")
            return original(path, *args, **kwargs)

        return resolve

    monkeypatch.setattr(os.path, "realpath", watched(os.path.realpath))
    monkeypatch.setattr(os.path, "isfile", watched(os.path.isfile))

    def act(row: int, action: int) -> None:
        rig.host.user.run_command("qwen_worktree_changes", {"chat": chat.chat_id})
        wait_for_package_threads(rig.host, "worktree")
        open_panel(rig)
        rig.host.user.choose_quick_panel(row)
        open_panel(rig)
        rig.host.user.choose_quick_panel(action)
        settle(rig)

    act(1, 0)  # b.txt: open with its base as reference
    opened = rig.host.wait_for(lambda: next((v for v in rig.host.window.views()
                                             if v.file_name() == str(Path(tree) / "b.txt")), None), timeout=WAIT)
    rig.host.wait_for(lambda: reference(rig, opened) == LINES, timeout=WAIT)
    act(1, 1)  # b.txt: Keep, its open view's reference becomes its own text
    rig.host.wait_for(lambda: reference(rig, opened) == LINES.replace("line 5\n", "line 5 changed\n"), timeout=WAIT)
    act(0, 2)  # a.txt: Drop
    dropped(rig)
    assert (Path(tree) / "a.txt").read_text() == "one\n"
    assert on_main == []


def test_apply_updates_a_clean_open_file_in_one_undo_step_and_refuses_one_with_unsaved_edits(
        repo_rig: ChatRig) -> None:
    rig, workspace = repo_rig, repo_rig.editor.workspace
    chat = agent_edits(rig, "two", {"a.txt": "one, the agent's\n", "b.txt": LINES.replace("line 18\n", "18!\n")})
    (workspace / "b.txt").write_text(LINES.replace("line 2\n", "line 2 (mine)\n"))
    clean = rig.host.user.open_file(workspace / "b.txt")
    typed = rig.host.user.open_file(workspace / "a.txt")
    rig.host.user.type(typed, "typed, unsaved ")
    typed_text = rig.editor.text(typed)
    done = apply(rig, chat)
    assert done["refused"] == [("a.txt", "open with unsaved edits: save or revert it first")]
    assert done["applied"] == [("b.txt", "")] and done["conflicts"] == []
    merged = LINES.replace("line 2\n", "line 2 (mine)\n").replace("line 18\n", "18!\n")
    assert rig.editor.text(clean) == merged and not clean.is_dirty() and (workspace / "b.txt").read_text() == merged
    rig.host.run_on_main(lambda: clean.run_command("undo"))  # one step back: the user's file as it was
    assert rig.editor.text(clean) == LINES.replace("line 2\n", "line 2 (mine)\n")
    assert rig.editor.text(typed) == typed_text and typed.is_dirty() and (workspace / "a.txt").read_text() == "one\n"
    assert "refused: a.txt (open with unsaved edits" in rig.editor.text(chat.transcript_view)


def test_a_conflict_leaves_markers_or_with_refuse_nothing_is_written(repo_rig: ChatRig) -> None:
    rig, workspace = repo_rig, repo_rig.editor.workspace
    chat = agent_edits(rig, "clash", {"b.txt": LINES.replace("line 9\n", "line 9, the agent's\n"), "c.txt": "c\n"})
    (workspace / "b.txt").write_text(LINES.replace("line 9\n", "line 9, mine\n"))
    rig.editor.settings({"worktree_apply_conflicts": "refuse"})
    refused = apply(rig, chat)
    assert refused["applied"] == [] and refused["conflicts"] == []
    assert dict(refused["refused"]) == {"b.txt": "has uncommitted changes in your files",
                                        "c.txt": "not applied: the apply is refused whole"}
    assert (workspace / "b.txt").read_text() == LINES.replace("line 9\n", "line 9, mine\n")
    assert not (workspace / "c.txt").exists()
    rig.editor.settings({"worktree_apply_conflicts": "markers"})
    marked = apply(rig, chat)
    assert marked["conflicts"] == [("b.txt", "1 conflict marked")] and marked["applied"] == [("c.txt", "")]
    assert ("<<<<<<< your files\nline 9, mine\n=======\nline 9, the agent's\n>>>>>>> worktree clash\n"
            in (workspace / "b.txt").read_text())


def test_worktrees_shows_states_and_applies(repo_rig: ChatRig) -> None:
    rig, workspace = repo_rig, repo_rig.editor.workspace
    agent_edits(rig, "states", {"a.txt": "one, the agent's\n"})
    rig.host.user.run_command("qwen_worktrees")
    wait_for_package_threads(rig.host, "worktree")
    panel = open_panel(rig)
    assert [item.annotation for item in panel.items] == ["chat open · changes not applied"]
    rig.host.user.choose_quick_panel(0)
    assert [str(item) for item in open_panel(rig).items][4] == "Apply to My Files"
    rig.host.user.choose_quick_panel(4)
    wait_for_package_threads(rig.host, "worktree")
    rig.host.wait_idle()
    rig.host.wait_for(lambda: (workspace / "a.txt").read_text() == "one, the agent's\n", timeout=WAIT)
    rig.host.user.run_command("qwen_worktrees")
    wait_for_package_threads(rig.host, "worktree")
    assert [item.annotation for item in open_panel(rig).items] == ["chat open · applied"]


def test_an_agent_that_rewrites_its_worktrees_git_gets_nothing_applied(repo_rig: ChatRig, tmp_path: Path) -> None:
    rig, workspace = repo_rig, repo_rig.editor.workspace
    planted = tmp_path / "planted"
    git(tmp_path, "init", "-q", str(planted))
    tree = worktree_path(rig, "hostile")
    chat = agent_edits(rig, "hostile", {"a.txt": "the agent's\n", ".git": f"gitdir: {planted / '.git'}\n"})
    assert (tree / ".git").read_text().startswith(f"gitdir: {planted}")  # the user said yes: it landed
    rig.host.user.run_command("qwen_worktree_apply", {"chat": chat.chat_id})
    wait_for_package_threads(rig.host, "worktree")
    rig.host.wait_idle()
    assert any("points somewhere else" in d.message for d in rig.host.dialogs if d.kind == "error")
    assert (workspace / "a.txt").read_text() == "one\n"


def test_a_repository_the_agent_plants_in_its_worktree_is_never_applied(repo_rig: ChatRig) -> None:
    rig, workspace = repo_rig, repo_rig.editor.workspace
    tree = worktree_path(rig, "plant")
    chat = agent_edits(rig, "plant", {"sub/.git/HEAD": "ref: refs/heads/main\n",
                                      "sub/.git/config": "[core]\n\tfsmonitor = touch pwned\n",
                                      "sub/.git/objects/keep": "", "sub/.git/refs/heads/keep": "",
                                      "sub/x.txt": "x\n"})
    assert (tree / "sub" / ".git" / "config").exists()
    done = apply(rig, chat)
    assert done["applied"] == [] and done["conflicts"] == [] and [path for path, _ in done["refused"]] == ["sub/"]
    assert not (workspace / "sub").exists() and not (tree / "pwned").exists() and not (workspace / "pwned").exists()


def test_the_driver_lists_and_applies_a_worktrees_changes(tmp_path: Path) -> None:
    require_built()
    home, workspace = tmp_path / "home", (tmp_path / "workspace").resolve()
    workspace.mkdir()
    as_repository(workspace)
    trees = tmp_path / "trees"
    user = home / ".config" / "sublime-text" / "Packages" / "User"
    user.mkdir(parents=True)
    turns = tmp_path / "script.json"
    (user / "QwenCompanion.sublime-settings").write_text(json.dumps({
        "qwen_command": [sys.executable, str(FAKE_AGENT), str(turns)], "worktrees_folder": str(trees)}))
    folder = Path(repository_folder(str(trees), str(workspace))) / "task"
    editor = HeadlessSublime(workspace, home)
    try:
        turns.write_text(json.dumps({"turns": [[
            request("fs/write_text_file", path=str(folder / "a.txt"), content="one\ntwo\n"),
            request("fs/write_text_file", path=str(folder / "b.txt"), content="b\n"),
            {"chunks": ["done"]}]], "log": str(tmp_path / "agent-log.jsonl")}))
        made = editor.do("chat_new", worktree="task")
        assert editor.do("chat", chat=made["chat"], text="go")["ok"]
        editor.wait_event(lambda e: e.get("event") == "chat_turn_ended" and e["chat"] == made["chat"])
        listed = editor.do("worktree_changes", chat=made["chat"])
        assert listed["files"] == [
            {"path": "a.txt", "added": 1, "removed": 0, "state": "changed", "kind": "modified"},
            {"path": "b.txt", "added": 1, "removed": 0, "state": "changed", "kind": "added"}]
        applied = editor.do("worktree_apply", chat=made["chat"], files=["b.txt"])
        assert (applied["applied"], applied["conflicts"], applied["refused"]) == ([{"path": "b.txt", "why": ""}], [], [])
        assert (workspace / "b.txt").read_text() == "b\n" and (workspace / "a.txt").read_text() == "one\n"
        assert [w["state"] for w in editor.do("worktrees")["worktrees"]] == ["changes not applied"]
        editor.do("worktree_apply", chat=made["chat"])
        assert [w["state"] for w in editor.do("worktrees")["worktrees"]] == ["applied"]
    finally:
        editor.kill()


def test_a_merge_goes_into_a_view_only_while_it_is_clean_and_holds_the_text_merged_from(repo_rig: ChatRig) -> None:
    rig, workspace = repo_rig, repo_rig.editor.workspace
    writes = sys.modules[f"{PACKAGE}.plugin.view_writes"]
    view = rig.host.user.open_file(workspace / "b.txt")
    with pytest.raises(Exception, match="changed while it was merged"):
        rig.host.run_on_main(lambda: writes.write_merged(view, "merged\n", "what it was merged from\n"))
    assert rig.editor.text(view) == LINES
    rig.host.user.type(view, "typed ")
    typed = rig.editor.text(view)
    with pytest.raises(Exception, match="changed while it was merged"):
        rig.host.run_on_main(lambda: writes.write_merged(view, "merged\n", typed))
    assert rig.editor.text(view) == typed and view.is_dirty()


def test_a_file_with_unsaved_edits_in_another_window_is_refused_too(repo_rig: ChatRig) -> None:
    rig, workspace = repo_rig, repo_rig.editor.workspace
    chat = agent_edits(rig, "elsewhere", {"b.txt": LINES.replace("line 3\n", "line 3!\n")})
    first = rig.host.window
    rig.host.run_on_main(lambda: first.run_command("new_window"))
    other = next(w for w in rig.host.sublime.windows() if w.id() != first.id())
    typed = rig.host.user.open_file(workspace / "b.txt", window=other)
    rig.host.user.type(typed, "mine ")
    rig.host.user.focus(chat.composer_view)  # back in the chat's window: the command runs there
    assert rig.host.window.id() == first.id()
    done = apply(rig, chat)
    assert done["refused"] == [("b.txt", "open with unsaved edits: save or revert it first")]
    assert (workspace / "b.txt").read_text() == LINES and typed.is_dirty()


def test_a_worktree_folder_removed_by_hand_is_listed_as_such_and_discard_prunes_it(repo_rig: ChatRig) -> None:
    rig, workspace = repo_rig, repo_rig.editor.workspace
    chat = agent_edits(rig, "removed", {"a.txt": "x\n"})
    rig.host.user.run_command("qwen_chat_close", {"chat": chat.chat_id})
    rig.host.wait_idle()
    shutil.rmtree(chat.worktree.path)
    rig.host.user.run_command("qwen_worktrees")
    wait_for_package_threads(rig.host, "worktree")
    assert [item.annotation for item in open_panel(rig).items] == ["folder removed"]
    rig.host.user.choose_quick_panel(0)
    open_panel(rig)
    rig.host.user.choose_quick_panel(2)  # Discard Worktree…
    wait_for_package_threads(rig.host, "worktree")
    rig.host.wait_idle()
    assert git(workspace, "branch", "--format=%(refname:short)").split() == ["main"]
    assert git(workspace, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_drop_of_a_file_open_with_unsaved_edits_is_refused_and_the_users_next_save_keeps_the_agents_change(
        repo_rig: ChatRig) -> None:
    """Drop would put the worktree's file back to its base under a view holding unsaved
    edits, and the user's next save would write the edits back over the drop: refused."""
    rig = repo_rig
    chat = agent_edits(rig, "typing", {"b.txt": "the agent's\n"})
    tree = worktree_path(rig, "typing")
    view = rig.host.user.open_file(tree / "b.txt")
    rig.host.user.type(view, "typed ")
    rig.host.user.run_command("qwen_worktree_changes", {"chat": chat.chat_id})
    wait_for_package_threads(rig.host, "worktree")
    open_panel(rig)
    rig.host.user.choose_quick_panel(0)  # b.txt
    open_panel(rig)
    rig.host.user.choose_quick_panel(2)  # Drop
    told = rig.host.wait_for(lambda: [m for _, m in rig.host.app.status_messages
                                      if "b.txt" in m and ("dropped" in m or "back to its base" in m)], timeout=WAIT)
    wait_for_package_threads(rig.host, "worktree")
    rig.host.wait_idle()
    assert (tree / "b.txt").read_text() == "the agent's\n", "the drop put the disk back under the unsaved view"
    assert told == ["Qwen Code: b.txt has unsaved edits in the worktree: not dropped"]
    assert rig.editor.text(view) == "typed the agent's\n" and view.is_dirty()


def test_worktree_changes_lists_a_fifo_left_in_place_of_a_file_and_the_rest(repo_rig: ChatRig) -> None:
    """The agent's shell left a FIFO where b.txt was (git cannot hash it): the list
    still opens, with b.txt as not a regular file beside the other changes."""
    rig = repo_rig
    chat = agent_edits(rig, "fifo", {"a.txt": "one, the agent's\n"})
    tree = worktree_path(rig, "fifo")
    (tree / "b.txt").unlink()
    os.mkfifo(tree / "b.txt")
    rig.host.user.run_command("qwen_worktree_changes", {"chat": chat.chat_id})
    wait_for_package_threads(rig.host, "worktree")
    panel = open_panel(rig)
    assert [list(item) for item in panel.items][:2] == [
        ["a.txt", "+1 −1 · modified"],
        ["b.txt", "modified · not a regular file (a FIFO, socket or device): change it by hand"]]
    assert not [d for d in rig.host.dialogs if d.kind == "error"]


def worktrees_states(rig: ChatRig) -> list[str]:
    """The states Qwen Code: Worktrees… shows (its panel closed again)."""
    rig.host.user.run_command("qwen_worktrees")
    wait_for_package_threads(rig.host, "worktree")
    shown = [item.annotation for item in open_panel(rig).items]
    rig.host.user.choose_quick_panel(-1)
    rig.host.wait_idle()
    return shown


@pytest.mark.parametrize("rewrite", ["ensure_newline_at_eof_on_save", "a format-on-save package"])
def test_what_the_save_rewrites_of_an_apply_is_the_applied_result(repo_rig: ChatRig, rewrite: str) -> None:
    """Apply into a clean open view is saved, and the save's on_pre_save listeners
    rewrite it: that is the applied result, so Worktrees… says applied and a second
    Apply changes nothing (no conflict markers between the text sent and the text saved)."""
    rig, workspace = repo_rig, repo_rig.editor.workspace
    if rewrite == "ensure_newline_at_eof_on_save":
        rig.host.user.edit_settings_file("Preferences.sublime-settings", {"ensure_newline_at_eof_on_save": True})
        theirs = LINES.replace("line 18\n", "18!\n").removesuffix("\n")
        saved = theirs + "\n"
    else:
        write_package(rig.host.packages_dir, "Tidy", {"tidy.py": FORMAT_ON_SAVE})
        rig.host.load_package("Tidy")
        theirs, saved = LINES + "x=1\n", LINES + "x = 1\n"
    chat = agent_edits(rig, "tidied", {"b.txt": theirs})
    view = rig.host.user.open_file(workspace / "b.txt")
    assert apply(rig, chat)["applied"] == [("b.txt", "")]
    assert (workspace / "b.txt").read_text() == saved and rig.editor.text(view) == saved and not view.is_dirty()
    assert worktrees_states(rig) == ["chat open · applied"]
    again = apply(rig, chat)
    assert (workspace / "b.txt").read_text() == saved and rig.editor.text(view) == saved
    assert again["applied"] == [("b.txt", "nothing to change")] and again["conflicts"] == []
    rig.host.user.type(view, "mine ")  # the user's own change since is not the applied result
    rig.host.user.save(view)
    assert worktrees_states(rig) == ["chat open · changes not applied"]


def test_drop_is_refused_when_the_user_types_between_its_check_and_its_write(repo_rig: ChatRig) -> None:
    """Drop reads the worktree's file and its base on a thread of ours; the user
    types into the open file meanwhile (the hook holds the read until they have):
    the write, made on the main thread, sees the unsaved edits and writes nothing."""
    rig = repo_rig
    chat = agent_edits(rig, "racing", {"b.txt": "the agent's\n"})
    tree = worktree_path(rig, "racing")
    view = rig.host.user.open_file(tree / "b.txt")
    changes = sys.modules[f"{PACKAGE}.core.worktrees.worktree_changes"]
    reading, typed = threading.Event(), threading.Event()
    real_base_bytes = changes.base_bytes

    def base_bytes_while_the_user_types(*args: Any, **kwargs: Any) -> Any:
        reading.set()
        assert typed.wait(WAIT)
        return real_base_bytes(*args, **kwargs)

    changes.base_bytes = base_bytes_while_the_user_types
    try:
        rig.host.user.run_command("qwen_worktree_changes", {"chat": chat.chat_id})
        wait_for_package_threads(rig.host, "worktree")
        open_panel(rig)
        rig.host.user.choose_quick_panel(0)  # b.txt
        open_panel(rig)
        rig.host.user.choose_quick_panel(2)  # Drop
        assert reading.wait(WAIT)
        rig.host.user.type(view, "typed ")
        typed.set()
        told = rig.host.wait_for(lambda: [m for _, m in rig.host.app.status_messages
                                          if "b.txt" in m and ("dropped" in m or "back to its base" in m)],
                                 timeout=WAIT)
    finally:
        changes.base_bytes = real_base_bytes
    wait_for_package_threads(rig.host, "worktree")
    rig.host.wait_idle()
    assert (tree / "b.txt").read_text() == "the agent's\n", "the drop wrote the disk under the unsaved view"
    assert rig.editor.text(view) == "typed the agent's\n" and view.is_dirty()
    assert told == ["Qwen Code: b.txt has unsaved edits in the worktree: not dropped"]


def test_drop_of_a_file_open_in_a_clean_view_puts_its_base_in_the_view_as_one_undo_step(repo_rig: ChatRig) -> None:
    rig = repo_rig
    chat = agent_edits(rig, "viewed", {"b.txt": "the agent's\n"})
    tree = worktree_path(rig, "viewed")
    view = rig.host.user.open_file(tree / "b.txt")
    rig.host.user.run_command("qwen_worktree_changes", {"chat": chat.chat_id})
    wait_for_package_threads(rig.host, "worktree")
    open_panel(rig)
    rig.host.user.choose_quick_panel(0)  # b.txt
    open_panel(rig)
    rig.host.user.choose_quick_panel(2)  # Drop
    dropped(rig)
    assert (tree / "b.txt").read_text() == LINES and rig.editor.text(view) == LINES and not view.is_dirty()
    rig.host.run_on_main(lambda: view.run_command("undo"))  # one step back: the agent's text, unsaved
    assert rig.editor.text(view) == "the agent's\n" and (tree / "b.txt").read_text() == LINES
