"""The privacy filter as git pathspecs: git, given them, leaves out exactly
the files `ContextOptions.excludes` does (asked of a real git's listing of
a tree of awkward names), or the translation says None."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from qwencompanion_src.core.context_rules import DEFAULT_EXCLUDED_PATTERNS, ContextOptions
from qwencompanion_src.core.ide_tools.privacy_pathspecs import excluding_pathspecs

NAMES = [
    ".env", "a/.env", "v/.env/lib/site.py", "a/.env.local", ".env.d/conf", "A/.ENV", "a/b.env",
    "x/id_rsa", "id_rsa.pub", "id_rsa_dir/file.txt", "ID_RSA", "keys/x.pem", "K/Y.Pem", "x.pem/inside.txt",
    "a/b.KEY", "a/b.\u212aEY", "a/b.\u212aey.txt", "conf\u0130g.txt", "secrets/a.txt", "deep/private/b.txt",
    "main.py", "env", "my.env", "notes.netrc", ".netrc", "sub/.pgpass", "\u00dcn\u00ef/\u00c4B.PEM", "repo.txt",
    "x/secret.txt", "secret.txt/inside.txt",
]


def listed(repo: Path, folder: Path, specs: list[str]) -> set[str]:
    out = subprocess.run(["git", "-C", str(folder), "ls-files", "-c", "-z", "--", ".", *specs],
                         check=True, capture_output=True).stdout
    return {name for name in out.decode("utf-8", "surrogateescape").split("\0") if name}


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("privacy") / "Repo"
    for name in NAMES:
        path = folder / "sub" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x\n")
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    subprocess.run(["git", "-C", str(folder), "add", "-A"], check=True)
    return folder


@pytest.mark.skipif(shutil.which("git") is None or sys.platform == "win32", reason="needs git and POSIX names")
@pytest.mark.parametrize("patterns", [
    DEFAULT_EXCLUDED_PATTERNS,
    ("secrets/*", "*/private/*", "*.key", "confi*"),
    ("*repo*",),  # the folder's own path matches: everything is excluded
    ("*/sub/x/*", "*secret.txt"),
    ("env", "*.env", "id_rsa*"),
])
def test_git_leaves_out_exactly_what_the_filter_excludes(repo: Path, patterns: tuple[str, ...]) -> None:
    privacy = ContextOptions(excluded_patterns=patterns)
    for folder in (repo, repo / "sub", repo / "sub" / "v"):  # the repository, or a folder inside one
        specs = excluding_pathspecs(patterns, str(folder))
        assert specs is not None
        everything = listed(repo, folder, [])
        kept = listed(repo, folder, specs)
        assert kept == {name for name in everything if not privacy.excludes(str(folder / name))}


@pytest.mark.skipif(shutil.which("git") is None or sys.platform == "win32", reason="needs git and POSIX names")
def test_an_absolute_pattern_is_matched_in_the_folders_part_here(repo: Path) -> None:
    patterns = (f"{repo}/sub/x/*", f"{repo}/sub/main.py")
    privacy = ContextOptions(excluded_patterns=patterns)
    specs = excluding_pathspecs(patterns, str(repo))
    assert specs is not None
    kept = listed(repo, repo, specs)
    assert "sub/main.py" not in kept and "sub/x/id_rsa" not in kept and "sub/x/secret.txt" not in kept
    assert kept == {name for name in listed(repo, repo, []) if not privacy.excludes(str(repo / name))}


@pytest.mark.parametrize("patterns", [("*.k?y",), ("[ab].env",), ("caf\u00e9*",), ("k" * 5,)])
def test_what_git_cannot_be_told_exactly_is_not_translated(patterns: tuple[str, ...], tmp_path: Path) -> None:
    assert excluding_pathspecs(patterns, str(tmp_path)) is None
