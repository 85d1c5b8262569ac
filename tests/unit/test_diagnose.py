"""The Diagnose Connection report: fact gathering and the rules that pick the
most likely reason a CLI would not connect."""

from __future__ import annotations

import json
import stat
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from qwencompanion_src.core.companion import gemini_discovery, lockfile
from qwencompanion_src.core.diagnose import (
    CliProbe,
    Facts,
    GeminiFacts,
    LockCheck,
    QwenSettings,
    Refusal,
    RemoteFacts,
    SessionRow,
    approval_mode_from_command,
    build_report,
    effective_approval_mode,
    folder_inside,
    inspect_gemini_file,
    inspect_lock,
    probe_cli,
    problems,
    qwen_home,
    read_qwen_settings,
)

TOKEN = "ab" * 32
NOW = 1_750_000_000.0


def healthy(**changes: object) -> Facts:
    facts = Facts(
        now=NOW,
        window_id=2,
        running=True,
        port=43125,
        started_at=NOW - 600,
        roots=["/projects/app"],
        lock_directory="/home/u/.qwen/ide",
        lock=LockCheck("/home/u/.qwen/ide/43125.lock", "ok"),
        cli=CliProbe("qwen", "/usr/bin/qwen", version="0.24.4"),
        user_settings=QwenSettings("/home/u/.qwen/settings.json", True, ide_enabled=True, approval_mode="default"),
        sessions=[SessionRow("3f2a9c1d", "streamable-http-client", 125, True)],
        folder="/projects/app/src",
        folder_inside=True,
    )
    return replace(facts, **changes)  # type: ignore[arg-type]


# --- the rules ------------------------------------------------------------------


def test_healthy_report_has_no_problem_and_lists_everything() -> None:
    facts = healthy()
    assert problems(facts) == []
    report = build_report(facts)
    assert "None found: 1 CLI(s) connected." in report
    assert "running since" in report and "(10 min)" in report
    assert "  port:           43125\n" in report
    assert "readable, well-formed, matches this server" in report
    assert "/projects/app" in report
    assert "3f2a9c1d  streamable-http-client  for 2 min, event stream open" in report
    assert "/usr/bin/qwen, version 0.24.4" in report
    assert "  ide.enabled:    true\n" in report
    assert "  approval mode:  default (/home/u/.qwen/settings.json)\n" in report
    assert "inside the window's folders" in report


def test_folder_outside_the_roots_is_the_most_likely_reason() -> None:
    facts = healthy(folder="/elsewhere", folder_inside=False, sessions=[])
    found = problems(facts)
    assert len(found) == 1
    assert found[0].startswith("/elsewhere is outside this window's folders")
    assert "Directory mismatch" in found[0] and "/projects/app" in found[0]
    report = build_report(facts)
    assert "Most likely reason a CLI started in /elsewhere would not connect:\n  • /elsewhere is outside" in report
    assert "outside the window's folders: a CLI started there refuses to connect." in report


def test_window_without_folder() -> None:
    found = problems(healthy(roots=[], folder="/tmp", folder_inside=False))
    assert "no folder" in found[0] and "Add Folder to Project" in found[0]
    assert not any("outside this window's folders" in item for item in found)


@pytest.mark.parametrize("state", ["missing", "unreadable", "malformed", "mismatch"])
def test_lock_file_problems_come_before_folder_problems(state: str) -> None:
    lock = LockCheck("/home/u/.qwen/ide/43125.lock", state, "why")  # type: ignore[arg-type]
    found = problems(healthy(lock=lock, folder="/elsewhere", folder_inside=False))
    assert found[0].startswith("The lock file /home/u/.qwen/ide/43125.lock ")
    assert "Restart Server" in found[0]
    assert "outside this window's folders" in found[1]


def test_unwritable_lock_directory() -> None:
    found = problems(healthy(lock=LockCheck("/x/1.lock", "missing"), lock_error="cannot write the lock file in /x: Permission denied"))
    assert found[0].startswith("The companion cannot write the lock file in /x: Permission denied")
    assert len([f for f in found if "lock" in f]) == 1


def test_server_not_running_and_startup_error() -> None:
    assert problems(healthy(running=False, lock=None))[0].startswith("This window's server is not running")
    first = problems(healthy(running=False, lock=None, startup_error="pydantic is missing"))[0]
    assert first == "The companion did not start: pydantic is missing"
    assert "  state:          not running\n" in build_report(healthy(running=False, lock=None))


def test_ide_mode_off_or_unset() -> None:
    off = healthy(user_settings=QwenSettings("/h/.qwen/settings.json", True, ide_enabled=False))
    assert problems(off) == [
        ("IDE mode is off in qwen (ide.enabled is false in /h/.qwen/settings.json). Run /ide enable inside "
         'qwen once, or set "ide": {"enabled": true} in /h/.qwen/settings.json.')
    ]
    unset = healthy(user_settings=QwenSettings("/h/.qwen/settings.json", False))
    assert "ide.enabled is not set" in problems(unset)[0]
    assert "ide.enabled:    not set (off)" in build_report(unset)
    assert "(not found)" in build_report(unset)


def test_folder_settings_override_user_settings() -> None:
    facts = healthy(
        user_settings=QwenSettings("/h/.qwen/settings.json", True, ide_enabled=True, approval_mode="default"),
        folder_settings=QwenSettings("/projects/app/.qwen/settings.json", True, ide_enabled=False, approval_mode="yolo"),
    )
    assert "ide.enabled is false in /projects/app/.qwen/settings.json" in problems(facts)[0]
    assert effective_approval_mode(facts) == ("yolo", "/projects/app/.qwen/settings.json")


def test_unreadable_settings_are_reported() -> None:
    facts = healthy(user_settings=QwenSettings("/h/.qwen/settings.json", True, error="not valid JSON: x"))
    found = problems(facts)
    assert found[0].startswith("qwen cannot read /h/.qwen/settings.json (not valid JSON: x)")
    assert "ide.enabled is not set" in found[1]


def test_wrong_and_missing_token_attempts() -> None:
    at = time.mktime((2025, 6, 1, 10, 5, 12, 0, 0, -1))
    facts = healthy(refusals=[
        Refusal(at - 60, "missing-token", "no Authorization header"),
        Refusal(at, "wrong-token", "scheme 'Bearer', token does not match"),
    ])
    found = problems(facts)
    assert found[0].startswith("1 request(s) came with a wrong token (last at 10:05:12)")
    assert found[1].startswith("1 request(s) came without a token (last at 10:04:12)")
    report = build_report(facts)
    assert "Refused requests (last 2 of 2):" in report
    assert "10:05:12  wrong token: scheme 'Bearer', token does not match" in report
    assert TOKEN not in report


def test_only_the_last_refusals_are_listed() -> None:
    facts = healthy(refusals=[Refusal(NOW - i, "host", f"Host 'evil{i}'") for i in range(8, 0, -1)])
    report = build_report(facts)
    assert "Refused requests (last 5 of 8):" in report
    assert "evil8" not in report and "evil1" in report
    assert problems(facts) == []  # browsers and bad Host headers do not stop a CLI


def test_cli_missing_or_broken_and_no_terminus() -> None:
    missing = healthy(cli=CliProbe("qwen", None, error="not found on PATH"), terminus=False)
    found = problems(missing)
    assert found[0].startswith("`qwen` is not on Sublime Text's PATH")
    assert found[1].startswith("Terminus is not installed") and "Copy Connect Command" in found[1]
    assert "`qwen` not found on PATH" in build_report(missing)
    broken = healthy(cli=CliProbe("qwen", "/usr/bin/qwen", error="`qwen --version` exited with 1: boom"))
    assert problems(broken) == ["`qwen` does not run: `qwen --version` exited with 1: boom."]


def test_nothing_wrong_and_nobody_connected() -> None:
    report = build_report(healthy(sessions=[], folder=None, folder_inside=None))
    assert "Most likely reason a CLI would not connect:\n  None found. Start qwen" in report
    assert "Connected CLIs: 0" in report
    assert "Folder checked" not in report


@pytest.mark.parametrize(
    ("mode", "words"),
    [
        (None, "approval mode:  auto (not set; qwen 0.24.4's default)\n                  qwen approves most edits without asking"),
        ("auto", "rarely opens"),
        ("yolo", "no diff opens"),
        ("auto-edit", "no diff opens"),
        ("default", "each proposed edit opens as a diff"),
        ("plan", "each proposed edit opens as a diff"),
        ("bogus", "not a mode qwen 0.24.4 knows"),
    ],
)
def test_approval_mode_advice(mode: str | None, words: str) -> None:
    facts = healthy(user_settings=QwenSettings("/h/s.json", True, ide_enabled=True, approval_mode=mode))
    assert words in build_report(facts)
    how_to = '"tools": {"approvalMode": "default"}' in build_report(facts)
    assert how_to == (mode in (None, "auto", "yolo", "auto-edit"))


def test_approval_mode_from_the_command_wins() -> None:
    facts = healthy(command_approval_mode="default", user_settings=QwenSettings("/h/s.json", True, ide_enabled=True, approval_mode="yolo"))
    assert effective_approval_mode(facts) == ("default", "the qwen_command setting")


@pytest.mark.parametrize(
    ("argv", "mode"),
    [
        (["qwen"], None),
        (["qwen", "--approval-mode", "default"], "default"),
        (["qwen", "--approval-mode=plan"], "plan"),
        (["qwen", "--yolo"], "yolo"),
        (["qwen", "-y"], "yolo"),
        (["qwen", "--approval-mode"], None),
    ],
)
def test_approval_mode_from_command(argv: list[str], mode: str | None) -> None:
    assert approval_mode_from_command(argv) == mode


# --- gathering facts ---------------------------------------------------------------


def write_lock(directory: Path, **overrides: object) -> Path:
    info = lockfile.LockInfo(port=43125, workspace_path="/projects/app", auth_token=TOKEN, ppid=4242)
    path = lockfile.write_lock(directory, info)
    if overrides:
        data = json.loads(path.read_text())
        data.update(overrides)
        path.write_text(json.dumps(data))
    return path


def check(path: Path) -> LockCheck:
    return inspect_lock(path, port=43125, token=TOKEN, workspace_path="/projects/app", ppid=4242)


def test_inspect_lock_ok_and_missing(tmp_path: Path) -> None:
    path = write_lock(tmp_path)
    assert check(path) == LockCheck(str(path), "ok")
    assert check(tmp_path / "1.lock").state == "missing"


def test_inspect_lock_malformed(tmp_path: Path) -> None:
    path = tmp_path / "43125.lock"
    path.write_text("{not json")
    assert check(path).state == "malformed"
    path.write_text("[]")
    assert check(path) == LockCheck(str(path), "malformed", "lock file is not a JSON object")
    write_lock(tmp_path, ideInfo=None, port="x")
    result = check(path)
    assert result.state == "malformed" and result.detail == "missing or wrong type: port, ideInfo"
    write_lock(tmp_path, ideInfo={"name": "vscode"})
    assert "ideInfo.name is 'vscode'" in check(path).detail


def test_inspect_lock_mismatch_never_shows_the_token(tmp_path: Path) -> None:
    path = write_lock(tmp_path, authToken="cd" * 32, workspacePath="/old", ppid=1)
    result = check(path)
    assert result.state == "mismatch"
    assert result.detail == (
        "authToken belongs to another server; workspacePath is '/old', the window's folders give "
        "'/projects/app'; ppid is 1, Sublime Text is 4242"
    )
    assert "cd" * 32 not in result.detail and TOKEN not in result.detail


def test_inspect_lock_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "43125.lock"
    path.mkdir()  # a directory where the lock file should be: no one can read it, root included
    assert check(path).state == "unreadable"


def test_read_qwen_settings(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    assert read_qwen_settings(path) == QwenSettings(str(path), exists=False)
    path.write_text('{\n // comment with "quotes"\n "ide": {"enabled": true,},\n "tools": {"approvalMode": "yolo"} /* x */\n}')
    assert read_qwen_settings(path) == QwenSettings(str(path), True, ide_enabled=True, approval_mode="yolo")
    path.write_text('{"ideMode": true, "approvalMode": "default", "url": "http://a//b"}')
    assert read_qwen_settings(path) == QwenSettings(str(path), True, ide_enabled=True, approval_mode="default")
    path.write_text('{"ide": {"enabled": "yes"}}')
    assert read_qwen_settings(path).ide_enabled is None
    path.write_text("{oops")
    assert (read_qwen_settings(path).error or "").startswith("not valid JSON")
    path.write_text("")
    assert read_qwen_settings(path) == QwenSettings(str(path), True)


def test_qwen_home_follows_qwen_home_then_home(tmp_path: Path) -> None:
    assert qwen_home({"HOME": "/h"}) == Path("/h/.qwen")
    assert qwen_home({"HOME": "/h", "QWEN_HOME": str(tmp_path)}) == tmp_path


def test_folder_inside_resolves_symlinks(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(root / "src")
    other = tmp_path / "projection"  # shares a prefix, is not inside
    other.mkdir()
    assert folder_inside(str(root), [str(root)])
    assert folder_inside(str(root / "src"), ["/nowhere", str(root)])
    assert folder_inside(str(link), [str(root)])
    assert not folder_inside(str(other), [str(root)])
    assert not folder_inside(str(tmp_path), [str(root)])
    assert not folder_inside(str(root), [])


def fake_cli(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "bin" / "qwen"
    script.parent.mkdir(exist_ok=True)
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script.parent


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell script")
def test_probe_cli(tmp_path: Path) -> None:
    bin_dir = fake_cli(tmp_path, 'echo "0.24.4"; [ "$QWEN_CODE_NO_RELAUNCH" = true ]')
    assert probe_cli("qwen", path=str(bin_dir)) == CliProbe("qwen", str(bin_dir / "qwen"), version="0.24.4")
    assert probe_cli("qwen", path=str(tmp_path / "empty")) == CliProbe("qwen", None, error="not found on PATH")
    fake_cli(tmp_path, "echo boom >&2; exit 3")
    assert probe_cli("qwen", path=str(bin_dir)).error == "`qwen --version` exited with 3: boom"
    fake_cli(tmp_path, "exec sleep 5")
    started = time.monotonic()
    assert probe_cli("qwen", path=str(bin_dir), timeout=0.3).error == "`qwen --version` gave no answer within 0.3 s"
    assert time.monotonic() - started < 4


def test_a_relative_qwen_home_is_reported() -> None:
    [sentence] = problems(healthy(relative_qwen_home="qwen-home"))
    assert sentence.startswith("QWEN_HOME is a relative path (qwen-home): qwen resolves it against the folder")
    assert "/home/u/.qwen/ide" in sentence


# --- gemini-cli ---------------------------------------------------------------------------


def _gemini_check(directory: Path) -> LockCheck:
    return inspect_gemini_file(gemini_discovery.discovery_path(directory, pid=7, port=43125),
                               port=43125, token=TOKEN, workspace_path="/projects/app")


def test_inspect_gemini_file_ok_missing_malformed_and_mismatch(tmp_path: Path) -> None:
    directory = tmp_path / "gemini" / "ide"
    assert _gemini_check(directory).state == "missing"
    assert gemini_discovery.publish(directory, pid=7, port=43125, folders=["/projects/app"], token=TOKEN) is None
    assert _gemini_check(directory) == LockCheck(str(directory / "gemini-ide-server-7-43125.json"), "ok")
    assert gemini_discovery.publish(directory, pid=7, port=43125, folders=["/elsewhere"], token="cd" * 32) is None
    mismatch = _gemini_check(directory)
    assert mismatch.state == "mismatch" and "authToken belongs to another server" in mismatch.detail
    assert "'/elsewhere'" in mismatch.detail and TOKEN not in mismatch.detail and "cd" * 32 not in mismatch.detail
    path = directory / "gemini-ide-server-7-43125.json"
    path.write_text(json.dumps({"port": 43125, "workspacePath": "/projects/app", "authToken": TOKEN}))
    assert _gemini_check(directory) == LockCheck(str(path), "malformed", "missing or wrong type: ideInfo")


def test_the_report_has_a_gemini_section() -> None:
    absent = build_report(healthy())
    assert "\ngemini CLI\n  served:         no (not in the companion_clis setting)\n" in absent
    served = build_report(healthy(gemini=GeminiFacts(
        CliProbe("gemini", "/usr/bin/gemini", version="0.56.0"),
        LockCheck("/tmp/gemini/ide/gemini-ide-server-7-43125.json", "ok"),
    )))
    assert ("\ngemini CLI\n  executable:     /usr/bin/gemini, version 0.56.0\n"
            "  discovery file: /tmp/gemini/ide/gemini-ide-server-7-43125.json\n"
            "                  readable, well-formed, matches this server\n") in served
    refused = build_report(healthy(gemini=GeminiFacts(
        CliProbe("gemini", None, error="not found on PATH"), None, "cannot write gemini-cli's discovery file in /t: refused",
    )))
    assert "  executable:     `gemini` not found on PATH\n" in refused
    assert "  discovery file: not written: cannot write gemini-cli's discovery file in /t: refused\n" in refused


def test_the_remote_endpoint_is_reported_with_the_folders_as_seen_there() -> None:
    assert "Remote endpoint (WSL, containers, SSH)\n  state:          none (set path_maps" in build_report(healthy())
    report = build_report(healthy(remote=RemoteFacts(4711, "/cache/remote/4711.lock", ["/workspaces/app", "/srv/lib"])))
    section = report.split("Remote endpoint (WSL, containers, SSH)\n")[1].splitlines()[:4]
    assert [" ".join(line.split()) for line in section] == [
        "port: 4711", "lock file: /cache/remote/4711.lock", "folders there: /workspaces/app", "/srv/lib",
    ]
    unmapped = build_report(healthy(remote=RemoteFacts(4711, None, [])))
    assert "lock file:      not written" in unmapped and "no path_maps entry holds a folder" in unmapped
