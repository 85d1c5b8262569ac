"""The worktree rows of `make bench`, measured in this process on the built
package's core (no editor: both run on a thread of the package, never the
main thread):

- Apply to My Files of 50 changed files of 100 KB: the agent changed a line
  near the end of each in its worktree, the user a line near the start of
  each in their own tree, so every file is a real three-way merge (the
  changes listed by git, each base read, merged, written through the write
  path);
- making a worktree of a 10,000-file repository (the package's checks, its
  submodule scan and `git worktree add`) against `git worktree add` alone,
  the same repository, as the ratio (the "peer" column is git alone)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.run import ROOT, Row, Samples, progress

APPLY_FILES = 50
APPLY_SIZE = 100_000
REPOSITORY_FILES = 10_000
LINE = "    value = compute(value, factor)  # one line of a source file\n"


def _core() -> Any:
    sys.path.insert(0, str(ROOT / "dist"))
    from QwenCompanion.core import worktree_changes, worktrees  # the built package's core

    return worktrees, worktree_changes


def _git(folder: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(folder), "-c", "user.name=b", "-c", "user.email=b@b", *args], check=True,
                   capture_output=True)


def _repository(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True)
    _git(folder, "init", "-q", "-b", "main")
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    _git(folder, "add", "-A")
    _git(folder, "commit", "-q", "-m", "files")
    return folder


def _apply_once(worktrees: Any, changes: Any, folder: Path) -> float:
    lines = [LINE] * (APPLY_SIZE // len(LINE))
    text = "".join(lines)
    repository = _repository(folder / "repository", {f"src/file{n}.py": text for n in range(APPLY_FILES)})
    tree = worktrees.create(str(repository), "bench", str(folder / "trees"))
    for n in range(APPLY_FILES):
        theirs, ours = list(lines), list(lines)
        theirs[-10] = "    value = 0  # the agent's\n"
        ours[10] = "    value = 1  # the user's\n"
        (Path(tree.path) / f"src/file{n}.py").write_text("".join(theirs))
        (repository / f"src/file{n}.py").write_text("".join(ours))
    started = time.perf_counter()
    report = changes.apply(tree)
    elapsed = (time.perf_counter() - started) * 1000
    assert len(report.applied) == APPLY_FILES and not report.conflicts and not report.refused, report
    return elapsed


def _create_once(worktrees: Any, folder: Path, package_first: bool) -> tuple[float, float]:
    """(ms of the package's worktree, ms of `git worktree add` alone), in the
    order given: the second checkout shares the disk with the first's writeback."""
    repository = _repository(folder / "repository", {f"d{n // 100}/f{n}.txt": f"{n}\n"
                                                     for n in range(REPOSITORY_FILES)})

    def package() -> float:
        started = time.perf_counter()
        worktrees.create(str(repository), "package", str(folder / "trees"))
        return (time.perf_counter() - started) * 1000

    def alone() -> float:
        started = time.perf_counter()
        _git(repository, "worktree", "add", "--quiet", "-b", "plain", str(folder / "plain"), "HEAD")
        return (time.perf_counter() - started) * 1000

    if package_first:
        first = package()
        return first, alone()
    first = alone()
    return package(), first


def worktrees_rows(rounds: int, workdir: Path) -> list[Row]:
    worktrees, changes = _core()
    applied, made = Samples(), Samples()
    progress(f"worktrees: Apply to My Files of {APPLY_FILES} files of {APPLY_SIZE // 1000} KB; "
             f"a worktree of a {REPOSITORY_FILES:,}-file repository")
    for number in range(rounds):
        applied.add("ours", [_apply_once(worktrees, changes, workdir / f"apply-{number}")])
        package, alone = _create_once(worktrees, workdir / f"create-{number}", package_first=number % 2 == 0)
        made.add("ours", [package])
        made.add("peer", [alone])
    return [
        Row("13", f"worktrees: Apply to My Files of {APPLY_FILES} files of {APPLY_SIZE // 1000} KB, each a three-way "
            "merge (listed, merged, written)", "ms", applied, "≤ 500 ms", lambda p50, ratio: p50 <= 500),
        Row("13", f"worktrees: a new worktree of a {REPOSITORY_FILES:,}-file repository, package vs `git worktree "
            "add` alone (peer column)", "ms", made, "≤ 1.2×", lambda p50, ratio: ratio is not None and ratio <= 1.2),
    ]
