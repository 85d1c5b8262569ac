"""Paths crossing to a CLI in WSL, a container or over SSH (core/cli/path_maps.py):
every translation both ways, and every refusal. Pure string rules, so the
Windows ones run on any machine."""

from __future__ import annotations

import pytest

from qwencompanion_src.core.cli.path_maps import (
    PathMap,
    PathTranslator,
    parse_path_maps,
    windows_path_of_wsl,
    wsl_maps,
    wsl_path,
)

CONTAINER = PathTranslator([PathMap("/home/me/app", "/workspaces/app")], ["/home/me/app"], "posix")
WINDOWS = PathTranslator([PathMap("C:\\src\\App", "/workspaces/app")], ["C:\\src\\App"], "windows")


# --- containers and SSH: one map ---------------------------------------------


def test_a_container_path_maps_both_ways() -> None:
    assert CONTAINER.to_remote("/home/me/app/src/main.py") == "/workspaces/app/src/main.py"
    assert CONTAINER.to_local("/workspaces/app/src/main.py") == "/home/me/app/src/main.py"
    assert CONTAINER.to_remote("/home/me/app") == "/workspaces/app"
    assert CONTAINER.to_local("/workspaces/app") == "/home/me/app"
    assert CONTAINER.remote_folders() == ["/workspaces/app"]


@pytest.mark.parametrize("remote", [
    "/workspaces/app/../secret/key",      # `..` out of the root
    "/workspaces/application/x",          # a sibling whose name starts like the root
    "/workspaces",                        # the root's parent
    "/etc/passwd",                        # under no map
    "workspaces/app/x",                   # not absolute
])
def test_a_remote_path_outside_the_map_is_refused(remote: str) -> None:
    assert CONTAINER.to_local(remote) is None


@pytest.mark.parametrize("local", ["/home/me/other/x", "/home/me/app/../other/x", "/home/me/apple"])
def test_a_local_path_outside_the_folders_is_not_sent(local: str) -> None:
    assert CONTAINER.to_remote(local) is None


def test_a_map_outside_the_windows_folders_maps_nothing() -> None:
    # The map is wider than the window: only what is inside the window's folders crosses.
    translator = PathTranslator([PathMap("/home/me", "/remote-home")], ["/home/me/app"], "posix")
    assert translator.to_local("/remote-home/app/x") == "/home/me/app/x"
    assert translator.to_local("/remote-home/.ssh/id_rsa") is None
    assert translator.to_remote("/home/me/.ssh/id_rsa") is None


def test_the_innermost_map_wins() -> None:
    translator = PathTranslator(
        [PathMap("/home/me", "/mnt/home"), PathMap("/home/me/app", "/workspaces/app")], ["/home/me"], "posix"
    )
    assert translator.to_remote("/home/me/app/x") == "/workspaces/app/x"
    assert translator.to_remote("/home/me/notes") == "/mnt/home/notes"
    assert translator.to_local("/workspaces/app/x") == "/home/me/app/x"
    assert translator.to_local("/mnt/home/notes") == "/home/me/notes"


def test_posix_names_keep_their_case() -> None:
    assert CONTAINER.to_local("/Workspaces/app/x") is None
    assert CONTAINER.to_remote("/home/me/App/x") is None


# --- a Windows editor -------------------------------------------------------------


def test_windows_compares_ignoring_case_and_separator() -> None:
    assert WINDOWS.to_remote("c:\\SRC\\app\\Lib\\M.py") == "/workspaces/app/Lib/M.py"
    assert WINDOWS.to_remote("C:/src/App/x.py") == "/workspaces/app/x.py"
    assert WINDOWS.to_local("/workspaces/app/Lib/M.py") == "C:\\src\\App\\Lib\\M.py"


@pytest.mark.parametrize("remote", [
    "/workspaces/app/..\\..\\Windows\\system.ini",  # a POSIX name holding Windows separators
    "/workspaces/app/sub/..\\..\\..\\x",
    "/workspaces/app/D:\\x",                        # a drive inside a name
    "/workspaces/app/file.txt:stream",              # an alternate data stream
])
def test_a_remote_name_that_is_windows_syntax_is_refused(remote: str) -> None:
    assert WINDOWS.to_local(remote) is None


def test_a_remote_name_with_a_backslash_that_stays_inside_maps() -> None:
    # `a\b` is one POSIX name; on Windows it is a folder and a file, still inside.
    assert WINDOWS.to_local("/workspaces/app/a\\b.py") == "C:\\src\\App\\a\\b.py"


# --- WSL ------------------------------------------------------------------------


@pytest.mark.parametrize(("windows", "inside"), [
    ("C:\\Users\\me\\app", "/mnt/c/Users/me/app"),
    ("d:/code/x", "/mnt/d/code/x"),
    ("C:\\", "/mnt/c"),
    ("\\\\wsl$\\Ubuntu\\home\\me\\app", "/home/me/app"),
    ("\\\\wsl.localhost\\Ubuntu\\home\\me\\app", "/home/me/app"),
    ("\\\\WSL.LOCALHOST\\ubuntu\\home\\me", "/home/me"),
    ("\\\\wsl$\\Ubuntu", "/"),
])
def test_windows_paths_as_wsl_names_them(windows: str, inside: str) -> None:
    assert wsl_path(windows, "Ubuntu") == inside


@pytest.mark.parametrize("windows", [
    "\\\\wsl$\\Debian\\home\\me",          # another distribution's files
    "\\\\server\\share\\app",              # a network share
    "relative\\path",
])
def test_windows_paths_wsl_cannot_see_are_refused(windows: str) -> None:
    assert wsl_path(windows, "Ubuntu") is None


@pytest.mark.parametrize(("inside", "windows"), [
    ("/mnt/c/Users/me/app/x.py", "C:\\Users\\me\\app\\x.py"),
    ("/mnt/d", "D:\\"),
    ("/home/me/app/x.py", "\\\\wsl.localhost\\Ubuntu\\home\\me\\app\\x.py"),
])
def test_wsl_paths_as_windows_names_them(inside: str, windows: str) -> None:
    assert windows_path_of_wsl(inside, "Ubuntu") == windows


def test_wsl_maps_translate_a_windows_window_both_ways() -> None:
    folders = ["C:\\Users\\me\\app", "\\\\wsl$\\Ubuntu\\home\\me\\lib", "\\\\wsl$\\Debian\\srv"]
    translator = PathTranslator(wsl_maps(folders, "Ubuntu"), folders, "windows")
    assert translator.remote_folders() == ["/mnt/c/Users/me/app", "/home/me/lib"]
    assert translator.to_remote("c:\\users\\ME\\app\\a.py") == "/mnt/c/Users/me/app/a.py"
    assert translator.to_local("/mnt/c/Users/me/app/a.py") == "C:\\Users\\me\\app\\a.py"
    # The UNC folder's own spelling comes back, so the editor matches it to its tab.
    assert translator.to_local("/home/me/lib/b.py") == "\\\\wsl$\\Ubuntu\\home\\me\\lib\\b.py"
    assert translator.to_local("/mnt/c/Users/me/secret.txt") is None
    assert translator.to_local("/srv/x") is None  # Debian's folder is not this distribution's


# --- the setting -------------------------------------------------------------------


def test_parse_path_maps_keeps_good_entries_and_says_what_it_left_out() -> None:
    maps, problems = parse_path_maps([
        {"local": "/home/me/app", "remote": "/workspaces/app"},
        {"local": "relative", "remote": "/x"},
        {"local": "/home/me/b", "remote": "not/absolute"},
        "a string",
    ], "posix")
    assert maps == [PathMap("/home/me/app", "/workspaces/app")]
    assert [p.split(" ")[0] for p in problems] == ["path_maps[1]", "path_maps[2]", "path_maps[3]"]


def test_parse_path_maps_takes_windows_locals_on_windows() -> None:
    maps, problems = parse_path_maps([{"local": "C:\\src\\app", "remote": "/src/app"}], "windows")
    assert maps == [PathMap("C:\\src\\app", "/src/app")] and problems == []
    assert parse_path_maps({"local": "/a", "remote": "/b"}, "posix")[0] == []
