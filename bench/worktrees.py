"""The worktree rows of `make bench`, measured in this process on the built
package's core (no editor: both run on a thread of the package, never the
main thread):

- Apply to My Files of 50 changed files of 100 KB: the agent changed a line
  near the end of each in its worktree, the user a line near the start of
  each in their own tree, so every file is a real three-way merge (the
  changes listed by git, each base read, merged, written through the write
  path);
- making a worktree of a 10,000-file repository against `git worktree add`
  alone, as the ratio (the "peer" column is git alone). The package's side
  is `worktrees.create` whole: the name's check, the repository's top and
  main working tree (rev-parse, worktree list), HEAD's commit, the qwen/
  branches in use, the folder checks, the submodule scan (ls-files
  --stage), the filter drivers read and `git worktree add --quiet -b
  qwen/<name> <folder> <commit>`, every call hardened. Git's side is `git
  worktree add --quiet -b <name> <folder> HEAD` run from this process. Both
  check out the same commit of the same repository, from the same process
  (so on the same CPU), on a warm cache, taking turns at going first;
- three worktree chats streaming at once (bench/worktrees_host.py, the
  simulated host, a process of its own each round): the main-thread time of
  each update of their transcripts."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.chat import PACED, RATE, floats, run_host
from bench.run import ROOT, Row, Samples, percentile, progress

APPLY_FILES = 50
APPLY_SIZE = 100_000
REPOSITORY_FILES = 10_000
LINE = "    value = compute(value, factor)  # one line of a source file\n"


def _core() -> Any:
    sys.path.insert(0, str(ROOT / "dist"))
    from QwenCompanion.core.worktrees import worktree_changes, worktrees  # the built package's core

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


def _remove_plain(repository: Path, path: Path, branch: str) -> None:
    _git(repository, "worktree", "remove", "--force", str(path))
    _git(repository, "branch", "-D", branch)


def _create_pairs(worktrees: Any, folder: Path, pairs: int) -> tuple[list[float], list[float]]:
    """(ms of each package worktree, ms of each `git worktree add` alone) of
    one repository, made once: each side on the same commit, both on a warm
    cache (one of each made and removed, untimed, first: the first checkout
    after the repository was written pays its writeback), who goes first
    alternating pair by pair (each meets the other's writeback as often),
    every worktree removed (untimed) before the next."""
    repository = _repository(folder / "repository", {f"d{n // 100}/f{n}.txt": f"{n}\n"
                                                     for n in range(REPOSITORY_FILES)})
    trees = str(folder / "trees")

    def package(name: str) -> float:
        started = time.perf_counter()
        made = worktrees.create(str(repository), name, trees)
        elapsed = (time.perf_counter() - started) * 1000
        worktrees.discard(made)
        return elapsed

    def alone(name: str) -> float:
        path = folder / name
        started = time.perf_counter()
        _git(repository, "worktree", "add", "--quiet", "-b", name, str(path), "HEAD")
        elapsed = (time.perf_counter() - started) * 1000
        _remove_plain(repository, path, name)
        return elapsed

    package("warm-package"), alone("warm-plain")
    ours: list[float] = []
    plain: list[float] = []
    for number in range(pairs):
        if number % 2 == 0:
            ours.append(package(f"package{number}"))
            plain.append(alone(f"plain{number}"))
        else:
            plain.append(alone(f"plain{number}"))
            ours.append(package(f"package{number}"))
    return ours, plain


def worktrees_rows(rounds: int, workdir: Path) -> list[Row]:
    worktrees, changes = _core()
    applied, made, streaming = Samples(), Samples(), Samples()
    progress(f"worktrees: Apply to My Files of {APPLY_FILES} files of {APPLY_SIZE // 1000} KB; "
             f"a worktree of a {REPOSITORY_FILES:,}-file repository; three worktree chats streaming at once")
    for number in range(rounds):
        applied.add("ours", [_apply_once(worktrees, changes, workdir / f"apply-{number}")])
        streaming.add("ours", floats(run_host("bench.worktrees_host", workdir / f"chats-{number}", PACED, RATE)
                                     ["update_ms"]))
    # Two pairs a round: as many with the package first as with git first.
    package, alone = _create_pairs(worktrees, workdir / "create", 2 * rounds)
    made.add("ours", package)
    made.add("peer", alone)
    updates = streaming.values["ours"]  # the table has no max column: the worst update is shown here
    progress(f"worktrees: three chats streaming, main thread per update: p50 {statistics.median(updates):.2f} ms, "
             f"p99 {percentile(updates, 99):.2f} ms, max {max(updates):.2f} ms over {len(updates)} updates")
    return [
        Row("13", f"worktrees: Apply to My Files of {APPLY_FILES} files of {APPLY_SIZE // 1000} KB, each a three-way "
            "merge (listed, merged, written)", "ms", applied, "≤ 500 ms", lambda p50, ratio: p50 <= 500),
        Row("13", f"worktrees: a new worktree of a {REPOSITORY_FILES:,}-file repository, package vs `git worktree "
            "add` alone (peer column)", "ms", made, "≤ 1.2×", lambda p50, ratio: ratio is not None and ratio <= 1.2),
        Row("13", f"worktrees: three worktree chats streaming at once ({RATE:,} chunks/s each), main-thread time per "
            "view update", "ms", streaming, "≤ 16 ms p99",
            lambda p50, ratio: percentile(streaming.values["ours"], 99) <= 16),
    ]
