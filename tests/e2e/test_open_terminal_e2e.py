"""End to end: what "Qwen Code: Open in Terminal" runs connects the real CLI.

The built package runs in a simulated Sublime Text (HOME is the rig's
isolated one) whose window holds the workspace. A stand-in Terminus records
the `terminus_open` arguments; the test then runs exactly that command, in
that folder, with that environment, in the rig's tmux TUI session (plus the
rig's HOME and fake-model variables, and `qwen` on PATH as npm installs it),
and asks the real CLI for `/ide status`.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.rig.qwen_cli import QwenCli, TuiSession
from tests.support.editor import Editor, open_editor
from tests.support.terminus import install_terminus, terminus_calls, terminus_records

WAIT = 15.0


# What Terminus adds to the environment of every terminal it opens.
TERMINUS_ENV = {"TERM_PROGRAM": "Terminus-Sublime", "TERMINUS_SUBLIME": "1"}


@dataclass(frozen=True)
class Command(QwenCli):
    """Makes the rig's TUI session run an arbitrary command line."""

    command: tuple[str, ...] = ()

    def argv(self, *args: str) -> list[str]:
        return [*self.command, *args]


def terminus_argv(args: dict[str, Any]) -> list[str]:
    """The process Terminus starts on Linux for the arguments the headless
    driver's `terminal_spec` answers (what the process gets, never expanded)."""
    if "shell_cmd" in args:
        return ["/usr/bin/env", "bash", "-c", args["shell_cmd"]]
    return list(args["cmd"])


@pytest.fixture
def record(tmp_path: Path) -> Path:
    return tmp_path / "terminus-calls.jsonl"


@pytest.fixture
def editor(
    tmp_path: Path, qwen_home: Path, workspace: Path, record: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Editor]:
    """The companion writes its lock file where the CLI will look: the rig's HOME."""
    with open_editor(tmp_path, monkeypatch, home=qwen_home, workspace=workspace, load=False) as editor:
        install_terminus(editor.host, record)
        yield editor


def qwen_on_path(tmp_path: Path, cli: QwenCli) -> Path:
    """A bin folder with `qwen`, as `npm install -g` provides it."""
    bin_dir = tmp_path / "npm-bin"
    bin_dir.mkdir()
    script = bin_dir / "qwen"
    script.write_text(f'#!/bin/sh\nexec "{cli.node}" "{cli.entry}" "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return bin_dir


def terminus_tui(args: dict[str, Any], qwen_env: dict[str, str], cli: QwenCli, tmp_path: Path, tmux: str) -> TuiSession:
    """The terminal Terminus starts for these recorded `terminus_open`
    arguments: the command and folder the stand-in Terminus worked out from
    them (`"run"`: its variables expanded) and their variables, with the
    rig's environment (HOME, fake model) and `qwen` on PATH as npm installs it."""
    env = dict(qwen_env)
    env["PATH"] = f"{qwen_on_path(tmp_path, cli)}{os.pathsep}{env['PATH']}"
    env.update(TERMINUS_ENV)
    env.update(args["env"])
    ran = args["run"]
    return TuiSession(Command(cli.cache_dir, tuple(ran["cmd"])), Path(ran["cwd"]), env, tmux=tmux)


@pytest.mark.e2e
@pytest.mark.skipif(sys.platform != "linux", reason="replays Terminus's Linux command line")
def test_open_in_terminal_connects_the_real_cli(
    editor: Editor,
    record: Path,
    qwen_cli: QwenCli,
    tmux_bin: str,
    workspace: Path,
    qwen_env: dict[str, str],
    tmp_path: Path,
) -> None:
    host = editor.host
    lock = editor.load([workspace])
    (source := workspace / "main.py").write_text("print('hello')\n")
    view = host.user.open_file(source)

    host.user.run_command("qwen_open_terminal")
    host.wait_for(lambda: terminus_calls(record), timeout=WAIT)
    [args] = terminus_records(record)
    assert args["cwd"] == str(workspace)
    assert args["env"] == {
        "QWEN_CODE_IDE_SERVER_PORT": str(lock["port"]),
        "QWEN_CODE_IDE_WORKSPACE_PATH": str(workspace),
    }

    tui = terminus_tui(args, qwen_env, qwen_cli, tmp_path, tmux_bin)
    try:
        tui.start()
        tui.wait_ready(60)
        status = tui.ide_status()
        assert status.startswith("✓ Connected to Sublime Text"), f"{status!r}\n{tui.screen()}"
        host.wait_for(lambda: host.run_on_main(lambda: view.get_status("qwen_companion")) == "Qwen ● 1", timeout=WAIT)
    finally:
        tui.close()
    host.assert_no_errors()
