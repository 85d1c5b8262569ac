"""A worktree's changes and Apply to My Files (core/worktrees/worktree_changes.py,
core/worktrees/merge3.py), against real git in temporary repositories: the merge
rules, every refusal, and an agent that writes outside its worktree, into
`.git`, or plants a repository of its own."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from qwencompanion_src.core.files.user_files import LeadsElsewhere, remove_file, replace_bytes
from qwencompanion_src.core.worktrees import worktree_changes, worktrees
from qwencompanion_src.core.worktrees.applied_saves import AppliedSaves
from qwencompanion_src.core.worktrees.merge3 import merge
from qwencompanion_src.core.worktrees.worktree_changes import (
    ADDED,
    APPLIED,
    DELETED,
    EMPTY,
    FOLDER_GONE,
    MODIFIED,
    NOT_APPLIED,
    REFUSE,
    Decision,
    decide,
)
from qwencompanion_src.core.worktrees.worktrees import Worktree, WorktreeRefused
from tests.unit.test_worktrees import git

pytestmark = pytest.mark.skipif(shutil.which("git") is None or sys.platform == "win32",
                                reason="needs git and POSIX links")
LINES = "".join(f"line {n}\n" for n in range(1, 21))


def merge_file(base: bytes, ours: bytes, theirs: bytes, tmp: Path) -> tuple[bytes, int]:
    """git's own answer: (merged, conflicts)."""
    for name, data in (("base", base), ("ours", ours), ("theirs", theirs)):
        (tmp / name).write_bytes(data)
    done = subprocess.run(["git", "merge-file", "-p", "-L", "your files", "-L", "base", "-L", "worktree w",
                           str(tmp / "ours"), str(tmp / "base"), str(tmp / "theirs")], check=False,
                          capture_output=True)
    return done.stdout, done.returncode


# -- the merge itself ---------------------------------------------------------


def test_changes_to_different_lines_merge_cleanly() -> None:
    ours = LINES.replace("line 2\n", "line 2 (yours)\n").encode()
    theirs = LINES.replace("line 18\n", "line 18 (the agent's)\n").encode()
    merged = merge(LINES.encode(), ours, theirs)
    assert merged.conflicts == 0
    assert merged.data == LINES.replace("line 2\n", "line 2 (yours)\n").replace(
        "line 18\n", "line 18 (the agent's)\n").encode()


def test_changes_to_the_same_line_leave_standard_markers_as_git_does(tmp_path: Path) -> None:
    ours = LINES.replace("line 10\n", "line 10 (yours)\n").encode()
    theirs = LINES.replace("line 10\n", "line 10 (the agent's)\n").encode()
    merged = merge(LINES.encode(), ours, theirs, "your files", "worktree w")
    assert merged.conflicts == 1
    assert merged.data == merge_file(LINES.encode(), ours, theirs, tmp_path)[0]
    assert b"<<<<<<< your files\nline 10 (yours)\n=======\nline 10 (the agent's)\n>>>>>>> worktree w\n" in merged.data


def test_a_last_line_without_newline_gets_its_marker_on_a_line_of_its_own() -> None:
    merged = merge(b"a\nb", b"a\nmine", b"a\ntheirs")
    assert merged.data == b"a\n<<<<<<< ours\nmine\n=======\ntheirs\n>>>>>>> theirs\n"


def test_crlf_and_bytes_of_any_encoding_come_through_as_they_are() -> None:
    base = "één\r\ntwee\r\ndrie\r\n".encode("latin-1")
    merged = merge(base, base.replace(b"twee", b"TWEE"), base + b"vier\r\n")
    assert merged.conflicts == 0 and merged.data == base.replace(b"twee", b"TWEE") + b"vier\r\n"


def test_random_edits_to_separate_regions_merge_like_git(tmp_path: Path) -> None:
    rng = random.Random(39)
    for _ in range(60):
        base = [f"{rng.randrange(5)} {n}\n" for n in range(40)]
        ours, theirs = list(base), list(base)
        cut = rng.randrange(10, 30)
        for side, (low, high) in ((ours, (0, cut - 3)), (theirs, (cut + 3, 40))):
            where = rng.randrange(low, high)
            side[where:where + rng.randrange(0, 3)] = [f"new {rng.random()}\n"] * rng.randrange(0, 3)
        data = [("".join(lines)).encode() for lines in (base, ours, theirs)]
        merged = merge(*data)
        assert (merged.data, merged.conflicts) == merge_file(*data, tmp_path)


# -- the rules per file (pure) ------------------------------------------------


@pytest.mark.parametrize(("base", "theirs", "ours", "expected"), [
    (b"a\n", b"b\n", b"a\n", Decision(data=b"b\n")),  # untouched by the user: the worktree's version
    (b"a\n", b"b\n", b"b\n", Decision()),  # already applied
    (b"a\n", None, b"a\n", Decision(remove=True)),  # deleted in the worktree
    (None, b"new\n", None, Decision(data=b"new\n")),  # added in the worktree
    (b"a\n", None, b"mine\n", Decision(why="the worktree deleted it and you changed it: left as it is")),
    (b"a\n", b"b\n", None, Decision(why="you deleted it and the worktree changed it: left deleted")),
    (b"a\0", b"b\0", b"a\0", Decision(why="a binary file: copy it by hand if you want it")),
    (b"a\n", b"b\n", b"a\0", Decision(why="a binary file: copy it by hand if you want it")),
])
def test_the_merge_rules(base: bytes | None, theirs: bytes | None, ours: bytes | None, expected: Decision) -> None:
    assert decide("f", base, theirs, ours, "w") == expected


def test_a_file_both_added_differently_is_a_conflict_holding_both() -> None:
    decision = decide("f", None, b"theirs\n", b"mine\n", "w")
    assert decision.conflicts == 1 and b"mine\n" in (decision.data or b"") and b"theirs\n" in (decision.data or b"")


# -- against real repositories ------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    git(folder, "init", "-q", "-b", "main")
    (folder / "a.txt").write_text(LINES)
    (folder / "gone.txt").write_text("to be deleted\n")
    (folder / "kept.txt").write_text("kept\n")
    git(folder, "add", ".")
    git(folder, "commit", "-q", "-m", "first")
    return folder


@pytest.fixture
def tree(repo: Path, tmp_path: Path) -> Worktree:
    return worktrees.create(str(repo), "task", str(tmp_path / "trees"))


def agent_work(tree: Worktree) -> Path:
    """What an agent did in the worktree: a commit and uncommitted work."""
    folder = Path(tree.path)
    (folder / "a.txt").write_text(LINES.replace("line 18\n", "line 18 (the agent's)\n"))
    git(folder, "commit", "-q", "-am", "the agent's commit")
    (folder / "gone.txt").unlink()
    (folder / "new").mkdir()
    (folder / "new" / "made.txt").write_text("made\nby the agent\n")
    return folder


def test_the_changes_are_the_branchs_committed_uncommitted_and_untracked(tree: Worktree) -> None:
    folder = agent_work(tree)
    (folder / "ignored.log").write_text("x\n")
    (folder / ".gitignore").write_text("*.log\n")
    listed = worktree_changes.changes(tree)
    assert [(f.path, f.kind, f.added, f.removed) for f in listed] == [
        (".gitignore", ADDED, 1, 0), ("a.txt", MODIFIED, 1, 1), ("gone.txt", DELETED, 0, 1),
        ("new/made.txt", ADDED, 2, 0)]


def test_apply_writes_clean_merges_and_leaves_the_users_tree_as_git_expects(repo: Path, tree: Worktree) -> None:
    agent_work(tree)
    (repo / "a.txt").write_text(LINES.replace("line 2\n", "line 2 (yours)\n"))  # the user's own work
    report = worktree_changes.apply(tree)
    assert sorted(o.path for o in report.applied) == ["a.txt", "gone.txt", "new/made.txt"]
    assert report.conflicts == [] and report.refused == []
    assert (repo / "a.txt").read_text() == LINES.replace("line 2\n", "line 2 (yours)\n").replace(
        "line 18\n", "line 18 (the agent's)\n")
    assert not (repo / "gone.txt").exists() and (repo / "new" / "made.txt").read_text() == "made\nby the agent\n"
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"  # no commit, no branch change
    assert worktree_changes.state(tree) == APPLIED


def test_the_users_file_keeps_its_permission_bits_and_a_new_file_takes_the_worktrees(repo: Path,
                                                                                     tree: Worktree) -> None:
    (repo / "a.txt").chmod(0o750)
    (Path(tree.path) / "a.txt").write_text(LINES + "more\n")
    (Path(tree.path) / "run.sh").write_text("#!/bin/sh\n")
    (Path(tree.path) / "run.sh").chmod(0o755)
    report = worktree_changes.apply(tree)
    assert sorted(o.path for o in report.applied) == ["a.txt", "run.sh"]
    assert (repo / "a.txt").stat().st_mode & 0o777 == 0o750 and (repo / "run.sh").stat().st_mode & 0o777 == 0o755


def test_a_conflict_leaves_markers_and_is_reported_per_file(repo: Path, tree: Worktree) -> None:
    agent_work(tree)
    (repo / "a.txt").write_text(LINES.replace("line 18\n", "line 18 (yours)\n"))
    report = worktree_changes.apply(tree, ["a.txt", "new/made.txt"])
    assert [(o.path, o.why) for o in report.conflicts] == [("a.txt", "1 conflict marked")]
    assert [o.path for o in report.applied] == ["new/made.txt"]
    text = (repo / "a.txt").read_text()
    assert "<<<<<<< your files\nline 18 (yours)\n=======\nline 18 (the agent's)\n>>>>>>> worktree task\n" in text
    assert (repo / "gone.txt").exists()  # not chosen


def test_refuse_refuses_the_whole_apply_when_a_file_has_uncommitted_changes(repo: Path, tree: Worktree) -> None:
    agent_work(tree)
    (repo / "a.txt").write_text(LINES.replace("line 2\n", "line 2 (yours)\n"))  # would merge cleanly
    before = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts}
    report = worktree_changes.apply(tree, policy=REFUSE)
    assert report.applied == [] and report.conflicts == []
    assert ("a.txt", "has uncommitted changes in your files") in [(o.path, o.why) for o in report.refused]
    assert {o.path for o in report.refused} == {"a.txt", "gone.txt", "new/made.txt"}
    assert {p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts} == before


def test_a_base_too_big_to_rewrite_refuses_the_apply_and_the_states_with_a_message(
        repo: Path, tree: Worktree, monkeypatch: pytest.MonkeyPatch) -> None:
    """Refused as a worktree's refusal, which the commands show (it was another
    class the commands did not catch: Apply and Worktrees… said nothing)."""
    agent_work(tree)
    monkeypatch.setattr(worktree_changes, "MAX_FILE_BYTES", 8)
    before = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts}
    with pytest.raises(WorktreeRefused, match=r"a\.txt holds more than the 8 bytes"):
        worktree_changes.apply(tree)
    with pytest.raises(WorktreeRefused, match="holds more than"):
        worktree_changes.state(tree)
    assert {p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts} == before


def test_refuse_applies_everything_when_the_users_tree_is_clean(repo: Path, tree: Worktree) -> None:
    agent_work(tree)
    report = worktree_changes.apply(tree, policy=REFUSE)
    assert len(report.applied) == 3 and report.refused == []


def test_a_file_with_unsaved_edits_is_refused_and_an_open_clean_one_is_handed_back(repo: Path,
                                                                                    tree: Worktree) -> None:
    agent_work(tree)
    report = worktree_changes.apply(tree, unsaved={"a.txt"}, in_views={"new/made.txt", "gone.txt"})
    assert [(o.path, o.why) for o in report.refused] == [("a.txt", "open with unsaved edits: save or revert it first")]
    assert (repo / "a.txt").read_text() == LINES
    assert report.in_views == []  # the new file had no view's text to merge from: written on disk
    assert not (repo / "gone.txt").exists() and (repo / "new" / "made.txt").exists()
    (repo / "a.txt").write_text(LINES.replace("line 2\n", "line 2 (yours)\n"))
    handed = worktree_changes.apply(tree, ["a.txt"], in_views={"a.txt"})
    assert [write.path for write in handed.in_views] == ["a.txt"]
    assert (repo / "a.txt").read_text() == LINES.replace("line 2\n", "line 2 (yours)\n")  # the view's to write



def test_a_file_holding_what_a_save_made_of_an_apply_is_applied_while_neither_side_changes(
        repo: Path, tree: Worktree) -> None:
    """The save of an apply into an open view gave the agent's text a final newline:
    recorded, the file counts as applied; a change to either side since does not."""
    folder = Path(tree.path)
    theirs = LINES.replace("line 18\n", "line 18 (the agent's)\n").removesuffix("\n")
    (folder / "a.txt").write_text(theirs)
    (repo / "a.txt").write_text(theirs + "\n")  # what the save left
    saves = AppliedSaves()
    handed = worktree_changes.apply(tree, ["a.txt"], in_views={"a.txt"})
    assert len(handed.in_views) == 1  # without the record, merged again
    saves.record(tree.path, "a.txt", handed.in_views[0].theirs, (repo / "a.txt").read_bytes())
    assert worktree_changes.state(tree, saved=saves.of(tree.path)) == APPLIED
    again = worktree_changes.apply(tree, ["a.txt"], saved=saves.of(tree.path))
    assert [(o.path, o.why) for o in again.applied] == [("a.txt", "nothing to change")]
    assert (repo / "a.txt").read_text() == theirs + "\n"
    assert worktree_changes.state(tree, saved=saves.of(str(repo))) == NOT_APPLIED  # another worktree's records
    (folder / "a.txt").write_text(theirs + " more")  # the agent went on
    assert worktree_changes.state(tree, saved=saves.of(tree.path)) == NOT_APPLIED
    (folder / "a.txt").write_text(theirs)
    (repo / "a.txt").write_text("mine\n" + theirs + "\n")  # the user's edit since
    assert worktree_changes.state(tree, saved=saves.of(tree.path)) == NOT_APPLIED

def test_binary_files_are_refused_with_a_message(repo: Path, tree: Worktree) -> None:
    (Path(tree.path) / "image.bin").write_bytes(b"\x89PNG\0\0data")
    report = worktree_changes.apply(tree)
    assert [(o.path, o.why) for o in report.refused] == [("image.bin", "a binary file: copy it by hand if you want it")]
    assert not (repo / "image.bin").exists()


def test_drop_puts_the_worktrees_file_back_to_its_base_inside_the_worktree_only(repo: Path, tree: Worktree) -> None:
    folder = agent_work(tree)
    for path in ("a.txt", "new/made.txt", "gone.txt"):
        worktree_changes.drop(tree, worktree_changes.plan_drop(tree, path))
    assert (folder / "a.txt").read_text() == LINES and not (folder / "new" / "made.txt").exists()
    assert (folder / "gone.txt").read_text() == "to be deleted\n"
    assert worktree_changes.changes(tree) == [] and worktree_changes.state(tree) == EMPTY
    assert (repo / "a.txt").read_text() == LINES


def test_a_drop_writes_nothing_over_a_file_changed_since_it_was_read(repo: Path, tree: Worktree) -> None:
    folder = agent_work(tree)
    dropping = worktree_changes.plan_drop(tree, "a.txt")
    (folder / "a.txt").write_text("saved since\n")
    with pytest.raises(worktree_changes.Refused, match="changed while it was dropped"):
        worktree_changes.drop(tree, dropping)
    assert (folder / "a.txt").read_text() == "saved since\n"

def test_the_states(repo: Path, tree: Worktree) -> None:
    assert worktree_changes.state(tree) == EMPTY
    agent_work(tree)
    assert worktree_changes.state(tree) == NOT_APPLIED
    shutil.rmtree(tree.path)  # removed by hand
    assert worktree_changes.state(tree) == FOLDER_GONE
    assert worktrees.listed(str(repo), str(Path(tree.path).parents[1])) == [tree]
    worktrees.discard(tree)  # prunes it and deletes the branch
    assert "qwen/task" not in git(repo, "branch") and worktrees.listed(str(repo), str(Path(tree.path).parents[1])) == []


# -- a hostile agent ----------------------------------------------------------


def test_a_link_the_agent_planted_to_a_file_outside_is_never_copied_into_the_users_files(
        repo: Path, tree: Worktree, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("secret\n")
    (Path(tree.path) / "leak.txt").symlink_to(secret)
    report = worktree_changes.apply(tree)
    assert [o.path for o in report.refused] == ["leak.txt"] and not (repo / "leak.txt").exists()


def test_a_file_that_would_land_through_a_link_in_the_users_tree_is_refused(repo: Path, tree: Worktree,
                                                                             tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / "out").symlink_to(outside, target_is_directory=True)
    (Path(tree.path) / "out").mkdir()
    (Path(tree.path) / "out" / "x.txt").write_text("escaped\n")
    report = worktree_changes.apply(tree, ["out/x.txt"])
    assert report.refused[0].why.startswith("it leads out of place") and list(outside.iterdir()) == []


def test_a_path_into_git_is_refused() -> None:
    for path in (".git/config", "sub/.GIT/hooks/post-checkout", ".git./x", "../x", "/etc/x"):
        assert worktree_changes.target_problem("/repo", path), path


def test_a_planted_repository_in_place_of_the_worktrees_git_is_never_read(repo: Path, tree: Worktree,
                                                                         tmp_path: Path) -> None:
    folder = agent_work(tree)
    planted = tmp_path / "planted"
    git(tmp_path, "init", "-q", str(planted))
    (folder / ".git").unlink()
    shutil.copytree(planted / ".git", folder / ".git")
    marker = tmp_path / "ran"
    git(folder, "config", "core.pager", f"touch {marker}")
    with pytest.raises(WorktreeRefused, match="no longer a worktree"):
        worktree_changes.apply(tree)
    (folder / ".git").rename(folder / "elsewhere.git")
    (folder / ".git").write_text(f"gitdir: {folder / 'elsewhere.git'}\n")
    with pytest.raises(WorktreeRefused, match="points somewhere else"):
        worktree_changes.changes(tree)
    assert (repo / "a.txt").read_text() == LINES and not marker.exists()


def test_the_write_path_refuses_a_path_outside_the_folder_it_is_kept_in(tmp_path: Path) -> None:
    inside, outside = tmp_path / "inside", tmp_path / "outside"
    inside.mkdir()
    outside.mkdir()
    (inside / "link").symlink_to(outside, target_is_directory=True)
    for path in (outside / "x.txt", inside / "link" / "x.txt", inside / ".." / "outside" / "x.txt"):
        with pytest.raises(LeadsElsewhere):
            replace_bytes(str(path), b"x", None, within=str(inside))
    (outside / "y.txt").write_text("y")
    with pytest.raises(LeadsElsewhere):
        remove_file(str(inside / "link" / "y.txt"), within=str(inside))
    assert sorted(os.listdir(outside)) == ["y.txt"]
    replace_bytes(str(inside / "ok.txt"), b"ok", None, within=str(inside))
    assert (inside / "ok.txt").read_bytes() == b"ok"


# -- what the user's tree ends up holding -------------------------------------


def test_an_executable_script_the_agent_changed_is_applied_and_stays_executable(repo: Path, tmp_path: Path) -> None:
    """Mode 100755 is a regular file's: the script reaches the user's tree (it is no link or submodule)."""
    (repo / "run.sh").write_text("#!/bin/sh\necho one\n")
    (repo / "run.sh").chmod(0o755)
    git(repo, "add", "run.sh")
    git(repo, "commit", "-q", "-m", "a script")
    tree = worktrees.create(str(repo), "script", str(tmp_path / "trees"))
    (Path(tree.path) / "run.sh").write_text("#!/bin/sh\necho two\n")
    listed = worktree_changes.changes(tree)
    assert [(f.path, f.added, f.removed, f.why_not) for f in listed] == [("run.sh", 1, 1, "")]
    report = worktree_changes.apply(tree)
    assert [o.path for o in report.applied] == ["run.sh"] and report.refused == []
    assert (repo / "run.sh").read_text() == "#!/bin/sh\necho two\n" and (repo / "run.sh").stat().st_mode & 0o111
    assert worktree_changes.state(tree) == APPLIED


def test_a_save_between_apply_reading_the_file_and_writing_it_is_never_overwritten(
        repo: Path, tree: Worktree, monkeypatch: pytest.MonkeyPatch) -> None:
    """The user saves a.txt after Apply read it and before it writes the merge: the
    merge of the older text is not written over the save (a hook on the merge step
    makes the save land exactly there)."""
    agent_work(tree)
    yours = LINES.replace("line 2\n", "line 2 (yours)\n")
    (repo / "a.txt").write_text(yours)
    saved_meanwhile = LINES.replace("line 2\n", "line 2 (yours)\n").replace("line 5\n", "line 5 (saved meanwhile)\n")
    merging = worktree_changes.decide

    def user_saves_while_merging(path: str, *args: Any) -> Decision:
        decision = merging(path, *args)
        if path == "a.txt":
            (repo / "a.txt").write_text(saved_meanwhile)
        return decision

    monkeypatch.setattr(worktree_changes, "decide", user_saves_while_merging)
    report = worktree_changes.apply(tree, ["a.txt"])
    assert (repo / "a.txt").read_text() == saved_meanwhile, "the user's save was lost"
    assert [(o.path, o.why) for o in report.refused] == [("a.txt", "changed while it was merged: nothing was overwritten")]
    assert report.applied == []


def test_a_worktree_whose_only_change_left_is_a_deleted_file_is_not_applied_while_the_file_is_there(
        repo: Path, tree: Worktree) -> None:
    (Path(tree.path) / "gone.txt").unlink()
    assert worktree_changes.state(tree) == NOT_APPLIED and (repo / "gone.txt").exists()
    report = worktree_changes.apply(tree)
    assert [o.path for o in report.applied] == ["gone.txt"] and not (repo / "gone.txt").exists()
    assert worktree_changes.state(tree) == APPLIED


def test_a_fifo_the_agent_left_in_place_of_a_tracked_file_is_listed_as_such_with_the_rest(
        repo: Path, tree: Worktree) -> None:
    """git cannot hash a FIFO (its numstat ends with 128): the FIFO is listed as not
    a regular file, never read or applied, and every other change is listed and applied."""
    folder = agent_work(tree)
    (folder / "kept.txt").unlink()
    os.mkfifo(folder / "kept.txt")
    listed = worktree_changes.changes(tree)
    assert [(f.path, f.kind, f.added, f.removed, f.why_not) for f in listed] == [
        ("a.txt", MODIFIED, 1, 1, ""), ("gone.txt", DELETED, 0, 1, ""),
        ("kept.txt", MODIFIED, 0, 0, worktree_changes.NOT_REGULAR), ("new/made.txt", ADDED, 2, 0, "")]
    assert worktree_changes.NOT_REGULAR.startswith("not a regular file")
    report = worktree_changes.apply(tree)
    assert [(o.path, o.why) for o in report.refused] == [("kept.txt", worktree_changes.NOT_REGULAR)]
    assert sorted(o.path for o in report.applied) == ["a.txt", "gone.txt", "new/made.txt"]
    assert (repo / "kept.txt").read_text() == "kept\n"
    with pytest.raises(worktree_changes.Refused, match="not a regular file"):
        worktree_changes.plan_drop(tree, "kept.txt")


def test_line_counts_of_many_files_beside_a_fifo_come_in_batches(repo: Path, tree: Worktree,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worktree_changes, "_ARGUMENTS_BUDGET", 200)
    folder = Path(tree.path)
    for n in range(12):
        (folder / f"file-{n:02}.txt").write_text("x\n")
        git(folder, "add", f"file-{n:02}.txt")
    (folder / "kept.txt").unlink()
    os.mkfifo(folder / "kept.txt")
    listed = {f.path: (f.added, f.why_not) for f in worktree_changes.changes(tree)}
    assert listed.pop("kept.txt")[1] == worktree_changes.NOT_REGULAR
    assert listed == {f"file-{n:02}.txt": (1, "") for n in range(12)}
