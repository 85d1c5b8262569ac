"""Quick panel details are minihtml in Sublime: an agent's or the user's
text shown there (Chat History's first prompts, an option's description,
a worktree's branch and folder) reads as written, `Vec<u8>` whole and an
`<a href>` as text, never a link. Every row is made by one helper
(plugin/quick_panel_items.py); the simulator renders details as minihtml."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.sim.test_chat import WAIT, ChatRig
from tests.sim.test_worktree_chats import as_repository, new_worktree_chat
from tests.support.editor import wait_for_package_threads

MARKUP = 'Vec<u8> & <a href="https://evil.example/">docs</a>'
SOURCE = Path(__file__).resolve().parents[2] / "QwenCompanion.sublime-package-src"


def open_panel(rig: ChatRig) -> Any:
    return rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)[-1]


def test_chat_history_shows_a_first_prompt_as_written(rig: ChatRig) -> None:
    rig.load([[{"chunks": ["Done."]}]])
    rig.send(MARKUP)
    rig.ended()
    rig.host.user.run_command("qwen_chat_sessions")
    shown = open_panel(rig).details_shown(0)
    assert shown.text.startswith('Vec<u8> & <a href="https://evil') and shown.links == []  # the agent's preview, cut


def test_an_agents_option_description_is_shown_as_written(rig: ChatRig) -> None:
    rig.script_extras.update(more_options=[{"id": "effort", "name": "Effort", "type": "select", "currentValue": "high",
                                            "description": MARKUP, "options": [{"value": "high", "name": "High"}]}])
    rig.load([[{"chunks": ["Done."]}]])
    rig.send("hi")
    rig.ended()
    rig.host.user.run_command("qwen_chat_session_options")
    panel = open_panel(rig)
    row = next(i for i, item in enumerate(panel.items) if getattr(item, "trigger", "") == "Effort")
    assert panel.details_shown(row).text == MARKUP and panel.details_shown(row).links == []


@pytest.mark.skipif(shutil.which("git") is None or sys.platform == "win32", reason="needs git")
def test_a_worktrees_folder_is_shown_as_written(rig: ChatRig, tmp_path: Path) -> None:
    as_repository(rig.editor.workspace)
    rig.load(worktrees_folder=str(tmp_path / "trees <b>x</b>"))
    assert new_worktree_chat(rig, "task") is not None
    rig.host.user.run_command("qwen_worktrees")
    wait_for_package_threads(rig.host, "worktree")
    assert "trees <b>x</b>" in open_panel(rig).details_shown(0).text


def test_no_quick_panel_row_is_made_but_by_the_helper_that_escapes_its_details() -> None:
    made_elsewhere = [str(path.relative_to(SOURCE)) for path in SOURCE.rglob("*.py")
                      if path.name != "quick_panel_items.py" and re.search(r"\bQuickPanelItem\(", path.read_text())]
    assert made_elsewhere == []
