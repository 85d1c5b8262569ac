"""The review view of every hunk against the real `qwen --acp` (0.24.4) and
the fake model, through the headless driver: the agent edits one file in
two places (Auto Edit: nothing asks); `review_open` lists two hunks;
`hunk_undo` of one puts its lines back and the other change stays."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.e2e.test_chat_e2e import WAIT
from tests.rig.fake_model import FakeModel, Reply, edit, read_file
from tests.rig.qwen_cli import QwenCli
from tests.support.headless import HeadlessSublime

pytestmark = pytest.mark.e2e

BEFORE = "".join(f"value_{n} = {n}\n" for n in range(1, 21))


def test_one_hunk_undone_the_other_change_stays(real_env: dict[str, str], qwen_cli: QwenCli,
                                                fake_model: FakeModel, workspace: Path) -> None:
    source = workspace / "values.py"
    source.write_text(BEFORE)
    user = Path(real_env["HOME"]) / ".config" / "sublime-text" / "Packages" / "User"
    user.mkdir(parents=True, exist_ok=True)
    (user / "QwenCompanion.sublime-settings").write_text(
        json.dumps({"qwen_command": [str(qwen_cli.node), str(qwen_cli.entry)]}))
    fake_model.queue(read_file(str(source)), edit(str(source), "value_2 = 2", "value_2 = 200"),
                     edit(str(source), "value_18 = 18", "value_18 = 1800"), Reply(text="Both changed."))
    editor = HeadlessSublime(workspace, Path(real_env["HOME"]))
    try:
        deadline = time.monotonic() + WAIT
        moded = editor.do("chat_mode", mode="auto-edit")  # the window's chat, made on first use
        while not moded["ok"] and time.monotonic() < deadline:  # the driver waits 10 s; qwen may start slower
            moded = editor.do("chat_mode", mode="auto-edit")
        assert moded.get("mode") == "auto-edit", moded
        editor.do("chat", text="Change value 2 and value 18")
        assert editor.wait_event(lambda e: e.get("event") == "chat_turn_ended", timeout=WAIT)["stopReason"] == "end_turn"
        changed = BEFORE.replace("value_2 = 2\n", "value_2 = 200\n").replace("value_18 = 18\n", "value_18 = 1800\n")
        assert source.read_text() == changed
        review = editor.do("review_open")
        assert review["ok"], review
        assert {h["path"] for h in review["hunks"]} == {str(source.resolve())}
        assert [(h["index"], h["start"], h["added"], h["removed"], h["state"]) for h in review["hunks"]] == [
            (0, 2, 1, 1, "pending"), (1, 18, 1, 1, "pending")]
        undone = editor.do("hunk_undo", path=str(source), index=0)
        assert undone["ok"], undone
        assert source.read_text() == BEFORE.replace("value_18 = 18\n", "value_18 = 1800\n")
        assert [(h["start"], h["state"]) for h in undone["hunks"]] == [(2, "undone"), (18, "pending")]
        assert editor.quit()["ok"]
    finally:
        editor.kill()
