"""The everyday commands in the simulated editor, with the BUILT package:
Open in Terminal (through the stand-in Terminus of tests/support/terminus.py),
the fallback without Terminus, the status bar as CLIs come and go, the
Diagnose Connection report, Show Log, Restart Server, and live settings.

HOME and QWEN_HOME point into the test's tmp folder: no real ~/.qwen is read
or written. `qwen` on PATH is a stub that prints a version.
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sublime_sim import SimulatedHost
from tests.support.editor import BUILT_PACKAGE, PACKAGE, Editor, open_editor
from tests.support.mcp_client import WAIT, McpClient
from tests.support.terminus import install_terminus, mcp_config_option, terminus_calls

STATUS_KEY = "qwen_companion"
REPORT_NAME = "Qwen Code: Diagnose Connection"



# --- set-up -----------------------------------------------------------------------


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The HOME for `open_editor`, with qwen settings, and a `qwen` stub first on PATH."""
    home = tmp_path / "home"
    (home / ".qwen").mkdir(parents=True)
    write_qwen_settings(home, {"ide": {"enabled": True}, "tools": {"approvalMode": "default"}})
    monkeypatch.delenv("QWEN_CODE_IDE_SERVER_PORT", raising=False)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub = bin_dir / "qwen"
    stub.write_text("#!/bin/sh\necho 0.24.4\n")
    stub.chmod(stub.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return home


def write_qwen_settings(home: Path, data: dict[str, Any]) -> None:
    (home / ".qwen" / "settings.json").write_text(json.dumps(data))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "proj"
    (folder / "src").mkdir(parents=True)
    (folder / "src" / "main.py").write_text("print('hi')\n")
    return folder.resolve()


@pytest.fixture
def record(tmp_path: Path) -> Path:
    return tmp_path / "terminus-calls.jsonl"


@pytest.fixture
def editor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: Path, workspace: Path) -> Iterator[Editor]:
    """Not loaded yet: each test calls `editor.load`."""
    with open_editor(tmp_path, monkeypatch, home=home, workspace=workspace, load=False) as editor:
        yield editor


@pytest.fixture
def host(editor: Editor, record: Path) -> SimulatedHost:
    """The editor's host, with the stand-in Terminus loaded."""
    install_terminus(editor.host, record)
    return editor.host


def status(host: SimulatedHost, view: Any) -> str:
    return str(host.run_on_main(lambda: view.get_status(STATUS_KEY)))


def wait_status(host: SimulatedHost, view: Any, text: str) -> None:
    try:
        host.wait_for(lambda: status(host, view) == text, timeout=WAIT)
    except TimeoutError:
        raise AssertionError(f"status is {status(host, view)!r}, expected {text!r}") from None


# --- Open in Terminal -----------------------------------------------------------------


def test_open_in_terminal_passes_cwd_env_command_tag_and_auto_close(
    host: SimulatedHost, editor: Editor, workspace: Path, record: Path
) -> None:
    lock = editor.load([workspace])
    host.user.run_command("qwen_open_terminal")
    host.wait_for(lambda: terminus_calls(record), timeout=WAIT)
    host.wait_idle()

    [args] = terminus_calls(record)
    window_id = host.window.id()
    assert args == {
        "shell_cmd": "qwen" + mcp_config_option(host),
        "cwd": str(workspace),
        "env": {
            "QWEN_CODE_IDE_SERVER_PORT": str(lock["port"]),
            "QWEN_CODE_IDE_WORKSPACE_PATH": str(workspace),
        },
        "title": "Qwen Code · proj",
        "tag": f"qwen-code-window-{window_id}",
        "auto_close": "on_success",
        "focus": True,
        "show_in_panel": True,
        "panel_name": "Qwen Code",
    }
    assert lock["workspacePath"] == str(workspace)
    host.assert_no_errors()


def test_open_in_terminal_reuses_the_running_terminal(
    host: SimulatedHost, editor: Editor, workspace: Path, record: Path
) -> None:
    editor.load([workspace])
    host.user.run_command("qwen_open_terminal")
    host.wait_for(lambda: terminus_calls(record), timeout=WAIT)
    host.wait_idle()
    host.user.run_command("qwen_open_terminal")
    host.wait_idle()
    assert len(terminus_calls(record)) == 1  # shown again, not started again
    assert host.window.active_panel() == "output.Qwen Code"

    # Once qwen has exited, the same tag starts it again in place.
    panel = host.window.find_output_panel("Qwen Code")
    host.run_on_main(lambda: panel.settings().set("terminus_view.finished", True))
    host.user.run_command("qwen_open_terminal")
    host.wait_for(lambda: len(terminus_calls(record)) == 2, timeout=WAIT)
    assert terminus_calls(record)[1]["tag"] == terminus_calls(record)[0]["tag"]
    host.assert_no_errors()


def test_open_gemini_in_terminal_is_a_terminal_of_its_own(
    host: SimulatedHost, editor: Editor, workspace: Path, record: Path
) -> None:
    lock = editor.load([workspace])
    editor.settings({"gemini_command": ["gemini", "--debug"]})
    host.user.run_command("qwen_open_terminal")
    host.wait_for(lambda: terminus_calls(record), timeout=WAIT)
    host.wait_idle()
    host.user.run_command("qwen_open_terminal", {"cli": "gemini"})
    host.wait_for(lambda: len(terminus_calls(record)) == 2, timeout=WAIT)  # not the qwen terminal shown again
    host.wait_idle()
    gemini = terminus_calls(record)[1]
    window_id = host.window.id()
    assert gemini == {
        # Terminus overwrites TERM_PROGRAM after `env`: the command sets it. No --mcp-config: a qwen option.
        "cmd": ["env", "TERM_PROGRAM=sublime", "gemini", "--debug"],
        "cwd": str(workspace),
        "env": {
            "GEMINI_CLI_IDE_SERVER_PORT": str(lock["port"]),
            "GEMINI_CLI_IDE_WORKSPACE_PATH": str(workspace),
            "TERM_PROGRAM": "sublime",
            "GEMINI_CLI_IDE_PID": str(lock["ppid"]),
            "GEMINI_CLI_IDE_AUTH_TOKEN": lock["authToken"],
        },
        "title": "Gemini CLI · proj",
        "tag": f"gemini-cli-window-{window_id}",
        "auto_close": "on_success",
        "focus": True,
        "show_in_panel": True,
        "panel_name": "Gemini CLI",
    }
    assert (editor.gemini_dir / f"gemini-ide-server-{lock['ppid']}-{lock['port']}.json").is_file()
    host.user.run_command("qwen_open_terminal", {"cli": "gemini"})
    host.wait_idle()
    assert len(terminus_calls(record)) == 2  # its own terminal is reused
    assert host.window.active_panel() == "output.Gemini CLI"
    host.user.run_command("qwen_open_terminal", {"cli": "claude"})
    host.wait_idle()
    assert len(terminus_calls(record)) == 2
    assert any("no terminal for the CLI 'claude'" in message for message in host.status_messages)
    host.assert_no_errors()


def test_window_without_folder_uses_the_active_files_folder(
    host: SimulatedHost, editor: Editor, workspace: Path, record: Path
) -> None:
    editor.load()
    host.user.open_file(workspace / "src" / "main.py")
    host.user.run_command("qwen_open_terminal")
    host.wait_for(lambda: terminus_calls(record), timeout=WAIT)
    host.wait_idle()
    [args] = terminus_calls(record)
    assert args["cwd"] == str(workspace / "src")
    assert args["env"]["QWEN_CODE_IDE_WORKSPACE_PATH"] == ""
    assert any("has no folder" in message for message in host.status_messages)


def test_settings_for_the_terminal_apply_without_restart(
    host: SimulatedHost, editor: Editor, workspace: Path, record: Path
) -> None:
    editor.load([workspace])
    host.user.edit_settings_file("QwenCompanion.sublime-settings", {
        "qwen_command": ["qwen", "--approval-mode", "default"],
        "terminal_location": "tab",
        "terminal_reuse": False,
        "terminal_auto_close": False,
    })
    host.user.run_command("qwen_open_terminal")
    host.user.run_command("qwen_open_terminal")
    host.wait_for(lambda: len(terminus_calls(record)) == 2, timeout=WAIT)
    first, second = terminus_calls(record)
    assert first["cmd"] == ["qwen", "--approval-mode", "default", *mcp_config_option(host).split()]
    assert "shell_cmd" not in first
    assert first["auto_close"] is False
    assert "show_in_panel" not in first and "panel_name" not in first
    assert first["tag"] != second["tag"]
    assert first["tag"].startswith(f"qwen-code-window-{host.window.id()}-")
    host.assert_no_errors()


# --- without Terminus -------------------------------------------------------------------


def test_without_terminus_one_message_then_the_connect_command(editor: Editor, workspace: Path, record: Path) -> None:
    host = editor.host
    lock = editor.load([workspace])
    host.user.run_command("qwen_open_terminal")
    host.wait_idle()
    [dialog] = host.dialogs
    assert dialog.kind == "ok_cancel"
    assert "Install Package → Terminus" in dialog.message
    assert "Copy Connect Command" in dialog.message
    assert "also finds this window without them" in dialog.message
    assert host.sublime.get_clipboard() == (
        f"export QWEN_CODE_IDE_SERVER_PORT={lock['port']}\n"
        f"export QWEN_CODE_IDE_WORKSPACE_PATH={workspace}\n"
        f"cd {workspace} && qwen{mcp_config_option(host)}\n"
    )
    assert not terminus_calls(record)
    assert not host.unknown_commands  # terminus_open was never tried

    # Declined: nothing is copied.
    host.sublime.set_clipboard("")
    host.answers.push("ok_cancel", False)
    host.user.run_command("qwen_open_terminal")
    host.wait_idle()
    assert host.sublime.get_clipboard() == ""
    host.assert_no_errors()


# --- the status bar ---------------------------------------------------------------------


def test_status_bar_follows_clis_connecting_and_leaving(host: SimulatedHost, editor: Editor, workspace: Path) -> None:
    editor.load([workspace])
    view = host.user.open_file(workspace / "src" / "main.py")
    wait_status(host, view, "Qwen ○")

    first = editor.cli("raw-cli")
    wait_status(host, view, "Qwen ● 1")
    second = editor.cli("raw-cli")
    wait_status(host, view, "Qwen ● 2")
    other = host.user.new_file()  # a view opened later gets the text when activated
    wait_status(host, other, "Qwen ● 2")

    first.delete()
    first.close()
    wait_status(host, view, "Qwen ● 1")
    second.close()  # as the real CLI leaves: no DELETE, the stream just drops
    wait_status(host, view, "Qwen ○")

    host.user.edit_settings_file("QwenCompanion.sublime-settings", {"status_bar": False})
    wait_status(host, view, "")
    host.user.edit_settings_file("QwenCompanion.sublime-settings", {"status_bar": True})
    wait_status(host, view, "Qwen ○")
    host.assert_no_errors()


def test_unloading_the_package_clears_the_status_bar(host: SimulatedHost, editor: Editor, workspace: Path) -> None:
    editor.load([workspace])
    view = host.user.open_file(workspace / "src" / "main.py")
    editor.cli("raw-cli")
    wait_status(host, view, "Qwen ● 1")

    host.unload_package(PACKAGE)
    host.user.edit_settings_file("QwenCompanion.sublime-settings", {"status_bar": True, "log_level": "DEBUG"})
    host.wait_idle()

    assert status(host, view) == ""
    host.assert_no_errors()


def test_restart_server_gets_a_new_port_and_lock_file(host: SimulatedHost, editor: Editor, home: Path, workspace: Path) -> None:
    old = editor.load([workspace])
    view = host.user.open_file(workspace / "src" / "main.py")
    editor.cli("raw-cli")
    wait_status(host, view, "Qwen ● 1")

    host.user.run_command("qwen_restart_server")
    new = host.wait_for(lambda: (lock := editor.find_lock()) and lock["port"] != old["port"] and lock, timeout=WAIT)
    assert new["authToken"] != old["authToken"]
    assert not (home / ".qwen" / "ide" / f"{old['port']}.lock").exists()
    wait_status(host, view, "Qwen ○")
    host.wait_for(lambda: any(f"port {new['port']}" in m for m in host.status_messages), timeout=WAIT)
    host.assert_no_errors()


# --- Diagnose Connection ------------------------------------------------------------------


def diagnose(host: SimulatedHost, folder: Path | str) -> str:
    host.user.run_command("qwen_diagnose_connection", {"folder": str(folder)})

    def report() -> str:
        for view in host.window.views():
            if view.name() == REPORT_NAME and view.size():
                return str(view.substr(host.sublime.Region(0, view.size())))
        return ""

    text = host.wait_for(report, timeout=WAIT)
    host.wait_idle()
    return text


def test_diagnose_a_healthy_server(host: SimulatedHost, editor: Editor, home: Path, workspace: Path) -> None:
    lock = editor.load([workspace])
    connected_at = time.monotonic()
    editor.cli("raw-cli")
    text = diagnose(host, workspace / "src")
    since_connected = time.monotonic() - connected_at
    assert "Most likely reason a CLI started in" in text
    assert "None found: 1 CLI(s) connected." in text
    assert f"  port:           {lock['port']}\n" in text
    assert f"{home}/.qwen/ide/{lock['port']}.lock" in text
    assert "readable, well-formed, matches this server" in text
    # Its age counts from its connection: a busy machine takes seconds to get here.
    age = re.search(r"  raw-cli  for (\d+) s, event stream open\n", text)
    assert age is not None, text
    assert int(age[1]) <= since_connected
    assert f"{home / '.qwen' / 'settings.json'} (read)" in text
    assert "  ide.enabled:    true\n" in text
    assert "  approval mode:  default (" in text
    assert "version 0.24.4" in text
    assert "  Terminus:       installed\n" in text
    assert lock["authToken"] not in text
    # A second run replaces the report instead of opening another tab.
    diagnose(host, workspace)
    assert [v.name() for v in host.window.views()].count(REPORT_NAME) == 1
    host.assert_no_errors()


def test_diagnose_opens_beside_the_code_and_names_files_in_the_folder_relative_to_it(
        host: SimulatedHost, editor: Editor, workspace: Path) -> None:
    editor.load([workspace])
    (workspace / ".qwen").mkdir()
    (workspace / ".qwen" / "settings.json").write_text("{}")
    code = editor.open("main.py", "x = 1\n")
    text = diagnose(host, workspace)
    assert f"folder settings:{os.path.join('.qwen', 'settings.json')} (read)" in text
    assert str(workspace / ".qwen") not in text
    report = next(v for v in host.window.views() if v.name() == REPORT_NAME)
    assert host.visible_views(host.window) == [code, report]
    host.user.close(report)
    host.wait_idle()
    assert host.window.num_groups() == 1 and host.visible_views(host.window) == [code]


def diagnose_afresh(host: SimulatedHost, folder: Path) -> str:
    """`diagnose` after closing the last report, so the text read is the new one."""
    for view in host.window.views():
        if view.name() == REPORT_NAME:
            host.user.close(view)
    host.wait_idle()
    return diagnose(host, folder)


def test_diagnose_reports_gemini_cli(host: SimulatedHost, editor: Editor, workspace: Path, tmp_path: Path) -> None:
    lock = editor.load([workspace])
    gemini_file = editor.gemini_dir / f"gemini-ide-server-{lock['ppid']}-{lock['port']}.json"
    host.wait_for(gemini_file.is_file, timeout=WAIT)
    text = diagnose(host, workspace)
    assert "\ngemini CLI\n  executable:     `gemini` not found on PATH\n" in text
    assert f"  discovery file: {gemini_file}\n  {'':16}readable, well-formed, matches this server\n" in text

    fake = tmp_path / "fake-gemini"
    fake.write_text("#!/bin/sh\necho 0.56.0\n")
    fake.chmod(0o755)
    editor.settings({"gemini_command": [str(fake)]})
    forged = json.loads(gemini_file.read_text())
    gemini_file.write_text(json.dumps({**forged, "authToken": "forged"}))  # kept: only a missing file is rewritten
    text = diagnose_afresh(host, workspace)
    assert f"  executable:     {fake}, version 0.56.0\n" in text
    assert f"  discovery file: {gemini_file}\n  {'':16}does not match this server: authToken belongs to another server\n" in text
    assert lock["authToken"] not in text

    editor.settings({"companion_clis": ["qwen"]})
    assert "\ngemini CLI\n  served:         no (not in the companion_clis setting)\n" in diagnose_afresh(host, workspace)
    host.assert_no_errors()


def test_diagnose_a_missing_lock_file(host: SimulatedHost, editor: Editor, home: Path, workspace: Path) -> None:
    lock = editor.load([workspace])
    path = home / ".qwen" / "ide" / f"{lock['port']}.lock"
    path.unlink()
    text = diagnose(host, workspace)
    assert f"  • The lock file {path} is missing, so the CLI cannot find this server." in text
    assert "Restart Server" in text


def test_diagnose_a_cli_in_a_foreign_folder(host: SimulatedHost, editor: Editor, workspace: Path, tmp_path: Path) -> None:
    editor.load([workspace])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    text = diagnose(host, elsewhere)
    assert f"Most likely reason a CLI started in {elsewhere} would not connect:\n  • {elsewhere} is outside" in text
    assert "“Directory mismatch”" in text
    assert "outside the window's folders: a CLI started there refuses to connect." in text


def test_diagnose_a_wrong_token_attempt(host: SimulatedHost, editor: Editor, workspace: Path) -> None:
    lock = editor.load([workspace])
    wrong = "f" * 64
    cli = McpClient(lock["port"], lock["authToken"])
    assert cli.post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, token=wrong).status == 401
    text = diagnose(host, workspace)
    assert "  • 1 request(s) came with a wrong token" in text
    assert "wrong token: scheme 'Bearer', token does not match" in text
    assert wrong not in text and lock["authToken"] not in text


def test_diagnose_ide_mode_off(host: SimulatedHost, editor: Editor, home: Path, workspace: Path) -> None:
    editor.load([workspace])
    write_qwen_settings(home, {})
    text = diagnose(host, workspace)
    assert "  • IDE mode is off in qwen (ide.enabled is not set). Run /ide enable" in text
    assert "approval mode:  auto (not set; qwen 0.24.4's default)" in text


# --- Show Log and log_level ----------------------------------------------------------------


def test_show_log_panel_and_live_log_level(host: SimulatedHost, editor: Editor, workspace: Path) -> None:
    editor.load([workspace])
    host.user.run_command("qwen_show_log")
    host.wait_idle()
    assert host.window.active_panel() == "output.Qwen Companion Log"
    panel = host.window.find_output_panel("Qwen Companion Log")

    def text() -> str:
        return str(host.run_on_main(lambda: panel.substr(host.sublime.Region(0, panel.size()))))

    assert " INFO    server for " in text()  # history from before the panel opened

    logger = logging.getLogger(PACKAGE)
    assert logger.level == logging.INFO
    host.user.edit_settings_file("QwenCompanion.sublime-settings", {"log_level": "DEBUG"})
    assert logger.level == logging.DEBUG
    logger.getChild("test").debug("a debug line")
    host.wait_for(lambda: " DEBUG   a debug line" in text(), timeout=WAIT)
    host.user.edit_settings_file("QwenCompanion.sublime-settings", {"log_level": "ERROR"})
    logger.getChild("test").warning("not shown")
    host.wait_idle()
    assert "not shown" not in text()
    host.assert_no_errors()


def test_disabled_terminus_counts_as_missing(host: SimulatedHost, editor: Editor, workspace: Path, record: Path) -> None:
    editor.load([workspace])
    host.user.edit_settings_file("Preferences.sublime-settings", {"ignored_packages": ["Vintage", "Terminus"]})
    host.answers.push("ok_cancel", False)
    host.user.run_command("qwen_open_terminal")
    host.wait_idle()
    assert [d.kind for d in host.dialogs] == ["ok_cancel"]
    assert not terminus_calls(record)


# --- palette, menu and key bindings ---------------------------------------------------------


def test_palette_menu_and_keymap_name_commands_that_exist(host: SimulatedHost, editor: Editor, workspace: Path) -> None:
    editor.load([workspace])
    known = {"edit_settings", "insert"}  # built into Sublime Text
    for classes in host.sublime_plugin.all_command_classes:
        known |= {cls.name(object.__new__(cls)) for cls in classes}

    def decode(name: str) -> Any:
        return host.sublime.decode_value((BUILT_PACKAGE / name).read_text(encoding="utf-8"))

    def menu_commands(items: list[dict[str, Any]]) -> Iterator[str]:
        for item in items:
            if "command" in item:
                yield item["command"]
            yield from menu_commands(item.get("children", []))

    palette = {entry["caption"]: entry["command"] for entry in decode("Default.sublime-commands")}
    menu = list(menu_commands(decode("Main.sublime-menu")))
    keys = [binding["command"] for binding in decode("Default.sublime-keymap")]
    assert set(palette.values()) | set(menu) | set(keys) <= known
    for caption in ("Open in Terminal", "Copy Connect Command", "Diagnose Connection", "Restart Server", "Show Log"):
        assert f"Qwen Code: {caption}" in palette
    assert {"qwen_open_terminal", "qwen_accept_diff", "qwen_reject_diff", "qwen_diagnose_connection"} <= set(menu)
    assert "qwen_open_terminal" in keys
