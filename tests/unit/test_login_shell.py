"""Open in Terminal on macOS runs qwen through the user's login shell, and
Diagnose asks that shell where qwen is (core/login_shell.py, core/cli/terminal.py)."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest

from qwencompanion_src.core.cli.node_installs import qwen_command_suggestion
from qwencompanion_src.core.cli.terminal import TerminalOptions, login_shell_argv, terminus_args
from qwencompanion_src.core.diagnose import CliProbe, problems
from qwencompanion_src.core.login_shell import probe_cli_in_login_shell

from .test_diagnose import healthy

# Fakes macOS here; CI runs it on macOS too, where it must pass for real.
pytestmark = pytest.mark.real_platform("darwin")

BASH = shutil.which("bash")
needs_bash = pytest.mark.skipif(BASH is None, reason="needs bash")


def test_login_shell_argv() -> None:
    assert login_shell_argv("/bin/zsh", "qwen --approval-mode default") == [
        "/bin/zsh", "-l", "-i", "-c", "qwen --approval-mode default",
    ]
    assert login_shell_argv("/opt/homebrew/bin/fish", ["/My Apps/qwen", "-y"]) == [
        "/opt/homebrew/bin/fish", "-l", "-i", "-c", "'/My Apps/qwen' -y",
    ]
    assert login_shell_argv("/bin/tcsh", "qwen") is None  # -l must be tcsh's only flag
    assert login_shell_argv("zsh", "qwen") is None  # not a path
    assert login_shell_argv(None, "qwen") is None


def _args(command: str | list[str], shell: str | None) -> dict[str, object]:
    return terminus_args(window_id=1, port=2, workspace_path="/w", cwd="/w",
                         options=TerminalOptions(command=command), login_shell=shell)


def test_terminus_runs_the_command_through_the_login_shell() -> None:
    args = _args("qwen", "/bin/zsh")
    assert args["cmd"] == ["/bin/zsh", "-l", "-i", "-c", "qwen"] and "shell_cmd" not in args
    assert _args(["/u/.nvm/bin/qwen"], "/bin/zsh")["cmd"] == ["/bin/zsh", "-l", "-i", "-c", "/u/.nvm/bin/qwen"]
    # Without one (Linux, Windows) or with a shell that cannot: Terminus's own rules.
    assert _args("qwen", None)["shell_cmd"] == "qwen"
    assert _args("qwen", "/bin/tcsh")["shell_cmd"] == "qwen"
    assert _args(["qwen", "-y"], None)["cmd"] == ["qwen", "-y"]


def _home_with_profile(tmp_path: Path) -> tuple[Path, Path]:
    """A HOME whose ~/.bash_profile (read by login shells only) puts a qwen on PATH."""
    home = tmp_path / "home"
    bin_dir = home / "tools" / "bin"
    bin_dir.mkdir(parents=True)
    qwen = bin_dir / "qwen"
    qwen.write_text('#!/bin/sh\necho "0.24.4 ($QWEN_CODE_NO_RELAUNCH)"\n')
    qwen.chmod(qwen.stat().st_mode | stat.S_IXUSR)
    (home / ".bash_profile").write_text(f'echo "welcome, noisy profile"\nexport PATH="{bin_dir}:$PATH"\n')
    return home, qwen


@needs_bash
def test_the_login_shell_finds_what_its_profile_adds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, qwen = _home_with_profile(tmp_path)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert BASH is not None
    assert probe_cli_in_login_shell("qwen", BASH) == CliProbe("qwen", str(qwen), version="0.24.4 (true)")
    assert shutil.which("qwen") is None  # Sublime's own PATH lacks it

    (home / ".bash_profile").write_text("")
    missing = probe_cli_in_login_shell("qwen", BASH)
    assert missing is not None and missing.path is None and missing.error == f"not found by {BASH} -l -i"


def test_a_shell_that_takes_no_login_flags_is_not_asked() -> None:
    assert probe_cli_in_login_shell("qwen", "/bin/tcsh") is None


def test_the_suggestion_names_node_and_qwen(tmp_path: Path) -> None:
    old = tmp_path / ".nvm" / "versions" / "node" / "v9.11.2" / "bin"
    new = tmp_path / ".nvm" / "versions" / "node" / "v22.1.0" / "bin"
    for folder in (old, new):
        folder.mkdir(parents=True)
        (folder / "node").write_text("")
        (folder / "node").chmod(0o755)
    package = tmp_path / ".nvm" / "versions" / "node" / "v22.1.0" / "lib" / "cli.js"
    package.parent.mkdir(parents=True)
    package.write_text("")
    (new / "qwen").symlink_to(package)
    (old / "qwen").write_text("")
    assert qwen_command_suggestion(str(tmp_path)) == [str(new / "node"), str(package)]


def test_diagnose_says_what_to_set() -> None:
    nowhere = CliProbe("qwen", None, error="not found on PATH")
    found_by_shell = healthy(cli=nowhere, login_shell="/bin/zsh", shell_cli=CliProbe("qwen", "/u/bin/qwen", version="0.24.4"))
    assert problems(found_by_shell) == []  # Open in Terminal finds it through the shell

    lost = healthy(cli=nowhere, login_shell="/bin/zsh", shell_cli=CliProbe("qwen", None, error="not found by /bin/zsh -l -i"),
                   suggested_command=["/u/.nvm/versions/node/v22/bin/node", "/u/lib/cli.js"])
    [sentence] = problems(lost)
    assert sentence.startswith("`qwen` is not on Sublime Text's PATH; your login shell (/bin/zsh -l -i, which Open in "
                               "Terminal uses) does not find it either (not found by /bin/zsh -l -i).")
    assert 'Set "qwen_command": ["/u/.nvm/versions/node/v22/bin/node", "/u/lib/cli.js"]' in sentence

    unknown = healthy(cli=nowhere, login_shell="/bin/zsh", shell_cli=CliProbe("qwen", None, error="not found by /bin/zsh -l -i"))
    assert "load nvm in ~/.zprofile" in problems(unknown)[0]
