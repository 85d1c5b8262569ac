"""File identity per platform style (core/files/paths.py). Resolving symlinks is
injected, so the Windows and macOS rules run on any machine."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from qwencompanion_src.core.diagnose import folder_inside
from qwencompanion_src.core.files.paths import deepest_root, is_within, path_identity, path_style
from qwencompanion_src.core.reviews import path_key

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


# --- display_path: what a person reads ---------------------------------------

from qwencompanion_src.core.files.paths import display_path  # noqa: E402


@pytest.mark.parametrize(
    ("path", "folders", "style", "shown"),
    [
        ("/home/me/proj/src/a.py", ["/home/me/proj"], "posix", "src/a.py"),
        ("/home/me/proj/src/a.py", ["/home/me/proj/"], "posix", "src/a.py"),
        ("/home/me/project2/a.py", ["/home/me/proj"], "posix", "/home/me/project2/a.py"),
        ("/home/me/Proj/a.py", ["/home/me/proj"], "posix", "/home/me/Proj/a.py"),  # Linux: case matters
        ("/Users/Me/Proj/Src/a.py", ["/users/me/proj"], "macos", "Src/a.py"),  # macOS ignores case
        ("C:\\Users\\Me\\Proj\\src\\a.py", ["c:/users/me/proj"], "windows", "src\\a.py"),
        ("c:/users/me/proj/src/a.py", ["C:\\Users\\Me\\Proj"], "windows", "src\\a.py"),
        ("D:\\Proj\\a.py", ["C:\\Proj"], "windows", "D:\\Proj\\a.py"),  # another drive: outside
        ("\\\\server\\share\\proj\\a.py", ["//SERVER/share/proj"], "windows", "a.py"),
        ("/home/me/proj", ["/home/me/proj"], "posix", "."),
        ("/tmp/x.py", [], "posix", "/tmp/x.py"),
        ("untitled", ["/home/me/proj"], "posix", "untitled"),  # a tab's name, not resolved against the cwd
        ("proj\\a.py", ["C:\\proj"], "windows", "proj\\a.py"),
    ],
)
def test_display_path_is_relative_inside_the_folder_and_absolute_outside(
        path: str, folders: list[str], style: str, shown: str) -> None:
    assert display_path(path, folders, style, same) == shown  # type: ignore[arg-type]


def test_with_several_folders_the_innermost_names_itself() -> None:
    folders = ["/home/me/proj", "/home/me/proj/lib", "/srv/other"]
    assert display_path("/home/me/proj/lib/b.py", folders, "posix", same) == "lib/b.py"
    assert display_path("/home/me/proj/a.py", folders, "posix", same) == "proj/a.py"
    assert display_path("/srv/other/c.py", folders, "posix", same) == "other/c.py"


def test_a_physical_path_is_shown_relative_to_the_symlinked_folder() -> None:
    links = {"/var/proj": "/private/var/proj"}

    def resolve(path: str) -> str:
        return next((real + path[len(link):] for link, real in links.items() if path.startswith(link)), path)

    assert display_path("/private/var/proj/src/a.py", ["/var/proj"], "macos", resolve) == "src/a.py"


def test_a_tabs_name_is_not_taken_for_a_file_in_the_working_folder() -> None:
    def from_cwd(path: str) -> str:  # os.path.realpath with the working folder inside the project
        return path if path.startswith("/") else "/home/me/proj/sub/" + path

    assert display_path("untitled", ["/home/me/proj"], "posix", from_cwd) == "untitled"
