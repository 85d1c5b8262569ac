"""The headless driver (`python -m tests.headless`): its verbs and events, with
a plain MCP client playing the CLI (the real CLI drives it in tests/e2e)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.editor import require_built
from tests.support.headless import HeadlessSublime
from tests.support.mcp_client import McpClient


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = (tmp_path / "workspace").resolve()
    folder.mkdir()
    (folder / "notes.txt").write_text("one\ntwo\nthree\n")
    return folder


@pytest.fixture
def sublime(workspace: Path, tmp_path: Path) -> Iterator[HeadlessSublime]:
    require_built()
    home = tmp_path / "home"
    home.mkdir()
    editor = HeadlessSublime(workspace, home)
    yield editor
    editor.kill()


@pytest.fixture
def cli(sublime: HeadlessSublime) -> Iterator[McpClient]:
    lock = json.loads(Path(sublime.ready["lock_file"]).read_text())
    client = McpClient(sublime.ready["port"], lock["authToken"], "driver-test").connect()
    yield client
    client.close()


def views_by_id(sublime: HeadlessSublime) -> dict[int, dict[str, Any]]:
    return {v["id"]: v for v in sublime.do("views")["views"]}


def test_editing_verbs_answer_one_line_each(sublime: HeadlessSublime, workspace: Path) -> None:
    path = str(workspace / "notes.txt")
    view = sublime.do("open", path=path)["view"]
    assert sublime.do("select", path=path, start=[2, 1], end=[2, 4]) == {
        "ok": True, "do": "select", "view": view, "region": [4, 7],
    }
    assert views_by_id(sublime)[view]["file"] == path
    sublime.do("set_text", view=view, text="changed\n")
    assert sublime.do("text", path=path)["text"] == "changed\n"
    assert views_by_id(sublime)[view]["dirty"] is True
    other = workspace / "other.txt"
    other.write_text("x\n")
    other_view = sublime.do("open", path=str(other))["view"]
    assert sublime.do("close", path=str(other)) == {"ok": True, "do": "close", "view": other_view, "closed": True}
    assert set(views_by_id(sublime)) == {view}
    assert sublime.do("state")["running"] is True


def test_copy_connect_command_for_a_chosen_shell(sublime: HeadlessSublime, workspace: Path) -> None:
    port = sublime.do("state")["port"]
    for shell, first_line in (
        ("posix", f"export QWEN_CODE_IDE_SERVER_PORT={port}"),
        ("powershell", f"$env:QWEN_CODE_IDE_SERVER_PORT = '{port}'"),
        ("cmd", f'set "QWEN_CODE_IDE_SERVER_PORT={port}"'),
    ):
        sublime.do("command", name="qwen_copy_connect_command", args={"shell": shell})
        sublime.do("wait_idle")
        assert sublime.do("clipboard")["text"].splitlines()[0] == first_line


def test_terminal_spec_and_connect_command_for_gemini(sublime: HeadlessSublime, workspace: Path, tmp_path: Path) -> None:
    state = sublime.do("state")
    qwen = sublime.do("terminal_spec")
    gemini = sublime.do("terminal_spec", cli="gemini")
    discovery = list((tmp_path / "home" / "tmp" / "gemini" / "ide").glob("gemini-ide-server-*.json"))
    assert len(discovery) == 1
    published = json.loads(discovery[0].read_text())
    ide_pid = discovery[0].name.split("-")[3]
    assert gemini["env"] == {
        "GEMINI_CLI_IDE_SERVER_PORT": str(state["port"]),
        "GEMINI_CLI_IDE_WORKSPACE_PATH": str(workspace),
        "TERM_PROGRAM": "sublime",
        "GEMINI_CLI_IDE_PID": ide_pid,
        "GEMINI_CLI_IDE_AUTH_TOKEN": published["authToken"],
    }
    assert published["port"] == state["port"] and published["workspacePath"] == str(workspace)
    assert gemini["shell_cmd"] == "TERM_PROGRAM=sublime gemini" and gemini["cwd"] == qwen["cwd"] == str(workspace)
    assert set(qwen["env"]) == {"QWEN_CODE_IDE_SERVER_PORT", "QWEN_CODE_IDE_WORKSPACE_PATH"}

    sublime.do("command", name="qwen_copy_connect_command", args={"shell": "posix", "cli": "gemini"})
    sublime.do("wait_idle")
    text = sublime.do("clipboard")["text"]
    assert text.splitlines()[:4] == [
        f"export GEMINI_CLI_IDE_SERVER_PORT={state['port']}",
        f"export GEMINI_CLI_IDE_WORKSPACE_PATH={workspace}",
        "export TERM_PROGRAM=sublime",
        f"export GEMINI_CLI_IDE_PID={ide_pid}",
    ]
    assert text.splitlines()[4].endswith("&& gemini") and published["authToken"] not in text

    answer = sublime.do("terminal_spec", cli="claude")
    assert answer["ok"] is False and "qwen" in answer["error"] and "gemini" in answer["error"]


def test_bad_input_gets_an_error_line_and_the_driver_keeps_serving(sublime: HeadlessSublime) -> None:
    answer = sublime.do("select", path="/not/open.txt", start=[1, 1], end=[1, 1])
    assert answer["ok"] is False and "is not open" in answer["error"]
    answer = sublime.do("nope")
    assert answer["ok"] is False and "unknown action" in answer["error"]
    answer = sublime.do("text", path="/not/open.txt")
    assert answer["ok"] is False and "is not open" in answer["error"]
    assert sublime.do("views")["ok"] is True


def test_diff_events_and_accepting_through_a_link(
    sublime: HeadlessSublime, cli: McpClient, workspace: Path
) -> None:
    path = str(workspace / "notes.txt")
    assert cli.open_diff(path, "one\nTWO\nthree\n") == {"content": [], "isError": False}

    opened = sublime.wait_event(lambda e: e.get("event") == "diff_opened")
    assert opened["filePath"] == path
    views = views_by_id(sublime)
    assert views[opened["original_view"]]["read_only"] is True
    assert views[opened["proposed_view"]]["diff_view"] is True
    sublime.do("set_text", view=opened["proposed_view"], text="one\nTWO!\nthree\n")
    sublime.do("click", view=opened["proposed_view"], href="accept")

    closed = sublime.wait_event(lambda e: e.get("event") == "diff_closed")
    assert closed == {"event": "diff_closed", "filePath": path, "outcome": "accepted"}
    notification = cli.next_notification()
    assert notification["method"] == "ide/diffAccepted"
    assert notification["params"] == {"filePath": path, "content": "one\nTWO!\nthree\n"}


def test_closing_a_review_tab_reports_a_rejection(
    sublime: HeadlessSublime, cli: McpClient, workspace: Path
) -> None:
    path = str(workspace / "notes.txt")
    cli.open_diff(path, "replaced\n")
    opened = sublime.wait_event(lambda e: e.get("event") == "diff_opened")

    sublime.do("close", view=opened["proposed_view"])

    closed = sublime.wait_event(lambda e: e.get("event") == "diff_closed")
    assert closed["outcome"] == "rejected"
    assert cli.next_notification() == {
        "jsonrpc": "2.0", "method": "ide/diffRejected", "params": {"filePath": path},
    }


def test_sessions_events_and_quit(sublime: HeadlessSublime, cli: McpClient) -> None:
    sublime.wait_event(lambda e: e.get("event") == "sessions" and e["connected"] == 1)

    assert sublime.quit() == {"ok": True, "do": "quit", "lock_files_left": []}
    assert not Path(sublime.ready["lock_file"]).exists()


FAKE_STREAM_CLI = Path(__file__).resolve().parents[1] / "rig" / "fake_stream_cli.py"


@pytest.fixture
def scripted(workspace: Path, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[HeadlessSublime, Path]]:
    """The driver with a scripted stream-json CLI as `qwen_command`; write the script before an action.
    Parametrized indirectly, its parameter is more settings."""
    require_built()
    home = tmp_path / "home"
    user = home / ".config" / "sublime-text" / "Packages" / "User"
    user.mkdir(parents=True)
    script = tmp_path / "script.json"
    settings = {"qwen_command": [sys.executable, str(FAKE_STREAM_CLI), str(script)], **getattr(request, "param", {})}
    (user / "QwenCompanion.sublime-settings").write_text(json.dumps(settings))
    editor = HeadlessSublime(workspace, home)
    yield editor, script
    editor.kill()


def test_actions_report_their_start_and_outcome_and_the_answer_view_is_readable(
    scripted: tuple[HeadlessSublime, Path], workspace: Path
) -> None:
    sublime, script = scripted
    path = str(workspace / "notes.txt")
    script.write_text(json.dumps({"steps": [{"text": "Three numbers, one a line.", "chunks": 3}]}))
    sublime.do("open", path=path)
    sublime.do("select", path=path, start=[1, 1], end=[3, 6])
    window = sublime.do("action", action="explain")["window"]
    assert sublime.wait_event(lambda e: e.get("event") == "action_started") == {
        "event": "action_started", "window": window, "action": "explain",
    }
    finished = sublime.wait_event(lambda e: e.get("event") == "action_finished")
    assert finished == {"event": "action_finished", "window": window, "action": "explain", "outcome": "answered"}
    answer = next(v for v in sublime.do("views")["views"] if v["answer_view"])
    assert "Three numbers, one a line." in sublime.do("text", view=answer["id"])["text"]


def test_a_proposing_action_goes_through_the_diff_events(
    scripted: tuple[HeadlessSublime, Path], workspace: Path
) -> None:
    sublime, script = scripted
    path = str(workspace / "notes.txt")
    script.write_text(json.dumps({"steps": [{"text": "```\nONE\nTWO\n```"}]}))
    sublime.do("open", path=path)
    sublime.do("select", path=path, start=[1, 1], end=[3, 1])
    sublime.do("action", action="fix", path=path)
    opened = sublime.wait_event(lambda e: e.get("event") == "diff_opened")
    assert sublime.wait_event(lambda e: e.get("event") == "action_finished")["outcome"] == "proposed"
    sublime.do("click", view=opened["proposed_view"], href="accept")
    assert sublime.wait_event(lambda e: e.get("event") == "diff_closed")["outcome"] == "accepted"
    assert sublime.do("text", path=path)["text"] == "ONE\nTWO\nthree\n"


def test_action_cancel_reports_a_cancelled_outcome(scripted: tuple[HeadlessSublime, Path], workspace: Path) -> None:
    sublime, script = scripted
    path = str(workspace / "notes.txt")
    script.write_text(json.dumps({"steps": [{"stall": 30}]}))
    sublime.do("open", path=path)
    sublime.do("select", path=path, start=[1, 1], end=[1, 4])
    sublime.do("action", action="ask")  # no question: Sublime's palette asks for it
    answer = sublime.do("input", text="Why one?")
    assert (answer["command"], answer["accepted"]) == ("qwen_action", True)
    sublime.wait_event(lambda e: e.get("event") == "action_started")
    sublime.do("action_cancel")
    assert sublime.wait_event(lambda e: e.get("event") == "action_finished")["outcome"] == "cancelled"


def explain_notes(sublime: HeadlessSublime, script: Path, workspace: Path) -> int:
    path = str(workspace / "notes.txt")
    script.write_text(json.dumps({"steps": [{"text": "Numbers."}]}))
    code = sublime.do("open", path=path)["view"]
    sublime.do("select", path=path, start=[1, 1], end=[3, 6])
    sublime.do("action", action="explain")
    assert sublime.wait_event(lambda e: e.get("event") == "action_finished")["outcome"] == "answered"
    return int(code)


def test_layout_shows_the_answer_beside_the_code_and_both_visible(
    scripted: tuple[HeadlessSublime, Path], workspace: Path
) -> None:
    sublime, script = scripted
    code = explain_notes(sublime, script, workspace)
    answer = next(v for v in sublime.do("views")["views"] if v["answer_view"])
    assert answer["group"] == 1 and "panel" not in answer
    layout = sublime.do("layout")
    assert layout["layout"]["cells"] == [[0, 0, 1, 1], [1, 0, 2, 1]]
    assert [g["visible"] for g in layout["groups"]] == [code, answer["id"]]
    assert layout["focused_view"] == code and layout["panel"] is None
    sublime.do("close", view=answer["id"])
    sublime.do("wait_idle")
    assert [g["visible"] for g in sublime.do("layout")["groups"]] == [code]


@pytest.mark.parametrize("scripted", [{"actions_answer_place": "panel"}], indirect=True)
def test_views_name_the_answers_panel(scripted: tuple[HeadlessSublime, Path], workspace: Path) -> None:
    sublime, script = scripted
    code = explain_notes(sublime, script, workspace)
    answer = next(v for v in sublime.do("views")["views"] if v["answer_view"])
    assert answer["panel"] == "output.qwen_answer" and answer["group"] is None
    assert "Numbers." in sublime.do("text", view=answer["id"])["text"]
    layout = sublime.do("layout")
    assert layout["panel"] == "output.qwen_answer" and [g["visible"] for g in layout["groups"]] == [code]
