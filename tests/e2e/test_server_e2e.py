"""End to end: the real qwen CLI connects to the companion server of a window
in the simulated editor (driven through `python -m tests.headless`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import StartTui
from tests.support.headless import HeadlessSublime

pytestmark = pytest.mark.e2e

CONNECTED = "✓ Connected to Sublime Text"


@pytest.fixture
def sublime(workspace: Path, qwen_home: Path) -> Iterator[HeadlessSublime]:
    editor = HeadlessSublime(workspace, qwen_home)
    yield editor
    editor.kill()


def with_port(env: dict[str, str], sublime: HeadlessSublime) -> dict[str, str]:
    return {**env, "QWEN_CODE_IDE_SERVER_PORT": str(sublime.ready["port"])}


def test_a_cli_started_in_the_workspace_connects(
    sublime: HeadlessSublime, start_tui: StartTui, qwen_env: dict[str, str]
) -> None:
    tui = start_tui(env=with_port(qwen_env, sublime))

    assert tui.wait_ide_status().startswith(CONNECTED)
    sublime.wait_event(lambda e: e.get("event") == "sessions" and e["connected"] == 1)
    state = sublime.do("state")
    assert [s["stream_open"] for s in state["sessions"]] == [True]
    assert state["auth_failures"] == []


def test_a_cli_finds_the_window_without_the_port_variable(
    sublime: HeadlessSublime, start_tui: StartTui, qwen_env: dict[str, str], workspace: Path
) -> None:
    subfolder = workspace / "src"
    subfolder.mkdir()
    tui = start_tui(cwd=subfolder, env=qwen_env)  # found by scanning lock files for its folder

    assert tui.wait_ide_status().startswith(CONNECTED)


def test_a_cli_started_outside_the_workspace_does_not_connect(
    sublime: HeadlessSublime, start_tui: StartTui, qwen_env: dict[str, str], tmp_path: Path
) -> None:
    elsewhere = (tmp_path / "elsewhere").resolve()
    elsewhere.mkdir()
    tui = start_tui(cwd=elsewhere, env=with_port(qwen_env, sublime))

    status = tui.ide_status()
    assert not status.startswith("✓"), status
    assert sublime.do("state")["sessions"] == []


def test_a_lock_file_with_a_wrong_token_does_not_connect(
    sublime: HeadlessSublime, start_tui: StartTui, qwen_env: dict[str, str]
) -> None:
    lock_file = Path(sublime.ready["lock_file"])
    lock = json.loads(lock_file.read_text())
    lock["authToken"] = "0" * 64
    lock_file.write_text(json.dumps(lock))

    tui = start_tui(env=with_port(qwen_env, sublime))

    status = tui.wait_ide_status(prefix="✗ Disconnected")
    assert "IDE connection error" in status or "401" in status or "Unauthorized" in status, status
    state = sublime.do("state")
    assert state["sessions"] == []
    assert "wrong-token" in state["auth_failures"]


def test_two_clis_connect_to_one_window_at_once(
    sublime: HeadlessSublime, start_tui: StartTui, qwen_env: dict[str, str]
) -> None:
    first = start_tui(env=with_port(qwen_env, sublime))
    second = start_tui(env=with_port(qwen_env, sublime))

    assert first.wait_ide_status().startswith(CONNECTED)
    assert second.wait_ide_status().startswith(CONNECTED)
    sublime.wait_event(lambda e: e.get("event") == "sessions" and e["connected"] == 2)
    assert [s["stream_open"] for s in sublime.do("state")["sessions"]] == [True, True]


def test_quitting_the_editor_removes_the_lock_file(sublime: HeadlessSublime) -> None:
    assert Path(sublime.ready["lock_file"]).exists()

    answer = sublime.quit()

    assert answer == {"ok": True, "do": "quit", "lock_files_left": []}
    assert not Path(sublime.ready["lock_file"]).exists()
