"""A review's left side, read from disk, shows the file as Sublime opens it:
files that are not UTF-8 (Windows 1252, GBK, the user's fallback encoding)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.editor import Editor, open_editor


@pytest.fixture
def editor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Editor]:
    with open_editor(tmp_path, monkeypatch) as editor:
        yield editor


def left_side_and_opened(editor: Editor, path: Path, proposal: str) -> tuple[str, str]:
    """The review's left side (the file closed), then the text Sublime shows opening it."""
    original, _ = editor.propose(editor.cli(), path, proposal)
    left = editor.text(original)
    opened = editor.host.user.open_file(path)
    return left, editor.text(opened)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ("prix: 5 €, café\n".encode("cp1252"), "prix: 5 €, café\n"),
        # Sublime has no GBK: it opens in Windows 1252, and so must the left side (no U+FFFD).
        ("名字 = 1\n".encode("gbk"), "Ãû×Ö = 1\n"),
    ],
)
def test_a_file_that_is_not_utf8_shows_as_sublime_opens_it(editor: Editor, data: bytes, expected: str) -> None:
    path = editor.workspace / "legacy.txt"
    path.write_bytes(data)
    left, opened = left_side_and_opened(editor, path, "new\n")
    assert left == opened == expected
    assert "\ufffd" not in left
    editor.host.assert_no_errors()


def test_the_users_fallback_encoding_is_used(editor: Editor) -> None:
    editor.host.sublime.load_settings("Preferences.sublime-settings").set("fallback_encoding", "Cyrillic (Windows 1251)")
    path = editor.workspace / "notes.txt"
    path.write_bytes("привет\n".encode("cp1251"))
    left, opened = left_side_and_opened(editor, path, "привет, мир\n")
    assert left == opened == "привет\n"
    editor.host.assert_no_errors()


def test_a_changed_fallback_encoding_applies_to_the_next_review(editor: Editor) -> None:
    data = "привет\n".encode("cp1251")
    (editor.workspace / "before.txt").write_bytes(data)
    (editor.workspace / "after.txt").write_bytes(data)
    before, _ = editor.propose(editor.cli(), editor.workspace / "before.txt", "one\n")
    assert editor.text(before) == "ïðèâåò\n"  # Windows 1252, the default
    editor.host.sublime.load_settings("Preferences.sublime-settings").set("fallback_encoding", "Cyrillic (Windows 1251)")
    after, _ = editor.propose(editor.cli(), editor.workspace / "after.txt", "two\n")
    assert editor.text(after) == "привет\n"
    editor.host.assert_no_errors()
