"""A file's text in git's index (core/chat/prompts/git_index.py), which Keep gives a
view of a repository's file as its reference."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from qwencompanion_src.core.chat.prompts.git_index import index_text

GIT = shutil.which("git")
pytestmark = pytest.mark.skipif(GIT is None, reason="git is not installed")


def git(folder: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                   check=True, capture_output=True)


def test_the_staged_text_of_a_file_in_a_sub_folder(tmp_path: Path) -> None:
    (tmp_path / "sub dir").mkdir()
    nested = tmp_path / "sub dir" / "-odd:name.txt"  # a leading dash and a colon are no options or revisions
    nested.write_bytes(b"caf\xc3\xa9\r\nstaged\r\n")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "--", "sub dir/-odd:name.txt")
    nested.write_bytes(b"changed since\n")
    assert index_text(str(nested), GIT) == "café\nstaged\n"


def test_no_text_outside_a_repository_or_its_index_or_without_git(tmp_path: Path) -> None:
    loose = tmp_path / "loose.txt"
    loose.write_text("x\n")
    assert index_text(str(loose), GIT) is None  # not in a repository
    git(tmp_path, "init", "-q")
    assert index_text(str(loose), GIT) is None  # not in its index
    assert index_text(str(loose), None) is None
    assert index_text(str(tmp_path / "gone" / "x.txt"), GIT) is None
