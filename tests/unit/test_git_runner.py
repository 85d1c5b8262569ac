"""Every git call of the package goes through the hardened runner
(core/git.py), and nothing a hostile repository holds runs when the package
asks git what changed: its fsmonitor, textconv and diff.external commands,
its clean and smudge filters, its hooks, nor a repository layout an agent
planted in a plain folder."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from qwencompanion_src.core import git as git_runner
from qwencompanion_src.core.chat.prompts.git_index import index_text
from qwencompanion_src.core.chat.prompts.mention_tools import MentionError, git_diff

PACKAGE = Path(__file__).resolve().parents[2] / "QwenCompanion.sublime-package-src"
RUNNER = PACKAGE / "core" / "git.py"
GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None or sys.platform == "win32", reason="needs git and POSIX shell scripts")

# --- the only place that starts git ------------------------------------------------------------

_PROCESS_STARTS = {"Popen", "run", "call", "check_call", "check_output", "create_subprocess_exec",
                   "create_subprocess_shell", "system", "popen", "execv", "execvp", "execve", "spawnv",
                   "spawnvp", "startfile"}


def _package_sources() -> Iterator[Path]:
    for path in sorted(PACKAGE.rglob("*.py")):
        if "vendor" not in path.relative_to(PACKAGE).parts:
            yield path


def _names_git(node: ast.AST) -> bool:
    """Does this expression name the git program (a string "git", a path
    ending in git or git.exe)?"""
    for each in ast.walk(node):
        if (isinstance(each, ast.Constant) and isinstance(each.value, str)
                and os.path.basename(each.value.strip().lower()) in ("git", "git.exe")):
            return True
    return False


def git_starts_outside_the_runner(sources: Iterator[Path]) -> list[str]:
    """Every place outside core/git.py that names the git program, or hands
    a process start an argument list that could be git's."""
    found = []
    for path in sources:
        if path == RUNNER:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        shown = path.relative_to(PACKAGE) if path.is_relative_to(PACKAGE) else path
        for node in ast.walk(tree):
            if _names_git(node) and isinstance(node, ast.Constant):
                found.append(f"{shown}:{node.lineno} names git")
            if isinstance(node, ast.Call):
                called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if called in _PROCESS_STARTS and any(_names_git(a) for a in node.args):
                    found.append(f"{shown}:{node.lineno} starts git")
    return found


def test_no_module_but_the_runner_names_or_starts_git() -> None:
    assert git_starts_outside_the_runner(_package_sources()) == []


def test_the_scan_finds_a_git_call_that_bypasses_the_runner(tmp_path: Path) -> None:
    bypass = tmp_path / "bypass.py"
    bypass.write_text('import shutil, subprocess\nsubprocess.run([shutil.which("git"), "status"])\n')
    assert len(git_starts_outside_the_runner(iter([bypass]))) >= 1


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every argument list the package hands subprocess.Popen while the test runs."""
    argvs: list[list[str]] = []
    real_popen = subprocess.Popen

    def recording(argv: Any, *args: Any, **kwargs: Any) -> Any:
        argvs.append([str(a) for a in argv])
        return real_popen(argv, *args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", recording)
    return argvs


def assert_all_hardened(argvs: list[list[str]]) -> None:
    gits = [argv for argv in argvs if os.path.basename(argv[0]).lower() in ("git", "git.exe")]
    assert gits, "git never ran"
    for argv in gits:
        assert argv[1:1 + len(git_runner.HARDENED_OPTIONS)] == list(git_runner.HARDENED_OPTIONS), argv
        if "diff" in argv:
            assert {"--no-textconv", "--no-ext-diff", "--ignore-submodules=dirty"} <= set(argv), argv


# --- a hostile repository -------------------------------------------------------------------------


def git(folder: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                   check=True, capture_output=True)


def committed_repo(folder: Path, name: str, text: str) -> None:
    """A repository in `folder` whose one commit holds `name` with `text`."""
    folder.mkdir(exist_ok=True)
    git(folder, "init", "-q")
    (folder / name).write_text(text)
    git(folder, "add", name)
    git(folder, "commit", "-q", "-m", "first")


def marker_script(folder: Path, name: str) -> str:
    """An executable that leaves `<folder>/ran-<name>` and passes its input through."""
    script = folder / f"{name}.sh"
    script.write_text(f'#!/bin/sh\ntouch "{folder}/ran-{name}"\ncat\n')
    script.chmod(0o755)
    return str(script)


def ran(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("ran-*"))


Plant = Callable[[Path, Path], list[str]]  # (repository, scripts' folder) -> raw git args that run it


def plant_fsmonitor(repo: Path, scripts: Path) -> list[str]:
    git(repo, "config", "core.fsmonitor", marker_script(scripts, "fsmonitor"))
    return ["status"]


def plant_textconv(repo: Path, scripts: Path) -> list[str]:
    (repo / ".gitattributes").write_text("*.txt diff=evil\n")
    git(repo, "config", "diff.evil.textconv", marker_script(scripts, "textconv"))
    return ["diff", "HEAD"]


def plant_external_diff(repo: Path, scripts: Path) -> list[str]:
    git(repo, "config", "diff.external", marker_script(scripts, "external"))
    return ["diff", "HEAD"]


def plant_clean_filter(repo: Path, scripts: Path) -> list[str]:
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "attributes").write_text("*.txt filter=evil\n")
    git(repo, "config", "filter.evil.clean", marker_script(scripts, "clean"))
    git(repo, "config", "filter.evil.smudge", marker_script(scripts, "smudge"))
    git(repo, "config", "filter.evil.required", "true")
    return ["diff", "HEAD"]


def plant_filter_named_with_an_equals_sign(repo: Path, scripts: Path) -> list[str]:
    """`-c filter.a=b.clean=` would set `filter.a` to `b.clean=`: the driver must still be emptied."""
    (repo / ".gitattributes").write_text("*.txt filter=evil=x\n")
    (repo / ".git" / "config").write_text((repo / ".git" / "config").read_text()
                                          + f'[filter "evil=x"]\n\tclean = {marker_script(scripts, "clean")}\n')
    return ["diff", "HEAD"]


def plant_hooks(repo: Path, scripts: Path) -> list[str]:
    # The index holds the file's text, so a refresh after a stat change always
    # writes the index and runs post-index-change. With the text differing, it
    # wrote it only while the entry was racily clean: file and commit in one second.
    git(repo, "add", "a.txt")
    for hook in ("post-index-change", "reference-transaction", "pre-commit", "post-checkout"):
        shutil.copy(marker_script(scripts, hook), repo / ".git" / "hooks" / hook)
    return ["update-index", "--refresh"]


@pytest.fixture
def hostile_repo(tmp_path: Path) -> tuple[Path, Path]:
    repo, scripts = tmp_path / "repo", tmp_path / "scripts"
    scripts.mkdir()
    committed_repo(repo, "a.txt", "one\n")
    (repo / "a.txt").write_text("one\ntwo\n")
    os.utime(repo / "a.txt", (1, 1))  # stat differs from the index: git must read the file again
    return repo, scripts


@needs_git
@pytest.mark.parametrize("plant", [plant_fsmonitor, plant_textconv, plant_external_diff, plant_clean_filter,
                                   plant_filter_named_with_an_equals_sign, plant_hooks], ids=lambda p: p.__name__)
def test_diff_and_keep_run_nothing_of_a_hostile_repository(plant: Plant, hostile_repo: tuple[Path, Path],
                                                           started: list[list[str]]) -> None:
    repo, scripts = hostile_repo
    raw = plant(repo, scripts)
    os.utime(repo / "a.txt", (2, 2))
    subprocess.run(["git", "-C", str(repo), *raw], capture_output=True, check=False)
    assert ran(scripts), "the planted command does not run with a plain git call: the test proves nothing"
    for marker in scripts.glob("ran-*"):
        marker.unlink()
    started.clear()
    os.utime(repo / "a.txt", (3, 3))
    root, diff, _, _ = git_diff(str(repo))
    assert "+two" in diff and os.path.samefile(root, repo)
    assert index_text(str(repo / "a.txt"), GIT) is not None
    assert ran(scripts) == []
    assert_all_hardened(started)


@needs_git
def test_a_repository_layout_planted_in_a_plain_folder_is_not_a_repository(tmp_path: Path,
                                                                          started: list[list[str]]) -> None:
    """Finding 1: sub/HEAD, sub/config (not bare, worktree ".", an fsmonitor),
    sub/objects/, sub/refs/ and sub/notes.md; @diff from sub runs nothing."""
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    sub = tmp_path / "work" / "sub"
    (sub / "objects").mkdir(parents=True)
    (sub / "refs" / "heads").mkdir(parents=True)
    (sub / "HEAD").write_text("ref: refs/heads/main\n")
    (sub / "config").write_text(
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n"
        f"\tfsmonitor = {marker_script(scripts, 'fsmonitor')}\n"
    )
    (sub / "notes.md").write_text("notes\n")
    subprocess.run(["git", "-C", str(sub), "status"], capture_output=True, check=False)
    assert ran(scripts), "plain git takes the planted layout for a repository: the test proves nothing"
    (scripts / "ran-fsmonitor").unlink()
    started.clear()
    with pytest.raises(MentionError, match="not in a git repository"):
        git_diff(str(sub))
    assert index_text(str(sub / "notes.md"), GIT) is None
    assert ran(scripts) == []
    assert_all_hardened(started)


@needs_git
def test_a_submodules_own_filter_does_not_run(hostile_repo: tuple[Path, Path], started: list[list[str]]) -> None:
    """A submodule's configuration is its own (`sub/.git/config`): the runner
    empties the drivers the superproject's configuration names, not the
    submodule's. `git diff` asks every submodule whether its files changed,
    which runs that submodule's clean filter on a file whose stat changed."""
    repo, scripts = hostile_repo
    sub = repo / "sub"
    committed_repo(sub, "b.txt", "x\n")
    git(sub, "config", "filter.evil.clean", marker_script(scripts, "clean"))
    (sub / ".git" / "info").mkdir(exist_ok=True)
    (sub / ".git" / "info" / "attributes").write_text("*.txt filter=evil\n")
    git(repo, "add", "sub")
    git(repo, "commit", "-q", "-m", "with sub")

    def touch_same_size() -> None:  # the content must be read again to know it changed
        (sub / "b.txt").write_text("z\n")
        os.utime(sub / "b.txt", (os.stat(sub / "b.txt").st_mtime + 5,) * 2)

    touch_same_size()
    subprocess.run(["git", "-C", str(repo), "diff", "HEAD"], capture_output=True, check=False)
    assert ran(scripts) == ["ran-clean"], "plain git runs no filter of the submodule: the test proves nothing"
    (scripts / "ran-clean").unlink()
    started.clear()
    touch_same_size()
    git_diff(str(repo))
    assert ran(scripts) == []
    assert_all_hardened(started)


# --- the diff stays inside the window's folders -----------------------------------------------------


@needs_git
def test_a_folder_inside_a_larger_repository_diffs_only_its_own_part(tmp_path: Path) -> None:
    """A window folder `proj` inside a repository (a home folder kept in git):
    the sibling `proj-other`'s changes are never sent."""
    git(tmp_path, "init", "-q")
    for name in ("proj", "proj-other"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "a.txt").write_text("one\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "first")
    for name in ("proj", "proj-other"):
        (tmp_path / name / "a.txt").write_text(f"changed in {name}\n")
        (tmp_path / name / "new.txt").write_text("new\n")
    _, diff, untracked, _ = git_diff(str(tmp_path / "proj"), boundary=str(tmp_path / "proj"))
    assert "changed in proj\n" in diff and "proj-other" not in diff
    assert untracked == ["proj/new.txt"]
    _, whole, _, _ = git_diff(str(tmp_path / "proj"))  # no boundary: the whole repository
    assert "proj-other" in whole


@needs_git
def test_a_repository_reached_through_a_link_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    git(outside, "init", "-q")
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "link").symlink_to(outside, target_is_directory=True)
    with pytest.raises(MentionError, match="outside the window's folder"):
        git_diff(str(tmp_path / "proj" / "link"), boundary=str(tmp_path / "proj"))
