"""Worktrees a chat's agent works in (core/worktrees/worktrees.py), against real git in
temporary repositories: made on a qwen/ branch outside the project, every
refusal leaves nothing behind, a discard leaves no branch and no folder, and
checking out a hostile repository runs none of its hooks or filters."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from qwencompanion_src.core.worktrees import worktrees
from qwencompanion_src.core.worktrees.worktrees import Worktree, WorktreeRefused
from tests.unit import test_git_runner
from tests.unit.test_git_runner import assert_all_hardened, marker_script, ran

pytestmark = pytest.mark.skipif(shutil.which("git") is None or sys.platform == "win32",
                                reason="needs git and POSIX shell scripts")


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@t",
                           "-c", "protocol.file.allow=always", *args],
                          check=True, capture_output=True, text=True).stdout


def branches(repo: Path) -> list[str]:
    return git(repo, "branch", "--format=%(refname:short)").split()


started = test_git_runner.started  # every argument list handed subprocess.Popen


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    git(folder, "init", "-q", "-b", "main")
    (folder / "a.txt").write_text("one\n")
    git(folder, "add", "a.txt")
    git(folder, "commit", "-q", "-m", "first")
    return folder


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "worktrees"


def state_of(repo: Path) -> tuple[str, str, str, list[str]]:
    """What the user has: status, the index, HEAD and the branches."""
    return git(repo, "status", "--porcelain"), git(repo, "ls-files", "-s"), git(repo, "rev-parse", "HEAD"), branches(repo)


def test_a_worktree_is_a_new_branch_at_head_in_a_folder_outside_the_project(repo: Path, store: Path) -> None:
    (repo / "a.txt").write_text("the user's unsaved work\n")
    before = state_of(repo)
    (repo / "sub").mkdir()
    made = worktrees.create(str(repo / "sub"), "fix-login", str(store))  # from a folder inside the repository
    assert made.branch == "qwen/fix-login" and made.name == "fix-login"
    assert Path(made.path).parent == Path(worktrees.repository_folder(str(store), str(repo)))
    assert Path(made.path).is_relative_to(store) and not Path(made.path).is_relative_to(repo)
    assert (Path(made.path) / "a.txt").read_text() == "one\n"
    assert git(Path(made.path), "rev-parse", "HEAD") == git(repo, "rev-parse", "HEAD")
    assert state_of(repo) == (before[0], before[1], before[2], sorted([*before[3], "qwen/fix-login"]))
    assert worktrees.listed(str(repo), str(store)) == [made]


def test_two_repositories_of_one_name_get_folders_of_their_own(tmp_path: Path, store: Path) -> None:
    one, other = tmp_path / "a" / "project", tmp_path / "b" / "project"
    assert worktrees.repository_folder(str(store), str(one)) != worktrees.repository_folder(str(store), str(other))


@pytest.mark.parametrize("name", ["", "a b", "-x", "../up", "a..b", "x.lock", "ends.", "semi;colon", "ü",
                                  "n" * 41, "con", "a/b", "@{x}"])
def test_an_invalid_name_is_refused_and_nothing_is_made(repo: Path, store: Path, name: str) -> None:
    before = state_of(repo)
    with pytest.raises(WorktreeRefused):
        worktrees.create(str(repo), name, str(store))
    assert state_of(repo) == before and not store.exists()


def test_every_accepted_name_makes_a_branch_git_accepts() -> None:
    """create() runs no `git check-ref-format`: name_problem alone keeps out what git would refuse.
    Every name of up to three of the characters allowed (and the ".lock" cases), the longest, and
    names that only look like devices, each asked of git."""
    letters = "a9._-"
    names = [*("".join(chars) for length in (1, 2, 3) for chars in itertools.product(letters, repeat=length)),
             "x.lock", "x.locks", "x.lock.y", "a.-_b", "A" * 40, "conx", "com0", "lpt10", "nul-1"]
    accepted = [name for name in names if worktrees.name_problem(name) is None]
    assert len(accepted) > 50
    refused = [name for name in accepted if subprocess.run(
        ["git", "check-ref-format", "--branch", worktrees.BRANCH_PREFIX + name], check=False,
        capture_output=True).returncode]
    assert refused == []


def test_a_folder_that_is_no_repository_is_refused(tmp_path: Path, store: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(WorktreeRefused, match="not in a git repository"):
        worktrees.create(str(plain), "task", str(store))
    assert not store.exists()


def test_a_repository_without_a_commit_is_refused(tmp_path: Path, store: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    with pytest.raises(WorktreeRefused, match="no commit yet"):
        worktrees.create(str(empty), "task", str(store))
    assert not store.exists() and branches(empty) == []


def test_a_name_whose_branch_exists_is_refused_whatever_its_case(repo: Path, store: Path) -> None:
    git(repo, "branch", "qwen/Task")
    before = state_of(repo)
    with pytest.raises(WorktreeRefused, match="already exists"):
        worktrees.create(str(repo), "task", str(store))
    assert state_of(repo) == before and not store.exists()


def test_a_name_whose_folder_exists_is_refused(repo: Path, store: Path) -> None:
    taken = Path(worktrees.repository_folder(str(store), str(repo))) / "Task"
    taken.mkdir(parents=True)
    (taken / "notes.txt").write_text("someone's\n")
    before = state_of(repo)
    with pytest.raises(WorktreeRefused, match="already exists"):
        worktrees.create(str(repo), "task", str(store))
    assert state_of(repo) == before and (taken / "notes.txt").read_text() == "someone's\n"


def test_a_name_used_by_an_earlier_worktree_is_refused(repo: Path, store: Path) -> None:
    worktrees.create(str(repo), "task", str(store))
    before = state_of(repo)
    with pytest.raises(WorktreeRefused, match="already exists"):
        worktrees.create(str(repo), "task", str(store))
    assert state_of(repo) == before and len(worktrees.listed(str(repo), str(store))) == 1


def test_a_worktrees_folder_inside_the_repository_is_refused(repo: Path) -> None:
    before = state_of(repo)
    with pytest.raises(WorktreeRefused, match="inside the repository"):
        worktrees.create(str(repo), "task", str(repo / "trees"))
    assert state_of(repo) == before and not (repo / "trees").exists()


@pytest.fixture
def with_submodule(repo: Path, tmp_path: Path) -> Path:
    library = tmp_path / "library"
    library.mkdir()
    git(library, "init", "-q", "-b", "main")
    (library / "lib.txt").write_text("lib\n")
    git(library, "add", "lib.txt")
    git(library, "commit", "-q", "-m", "lib")
    git(repo, "submodule", "add", "-q", str(library), "lib")
    git(repo, "commit", "-q", "-m", "with lib")
    return repo / "lib"


def test_a_submodule_with_changes_is_refused(repo: Path, store: Path, with_submodule: Path) -> None:
    (with_submodule / "lib.txt").write_text("changed in the submodule\n")
    before = state_of(repo)
    with pytest.raises(WorktreeRefused, match="submodule lib"):
        worktrees.create(str(repo), "task", str(store))
    assert state_of(repo) == before and not store.exists()


def test_a_submodule_at_another_commit_is_refused(repo: Path, store: Path, with_submodule: Path) -> None:
    (with_submodule / "more.txt").write_text("more\n")
    git(with_submodule, "add", "more.txt")
    git(with_submodule, "commit", "-q", "-m", "more")
    with pytest.raises(WorktreeRefused, match="submodule lib"):
        worktrees.create(str(repo), "task", str(store))
    assert not store.exists()


def test_an_index_too_large_to_read_whole_is_refused_not_half_checked(repo: Path, store: Path, with_submodule: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (with_submodule / "lib.txt").write_text("changed in the submodule\n")
    monkeypatch.setattr(worktrees, "_INDEX_LIMIT", 40)  # the submodule's entry comes after the cut
    with pytest.raises(WorktreeRefused, match="too large"):
        worktrees.create(str(repo), "task", str(store))
    assert not store.exists()


def test_a_clean_submodule_is_no_obstacle(repo: Path, store: Path, with_submodule: Path) -> None:
    assert worktrees.create(str(repo), "task", str(store)).branch == "qwen/task"


def test_discard_leaves_no_branch_and_no_folder(repo: Path, store: Path) -> None:
    made = worktrees.create(str(repo), "task", str(store))
    (Path(made.path) / "a.txt").write_text("the agent's change\n")
    (Path(made.path) / "new.txt").write_text("a new file\n")
    git(Path(made.path), "add", "new.txt")
    git(Path(made.path), "commit", "-q", "-m", "agent")
    (Path(made.path) / "untracked.txt").write_text("x\n")
    worktrees.discard(made)
    assert not Path(made.path).exists()
    assert "qwen/task" not in branches(repo)
    assert worktrees.listed(str(repo), str(store)) == []
    assert "task" not in git(repo, "worktree", "list")
    assert (repo / "a.txt").read_text() == "one\n"


def test_discard_of_a_worktree_whose_folder_was_deleted_still_removes_the_branch(repo: Path, store: Path) -> None:
    made = worktrees.create(str(repo), "task", str(store))
    shutil.rmtree(made.path)
    worktrees.discard(made)
    assert "qwen/task" not in branches(repo) and "task" not in git(repo, "worktree", "list")


def test_only_the_packages_worktrees_are_listed(repo: Path, store: Path, tmp_path: Path) -> None:
    made = worktrees.create(str(repo), "ours", str(store))
    git(repo, "worktree", "add", "-q", "-b", "qwen/elsewhere", str(tmp_path / "elsewhere"), "HEAD")
    git(repo, "worktree", "add", "-q", "-b", "feature", str(Path(made.path).parent / "feature"), "HEAD")
    assert worktrees.listed(str(repo), str(store)) == [made]
    assert worktrees.listed(made.path, str(store)) == [Worktree("ours", made.path, "qwen/ours", str(repo), made.base)]


def test_a_worktrees_base_is_the_commit_it_was_made_from_also_after_both_branches_moved(repo: Path,
                                                                                         store: Path) -> None:
    made = worktrees.create(str(repo), "moved", str(store))
    assert made.base == git(repo, "rev-parse", "HEAD").strip()
    git(repo, "commit", "-q", "--allow-empty", "-m", "the user's")
    git(Path(made.path), "commit", "-q", "--allow-empty", "-m", "the agent's")
    assert [w.base for w in worktrees.listed(str(repo), str(store))] == [made.base]


def test_making_a_worktree_of_a_hostile_repository_runs_none_of_its_hooks_or_filters(
        repo: Path, store: Path, tmp_path: Path, started: list[list[str]]) -> None:
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (repo / ".gitattributes").write_text("*.txt filter=evil\n")
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "-q", "-m", "attributes")
    git(repo, "config", "filter.evil.smudge", marker_script(scripts, "smudge"))
    git(repo, "config", "filter.evil.clean", marker_script(scripts, "clean"))
    git(repo, "config", "filter.evil.required", "true")
    for hook in ("post-checkout", "reference-transaction", "post-index-change"):
        shutil.copy(marker_script(scripts, hook), repo / ".git" / "hooks" / hook)
    git(repo, "worktree", "add", "-q", "-b", "probe", str(tmp_path / "probe"), "HEAD")
    assert {"ran-smudge", "ran-post-checkout"} <= set(ran(scripts)), "the plant does not run: proves nothing"
    for marker in scripts.glob("ran-*"):
        marker.unlink()
    started.clear()
    made = worktrees.create(str(repo), "task", str(store))
    assert (Path(made.path) / "a.txt").read_text() == "one\n"
    worktrees.discard(made)
    assert ran(scripts) == []
    assert_all_hardened(started)


def test_a_failed_checkout_leaves_no_branch_and_no_folder(repo: Path, store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_run_git = worktrees.run_git

    def failing_add(folder: str, args: list[str], **kwargs: object) -> object:
        if args[:2] == ["worktree", "add"]:
            real_run_git(folder, ["branch", args[args.index("-b") + 1]], limit=1024)  # git got as far as the branch
            os.makedirs(args[args.index("-b") + 2])
            return worktrees.run_git(folder, ["rev-parse", "--verify", "no-such-ref"], limit=1024)
        return real_run_git(folder, args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(worktrees, "run_git", failing_add)
    with pytest.raises(WorktreeRefused, match="could not make"):
        worktrees.create(str(repo), "task", str(store))
    monkeypatch.setattr(worktrees, "run_git", real_run_git)
    assert "qwen/task" not in branches(repo)
    assert not (Path(worktrees.repository_folder(str(store), str(repo))) / "task").exists()
