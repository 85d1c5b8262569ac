"""A review finds its window and the user's open buffer by the file's
identity, not its spelling: the CLI sends physical paths (Node resolves
symlinks), Sublime keeps the spelling a folder or file was opened with."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.editor import Editor, open_editor

# Fakes Windows and macOS here; CI runs it on Windows and macOS too, where it must pass for real.
pytestmark = [pytest.mark.real_platform("win32"), pytest.mark.real_platform("darwin")]


@pytest.fixture(params=["linux", "osx", "windows"])
def editor(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Editor]:
    with open_editor(tmp_path, monkeypatch, platform=request.param) as editor:
        yield editor


def review_in_other_window(editor: Editor, folder_as_sublime_has_it: Path, file_as_user_opened: Path, file_as_cli_sends: Path) -> None:
    """Window 2 holds the folder and the user's unsaved edit; window 1 is active;
    the CLI proposes an edit of the file by its physical path."""
    user = editor.host.user
    second = user.new_window()
    user.set_folders([str(folder_as_sublime_has_it)], window=second)
    buffer = user.open_file(file_as_user_opened, window=second)
    user.click(buffer, buffer.size())
    user.type(buffer, "unsaved\n")
    user.focus_window(editor.window)

    original, proposed = editor.propose(editor.cli(), file_as_cli_sends, "on disk\nproposed\n", window=second)
    assert original.window() == second and proposed.window() == second
    assert editor.text(original) == "on disk\nunsaved\n"  # the user's buffer, not the disk
    assert "unsaved changes" in editor.phantom_html(proposed)
    editor.host.assert_no_errors()


def test_a_symlinked_project(editor: Editor, tmp_path: Path) -> None:
    real = tmp_path / "real" / "proj"
    real.mkdir(parents=True)
    (real / "a.py").write_text("on disk\n")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    linked = tmp_path / "link" / "proj"
    review_in_other_window(editor, linked, linked / "a.py", real / "a.py")


def test_private_var_and_another_case(editor: Editor, tmp_path: Path) -> None:
    if editor.host.app.platform == "linux":
        pytest.skip("Linux file systems tell the cases apart")
    # macOS: /var is a symlink to /private/var; the CLI's cwd is the physical path.
    real = tmp_path / "private" / "var" / "Proj"
    real.mkdir(parents=True)
    (real / "a.py").write_text("on disk\n")
    (tmp_path / "var").symlink_to(tmp_path / "private" / "var")
    spelled = tmp_path / "var" / "proj"  # as the user added it: /var, lower case
    review_in_other_window(editor, spelled, spelled / "A.py", real / "a.py")
