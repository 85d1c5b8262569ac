"""End to end: the real Qwen Code CLI proposes an edit and the review opens in
the simulated Sublime Text running the built package.

The fake model asks the CLI (TUI in tmux, approval mode "default") to read
and then edit a file; the CLI calls openDiff on the window's server, found
through the lock file in the HOME both share. The test answers in the review
as a user would and checks the bytes the CLI leaves on disk.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.rig.fake_model import FakeModel, edit, read_file
from tests.rig.qwen_cli import TuiSession
from tests.support.editor import Editor, open_editor

from .conftest import StartTui

pytestmark = pytest.mark.e2e

CONFIRM = r"Apply this change\?"
DONE = "Finished editing."


@pytest.fixture
def editor(
    tmp_path: Path, qwen_home: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Editor]:
    with open_editor(tmp_path, monkeypatch, home=qwen_home, workspace=workspace) as editor:
        yield editor


ConnectTui = Callable[[], TuiSession]


@pytest.fixture
def connect_tui(editor: Editor, start_tui: StartTui, qwen_env: dict[str, str]) -> ConnectTui:
    """Starts the TUI in the workspace, pointed at the window's server; returns it once connected."""

    def connect() -> TuiSession:
        port = editor.lock_info()["port"]
        tui = start_tui(cwd=editor.workspace, env={**qwen_env, "QWEN_CODE_IDE_SERVER_PORT": str(port)})
        tui.wait_ide_status("✓ Connected", timeout=30)
        return tui

    return connect


def propose_edit(
    editor: Editor, tui: TuiSession, model: FakeModel, path: Path, old: str, new: str
) -> tuple[Any, Any]:
    """The model reads `path`, then edits it; returns the review's (original, proposed) views."""
    model.queue(read_file(str(path)), edit(str(path), old, new), DONE)
    tui.submit(f"please edit {path.name}")
    tui.wait_for(CONFIRM, timeout=60)
    return editor.review(path)


def wait_for_tool_result(model: FakeModel, tui: TuiSession) -> str:
    """The edit's outcome as the CLI reported it to the model (its 3rd agent request)."""
    body = model.wait_for_requests(3, timeout=30)[2]
    tui.wait_for(DONE, timeout=30)
    results = [m for m in body["messages"] if m.get("role") == "tool"]
    return str(results[-1]["content"])


def wait_for_cancelled_edit(model: FakeModel, tui: TuiSession) -> None:
    """A rejection cancels the tool call: the TUI marks it and the turn ends there."""
    tui.wait_for(r"- Edit", timeout=30)
    assert len(model.agent_requests) == 2


def test_accepting_a_hand_edited_proposal_writes_exactly_that_text(
    editor: Editor, connect_tui: ConnectTui, fake_model: FakeModel
) -> None:
    path = editor.workspace / "greet.py"
    path.write_bytes(b"def greet():\n    return 'hello'\n\nprint(greet())\n")
    tui = connect_tui()
    original, proposed = propose_edit(editor, tui, fake_model, path, "'hello'", "'hello, world'")
    assert editor.text(original) == "def greet():\n    return 'hello'\n\nprint(greet())\n"
    assert editor.text(proposed) == "def greet():\n    return 'hello, world'\n\nprint(greet())\n"

    line = editor.text(proposed).index("print")
    editor.host.user.replace(proposed, (line, line + len("print(greet())")), "print(greet().upper())")
    editor.host.user.click_annotation(proposed, "accept")

    result = wait_for_tool_result(fake_model, tui)
    assert "Error" not in result, result
    assert path.read_bytes() == b"def greet():\n    return 'hello, world'\n\nprint(greet().upper())\n"
    assert editor.review_views() == []
    editor.host.assert_no_errors()


def test_rejecting_leaves_the_file_unchanged(editor: Editor, connect_tui: ConnectTui, fake_model: FakeModel) -> None:
    path = editor.workspace / "keep.txt"
    path.write_bytes(b"keep me\n")
    tui = connect_tui()
    _, proposed = propose_edit(editor, tui, fake_model, path, "keep me", "changed")

    editor.host.user.click_annotation(proposed, "reject")
    wait_for_cancelled_edit(fake_model, tui)
    assert path.read_bytes() == b"keep me\n"
    assert editor.review_views() == []


def test_closing_the_proposed_tab_counts_as_a_rejection(
    editor: Editor, connect_tui: ConnectTui, fake_model: FakeModel
) -> None:
    path = editor.workspace / "keep.txt"
    path.write_bytes(b"keep me\n")
    tui = connect_tui()
    _, proposed = propose_edit(editor, tui, fake_model, path, "keep me", "changed")

    assert editor.host.user.close(proposed)
    wait_for_cancelled_edit(fake_model, tui)
    assert path.read_bytes() == b"keep me\n"
    assert editor.review_views() == []


@pytest.mark.parametrize("hand_edit", [False, True])
def test_an_accepted_crlf_file_stays_crlf_without_a_final_newline(
    editor: Editor, connect_tui: ConnectTui, fake_model: FakeModel, hand_edit: bool
) -> None:
    path = editor.workspace / "win.txt"
    path.write_bytes("first\r\nsecond — ü\r\nlast".encode())
    tui = connect_tui()
    original, proposed = propose_edit(editor, tui, fake_model, path, "second", "SECOND")
    assert editor.text(original) == "first\nsecond — ü\nlast"
    assert editor.text(proposed) == "first\nSECOND — ü\nlast"

    if hand_edit:
        editor.host.user.click(proposed, 0)
        editor.host.user.type(proposed, "zeroth ✓\n")
    editor.host.user.save(proposed)  # ctrl+s accepts

    wait_for_tool_result(fake_model, tui)
    expected = "first\r\nSECOND — ü\r\nlast"
    assert path.read_bytes() == (("zeroth ✓\r\n" if hand_edit else "") + expected).encode()


def test_answering_in_the_terminal_keeps_the_users_edits_reachable(
    editor: Editor, connect_tui: ConnectTui, fake_model: FakeModel
) -> None:
    path = editor.workspace / "term.txt"
    path.write_bytes(b"alpha\nbeta\n")
    tui = connect_tui()
    _, proposed = propose_edit(editor, tui, fake_model, path, "beta", "BETA")
    editor.host.user.click(proposed, 0)
    editor.host.user.type(proposed, "typed in the review\n")

    tui.send_keys("1")  # "Allow once" in the terminal
    wait_for_tool_result(fake_model, tui)
    # The CLI applied its own proposal; what was typed in the review is not lost.
    assert path.read_bytes() == b"alpha\nBETA\n"
    editor.settle()
    assert proposed.is_valid() and editor.text(proposed) == "typed in the review\nalpha\nBETA\n"
    assert proposed.name() == "term.txt (not applied)"
    assert editor.review_views() == []
