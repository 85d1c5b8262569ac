"""File identity per platform style (core/paths.py). Resolving symlinks is
injected, so the Windows and macOS rules run on any machine."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from qwencompanion_src.core.diagnose import folder_inside
from qwencompanion_src.core.companion.diffs import path_key
from qwencompanion_src.core.paths import deepest_root, is_within, path_identity, path_style

# Fakes Windows and macOS here; CI runs it on Windows and macOS too, where it must pass for real.
pytestmark = [pytest.mark.real_platform("win32"), pytest.mark.real_platform("darwin")]


def same(path: str) -> str:
    return path


@pytest.mark.parametrize(
    ("platform", "style"),
    [("windows", "windows"), ("win32", "windows"), ("osx", "macos"), ("darwin", "macos"), ("linux", "posix")],
)
def test_path_style(platform: str, style: str) -> None:
    assert path_style(platform) == style


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("C:\\Users\\Me\\Proj\\a.py", "c:/users/me/proj/A.PY"),
        ("C:\\Users\\me\\proj\\..\\proj\\a.py", "C:\\Users\\me\\proj\\a.py"),
        ("\\\\server\\share\\Proj\\a.py", "//SERVER/share/proj/a.py"),
    ],
)
def test_windows_ignores_case_and_separators(a: str, b: str) -> None:
    assert path_identity(a, "windows", same) == path_identity(b, "windows", same)


def test_windows_drives_differ() -> None:
    assert path_identity("C:\\proj\\a.py", "windows", same) != path_identity("D:\\proj\\a.py", "windows", same)
    assert not is_within("D:\\proj\\a.py", "C:\\proj", "windows", same)
    assert is_within("c:\\PROJ\\src\\a.py", "C:\\proj", "windows", same)
    assert is_within("C:\\a.py", "C:\\", "windows", same)
    assert not is_within("C:\\project2\\a.py", "C:\\proj", "windows", same)


def test_macos_ignores_case_and_unicode_normalisation() -> None:
    nfd = "/Users/me/Cafe\u0301/a.py"
    nfc = "/users/ME/caf\u00e9/A.py"
    assert path_identity(nfd, "macos", same) == path_identity(nfc, "macos", same)
    assert path_identity("/a/B", "posix", same) != path_identity("/a/b", "posix", same)


def test_macos_private_symlinks_resolve_to_one_identity() -> None:
    def macos_realpath(path: str) -> str:  # /var, /tmp and /etc live in /private on macOS
        for link in ("/var", "/tmp", "/etc"):
            if path == link or path.startswith(link + "/"):
                return "/private" + path
        return path

    assert path_identity("/var/folders/x/Proj/a.py", "macos", macos_realpath) == path_identity(
        "/private/var/folders/x/proj/a.py", "macos", macos_realpath
    )
    assert is_within("/private/var/folders/x/proj/a.py", "/var/folders/x/Proj", "macos", macos_realpath)


def test_deepest_root() -> None:
    roots = ["C:\\work", "C:\\work\\Inner", "D:\\work"]
    assert deepest_root("c:\\WORK\\inner\\a.py", roots, "windows", same) == 1
    assert deepest_root("C:\\work\\a.py", roots, "windows", same) == 0
    assert deepest_root("E:\\a.py", roots, "windows", same) is None


def test_real_symlinks_on_this_machine(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    linked = str(tmp_path / "link" / "a.py")
    assert path_identity(linked) == path_identity(str(real / "a.py"))
    assert path_key(linked) == path_key(str(real / "a.py"))
    assert is_within(str(real / "a.py"), str(tmp_path / "link"))
    assert folder_inside(str(real / "sub"), [str(tmp_path / "link")])
    assert not is_within(str(tmp_path / "realish" / "a.py"), str(real))
    assert path_identity("rel.py") == os.path.join(os.path.realpath(os.getcwd()), "rel.py")
