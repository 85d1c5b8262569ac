"""The agent's reads and writes name a file open with unsaved edits by
another path than the tab's (a symlinked folder of the project, `..`): the
read gets the unsaved text and the write goes into the buffer (saved, one
undo step) once the agent has read them, as for the tab's own path, never
to the disk behind it. The
BUILT package in the simulated editor, with the scripted ACP agent."""

from __future__ import annotations

from typing import Any

import pytest

from tests.sim.test_chat import ChatRig

SAVED = "value = 1\n"
UNSAVED = "# edited\nvalue = 1\n"
WRITTEN = "value = 2\n"


def request(method: str, **params: Any) -> dict[str, Any]:
    return {"request": method, "params": {"sessionId": "", **params}}


ALIASES = pytest.mark.parametrize("alias", ["link/app.py", "src/../src/app.py"], ids=["symlinked-folder", "dot-dot"])


def open_with_unsaved_edits(rig: ChatRig, turn: list[dict[str, Any]]) -> Any:
    """src/app.py open with unsaved edits, link/ a symlink to src/, the agent to play `turn`."""
    workspace = rig.editor.workspace
    (workspace / "link").symlink_to(workspace / "src", target_is_directory=True)
    rig.load([turn])
    view = rig.editor.open("src/app.py", SAVED)
    rig.host.user.type(view, "# edited\n")  # the caret is at the start
    assert view.is_dirty() and rig.editor.text(view) == UNSAVED
    return view


@ALIASES
def test_a_read_by_another_path_gets_the_unsaved_text(rig: ChatRig, alias: str) -> None:
    view = open_with_unsaved_edits(rig, [request("fs/read_text_file", path=str(rig.editor.workspace / alias))])
    rig.send("read it")
    assert rig.ended() == ["end_turn"]
    assert rig.answered("fs/read_text_file") == [{"content": UNSAVED}]
    assert view.is_dirty()


@ALIASES
def test_a_write_by_another_path_goes_into_the_buffer(rig: ChatRig, alias: str) -> None:
    path = str(rig.editor.workspace / alias)
    # Read first: a write over unsaved text the agent never read is refused.
    turn = [request("fs/read_text_file", path=path), request("fs/write_text_file", path=path, content=WRITTEN)]
    view = open_with_unsaved_edits(rig, turn)
    rig.send("write it")
    assert rig.ended() == ["end_turn"]
    assert rig.answered("fs/read_text_file") == [{"content": UNSAVED}]
    assert rig.answered("fs/write_text_file") == [None]
    rig.host.wait_idle()
    assert rig.editor.text(view) == WRITTEN and not view.is_dirty()
    assert (rig.editor.workspace / "src" / "app.py").read_text() == WRITTEN
    rig.host.user.focus(view)
    rig.host.run_on_main(lambda: view.run_command("undo"))
    rig.host.wait_idle()
    assert rig.editor.text(view) == UNSAVED  # one step on top of the user's edits


def test_a_read_by_the_real_path_of_a_tab_opened_through_a_symlink_gets_the_unsaved_text(rig: ChatRig) -> None:
    """Defect guarded: the open view was matched by its file name as the tab
    holds it, not resolved: a tab opened through a symlinked folder was missed
    when the agent named the real file, and the agent read the disk."""
    workspace = rig.editor.workspace
    (workspace / "src").mkdir()
    (workspace / "link").symlink_to(workspace / "src", target_is_directory=True)
    rig.load([[request("fs/read_text_file", path=str(workspace / "src" / "app.py"))]])
    view = rig.editor.open("link/app.py", SAVED)
    rig.host.user.type(view, "# edited\n")
    assert view.file_name() == str(workspace / "link" / "app.py") and view.is_dirty()
    rig.send("read it")
    assert rig.ended() == ["end_turn"]
    assert rig.answered("fs/read_text_file") == [{"content": UNSAVED}]
