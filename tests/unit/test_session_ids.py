"""Every place a session id is adopted takes it only in a conservative
alphabet (session_ids.py): session/list's entries, a branch's answer, the
folder's last session on disk; and cmd.exe is never handed a word it would
read as syntax."""

from __future__ import annotations

from pathlib import Path

import pytest

from qwencompanion_src.core.chat.agent.session_ids import SESSION_ID_MAX_CHARS, session_id_or_none
from qwencompanion_src.core.chat.history.branch import BranchRefused, branch_of
from qwencompanion_src.core.chat.history.history import entry_of
from qwencompanion_src.core.chat.history.store import SessionStore
from qwencompanion_src.core.cli.terminal import CmdUnquotable, connect_command, with_args

HOSTILE = ["--approval-mode=yolo", "-r", 'x"&calc&"', "%COMSPEC%", "a b", "a\nb", "..", ".hidden", "a/b", "a\\b",
           "$(id)", "٣٣", "x" * (SESSION_ID_MAX_CHARS + 1), "", "a;b", "a|b", "a`b"]


def test_qwens_ids_are_taken_and_anything_else_refused() -> None:
    for good in ["3f2b9c7e-8a51-4c1e-9d3a-1b2c3d4e5f60", "session_1.2", "A" * SESSION_ID_MAX_CHARS]:
        assert session_id_or_none(good) == good
    for bad in [*HOSTILE, None, 7, ["x"]]:
        assert session_id_or_none(bad) is None, bad


@pytest.mark.parametrize("hostile", HOSTILE)
def test_chat_history_lists_no_session_with_a_hostile_id(hostile: str) -> None:
    assert entry_of({"sessionId": hostile, "title": "t"}) is None
    entry = entry_of({"sessionId": "3f2b9c7e-8a51", "title": "t"})
    assert entry is not None and entry.session_id == "3f2b9c7e-8a51"


@pytest.mark.parametrize("hostile", HOSTILE)
def test_a_branch_with_a_hostile_id_is_refused(hostile: str) -> None:
    with pytest.raises(BranchRefused):
        branch_of({"newSessionId": hostile, "title": "t"})
    assert branch_of({"newSessionId": "b-1", "title": "t"}).session_id == "b-1"


def test_a_hostile_id_in_the_record_on_disk_is_not_reopened(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    store.path.write_text('{"w": {"sessionId": "--approval-mode=yolo"}, "v": {"sessionId": "ok-1"}}')
    assert store.get("w") is None and store.get("v") == "ok-1"


@pytest.mark.parametrize("word", ['x"&calc&"', "%PATH%", "a\r\nb"])
def test_cmd_exe_is_never_handed_a_word_it_cannot_take_literally(word: str) -> None:
    with pytest.raises(CmdUnquotable):
        with_args("qwen", [word], windows=True)
    with pytest.raises(CmdUnquotable):
        connect_command(port=1, workspace_path="/w", cwd="/w", command=["qwen"], shell="cmd", extra_args=[word])
    assert with_args("qwen", ["--resume=a-1", "C:\\a b&c"], windows=True) == 'qwen "--resume=a-1" "C:\\a b&c"'
