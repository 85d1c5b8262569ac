"""qwen's home directory computed as the CLI (Node) does, on every platform.

The platform is a parameter: the Windows rules are checked on any machine.
tests/e2e/test_qwen_home_cli.py checks the POSIX rules against the real CLI.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from qwencompanion_src.core.cli import qwen_home as qh
from qwencompanion_src.core.companion import lockfile

# Fakes Windows here; CI runs it on Windows too, where it must pass for real.
pytestmark = pytest.mark.real_platform("win32")


def _no_files(path: str) -> str:
    raise FileNotFoundError(path)


def _no_account() -> str:
    raise AssertionError("the account's home must not be needed when the variable is set")


def home(environ: dict[str, str], *, windows: bool, cwd: str = "/cwd", files: dict[str, str] | None = None) -> str:
    def read(path: str) -> str:
        if files is not None and path in files:
            return files[path]
        raise FileNotFoundError(path)

    return qh.qwen_home(environ, windows=windows, cwd=cwd, account_home=_no_account, read_text=read)


# --- which home directory -----------------------------------------------------


def test_windows_uses_userprofile_not_home() -> None:
    # MSYS2, Cygwin and Emacs set HOME; Node's os.homedir() ignores it on Windows.
    environ = {"HOME": "/c/Users/me", "USERPROFILE": "C:\\Users\\me"}
    assert home(environ, windows=True) == "C:\\Users\\me\\.qwen"


def test_windows_variable_names_ignore_case() -> None:
    assert home({"UserProfile": "D:\\u"}, windows=True) == "D:\\u\\.qwen"
    assert home({"USERPROFILE": "D:\\u", "qwen_home": "E:\\q"}, windows=True) == "E:\\q"


def test_posix_uses_home() -> None:
    assert home({"HOME": "/home/me", "USERPROFILE": "/nope"}, windows=False) == "/home/me/.qwen"


def test_posix_names_are_case_sensitive() -> None:
    assert home({"HOME": "/home/me", "qwen_home": "/q"}, windows=False) == "/home/me/.qwen"


@pytest.mark.parametrize("windows", [False, True])
def test_without_the_variable_the_account_home_is_used(windows: bool) -> None:
    flavour_home = "C:\\Users\\acct" if windows else "/home/acct"
    got = qh.qwen_home({}, windows=windows, cwd="/cwd", account_home=lambda: flavour_home, read_text=_no_files)
    assert got == flavour_home + ("\\.qwen" if windows else "/.qwen")


@pytest.mark.parametrize(
    ("windows", "environ", "expected"),
    [
        (False, {"HOME": "", "TMPDIR": "/var/tmp/"}, "/var/tmp/.qwen"),
        (False, {"HOME": ""}, "/tmp/.qwen"),
        (True, {"USERPROFILE": "", "TEMP": "C:\\Temp\\"}, "C:\\Temp\\.qwen"),
        (True, {"USERPROFILE": "", "SystemRoot": "C:\\Windows"}, "C:\\Windows\\temp\\.qwen"),
    ],
)
def test_an_empty_home_means_the_temporary_directory(windows: bool, environ: dict[str, str], expected: str) -> None:
    assert home(environ, windows=windows) == expected


# --- QWEN_HOME ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("windows", "value", "expected"),
    [
        (False, "/opt/qwen", "/opt/qwen"),
        (False, "/opt/x/../qwen/", "/opt/qwen"),
        (False, "~", "/home/me"),
        (False, "~/alt", "/home/me/alt"),
        (False, "~\\alt\\deep", "/home/me/alt/deep"),
        (False, "~//alt///deep/", "/home/me/alt/deep"),
        (False, "rel/dir", "/cwd/rel/dir"),
        (False, "~other", "/cwd/~other"),  # no ~user expansion
        (True, "D:\\qwen", "D:\\qwen"),
        (True, "D:/qwen/", "D:\\qwen"),
        (True, "~", "C:\\Users\\me"),
        (True, "~/alt", "C:\\Users\\me\\alt"),
        (True, "~\\alt\\deep", "C:\\Users\\me\\alt\\deep"),
        (True, "rel\\dir", "C:\\work\\rel\\dir"),
    ],
)
def test_qwen_home_is_expanded_and_resolved(windows: bool, value: str, expected: str) -> None:
    environ = {"USERPROFILE": "C:\\Users\\me", "HOME": "/c/Users/me"} if windows else {"HOME": "/home/me"}
    cwd = "C:\\work" if windows else "/cwd"
    assert home({**environ, "QWEN_HOME": value}, windows=windows, cwd=cwd) == expected


@pytest.mark.parametrize("windows", [False, True])
def test_an_empty_qwen_home_is_the_default_and_skips_the_env_files(windows: bool) -> None:
    environ = {"USERPROFILE": "C:\\u"} if windows else {"HOME": "/u"}
    env_file = "C:\\u\\.qwen\\.env" if windows else "/u/.qwen/.env"
    expected = "C:\\u\\.qwen" if windows else "/u/.qwen"
    assert home({**environ, "QWEN_HOME": ""}, windows=windows, files={env_file: "QWEN_HOME=/elsewhere"}) == expected


def test_lock_dir_expands_qwen_home_like_the_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert lockfile.lock_dir({"HOME": str(tmp_path), "QWEN_HOME": "~/alt"}) == tmp_path / "alt" / "ide"
    assert lockfile.lock_dir({"HOME": str(tmp_path), "QWEN_HOME": "rel"}) == tmp_path / "rel" / "ide"


def test_lock_dir_takes_qwen_home_from_the_home_env_file(tmp_path: Path) -> None:
    (tmp_path / ".qwen").mkdir()
    (tmp_path / ".qwen" / ".env").write_text("QWEN_HOME=~/from-file\n", encoding="utf-8")
    assert lockfile.lock_dir({"HOME": str(tmp_path)}) == tmp_path / "from-file" / "ide"


def test_is_relative() -> None:
    assert qh.is_relative("rel", windows=False)
    assert not qh.is_relative("/abs", windows=False)
    assert not qh.is_relative("~/x", windows=False)
    assert not qh.is_relative(None, windows=False)
    assert qh.is_relative("rel\\x", windows=True)
    assert not qh.is_relative("C:\\x", windows=True)


# --- QWEN_HOME from <home>/.qwen/.env and <home>/.env ---------------------------------


@pytest.mark.parametrize("windows", [False, True])
def test_the_env_files_are_read_when_the_variable_is_absent(windows: bool) -> None:
    sep = "\\" if windows else "/"
    root = "C:\\u" if windows else "/u"
    environ = {"USERPROFILE": root} if windows else {"HOME": root}
    qwen_env, home_env = f"{root}{sep}.qwen{sep}.env", f"{root}{sep}.env"
    assert home(environ, windows=windows, files={home_env: "QWEN_HOME=~/b"}) == f"{root}{sep}b"
    both = {qwen_env: "\ufeffexport QWEN_HOME: '~/a' # yaml style", home_env: "QWEN_HOME=~/b"}
    assert home(environ, windows=windows, files=both) == f"{root}{sep}a"
    empty_first = {qwen_env: "QWEN_HOME=", home_env: "QWEN_HOME=~/b"}
    assert home(environ, windows=windows, files=empty_first) == f"{root}{sep}b"
    assert home({**environ, "QWEN_HOME": "~/env"}, windows=windows, files=both) == f"{root}{sep}env"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("QWEN_HOME=/a", "/a"),
        ("  export   QWEN_HOME = /a  ", "/a"),
        ("QWEN_HOME=/a # comment", "/a"),
        ('QWEN_HOME="/a b" # comment', "/a b"),
        ("QWEN_HOME='/a#b'", "/a#b"),
        ("QWEN_HOME=`/a`", "/a"),
        ("QWEN_HOME=/first\nQWEN_HOME=/last", "/last"),
        ("# QWEN_HOME=/a\nOTHER=1", None),
        ("QWEN_HOMEX=/a", None),
    ],
)
def test_dotenv_value(text: str, expected: str | None) -> None:
    assert qh.dotenv_value(text, "QWEN_HOME") == expected
