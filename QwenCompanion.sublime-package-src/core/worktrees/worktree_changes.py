"""A worktree's changes against its base, and Apply to My Files.

The changes are the branch's, committed and not (untracked files
included), against the commit the worktree was made from. Apply merges
each file three ways (core/worktrees/merge3.py): the base, the worktree's version and
the user's file now. Per file:

- the user's file still as at the base: it gets the worktree's version
  (a file the worktree deleted is removed);
- both changed it: merged; clean merges are written, overlapping changes
  leave standard conflict markers (`MARKERS`) for the user to resolve;
- never written: a binary file, a link, a submodule, a path into `.git` or
  out of the repository, a file the worktree deleted that the user changed,
  a file with unsaved edits in an open view (the caller says which);
- with `REFUSE`: nothing at all is written if any chosen file would
  conflict, has uncommitted changes in the user's tree, or is refused;
- a file that still holds what a save made of applying the worktree's
  version of it (core/worktrees/applied_saves.py) is applied already.

A worktree is an agent's workspace: before git runs in it, its `.git` must
still be the file git made there, pointing into the repository's own
worktree records (an agent could plant a repository of its own there, with
a configuration git would read). The worktree's files are read only as
regular files inside it (no link out of it). Every write to the user's
files goes through the one write path (core/files/user_files.py), kept inside the
repository. Blocking (git, files): call it on a thread of ours."""

from __future__ import annotations

import os
import stat
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field

from .. import threads
from ..files.agent_files import MAX_FILE_BYTES, Refused, decode, read_bytes
from ..files.user_files import remove_file, replace_bytes
from ..git import DIFF_OPTIONS, GitError, run_git
from .applied_saves import NONE_SAVED, AppliedSaves, SavedResults
from .merge3 import merge
from .worktrees import Worktree, WorktreeRefused

ADDED, MODIFIED, DELETED = "added", "modified", "deleted"
MARKERS, REFUSE = "markers", "refuse"  # the worktree_apply_conflicts setting
EMPTY, APPLIED, NOT_APPLIED, FOLDER_GONE = "empty", "applied", "changes not applied", "folder removed"
_LISTING_LIMIT = 64 * 1024 * 1024
_BINARY_PROBE = 8000  # git's: a NUL in the first 8000 bytes makes a file binary
_REGULAR_MODES = ("100644", "100755", "000000")
_ARGUMENTS_BUDGET = 16_000  # characters of paths per git call
NOT_REGULAR = "not a regular file (a FIFO, socket or device): change it by hand"


@dataclass(frozen=True)
class ChangedFile:
    path: str  # relative to the repository's top folder, "/" between names (git's spelling)
    kind: str  # ADDED, MODIFIED or DELETED
    added: int  # lines
    removed: int
    why_not: str = ""  # why it can never be applied (a link, a submodule, binary)


@dataclass(frozen=True)
class Outcome:
    path: str
    why: str = ""


@dataclass(frozen=True)
class ViewWrite:
    path: str
    ours: bytes  # the user's file the merge was made from
    new: bytes  # the merge
    theirs: bytes  # the worktree's version merged


@dataclass
class ApplyReport:
    applied: list[Outcome] = field(default_factory=list)
    conflicts: list[Outcome] = field(default_factory=list)
    refused: list[Outcome] = field(default_factory=list)
    # Files open in a clean view, for the caller to put in the view as one undo step;
    # listed in `applied` or `conflicts` already.
    in_views: list[ViewWrite] = field(default_factory=list)


@dataclass(frozen=True)
class Decision:
    """What applying one file does: write `data`, remove the file, or
    nothing; `conflicts` places marked; `why` a refusal (nothing written)."""

    data: bytes | None = None
    remove: bool = False
    conflicts: int = 0
    why: str = ""


def is_binary(data: bytes | None) -> bool:
    return data is not None and b"\0" in data[:_BINARY_PROBE]


def decide(path: str, base: bytes | None, theirs: bytes | None, ours: bytes | None, worktree_name: str) -> Decision:
    """Pure: the merge rules for one file (None: no such file) — `base` at the
    worktree's base, `theirs` in the worktree, `ours` in the user's tree."""
    if ours == theirs:
        return Decision()  # already there (applied before, or made alike)
    if any(is_binary(data) for data in (base, theirs, ours)):
        return Decision(why="a binary file: copy it by hand if you want it")
    if ours == base:
        return Decision(remove=True) if theirs is None else Decision(data=theirs)
    if theirs == base:
        return Decision()  # the worktree left it as it was: the user's version stays
    if theirs is None:
        return Decision(why="the worktree deleted it and you changed it: left as it is")
    if ours is None and base is not None:
        return Decision(why="you deleted it and the worktree changed it: left deleted")
    merged = merge(base or b"", ours or b"", theirs, "your files", f"worktree {worktree_name}")
    return Decision(data=merged.data, conflicts=merged.conflicts)


def _decide_after(saved: SavedResults, path: str, base: bytes | None, theirs: bytes | None, ours: bytes | None,
                  worktree_name: str) -> Decision:
    """`decide`, once a file that holds what a save made of applying `theirs` counts as `theirs`."""
    if saved.stands_for(path, theirs, ours):
        return Decision()
    return decide(path, base, theirs, ours, worktree_name)


def check_still_a_worktree(worktree: Worktree, git: str | None = None) -> None:
    """Refuse a worktree whose `.git` is no longer the file git wrote there,
    pointing into the repository's own records of its worktrees."""
    marker = os.path.join(worktree.path, ".git")
    try:
        if not stat.S_ISREG(os.lstat(marker).st_mode):
            raise OSError
        with open(marker, "rb") as handle:
            pointer = handle.read(4096).decode("utf-8", "surrogateescape").strip()
    except OSError:
        raise WorktreeRefused(f"{worktree.path} is no longer a worktree of {worktree.repository} "
                              "(its .git was removed or replaced): nothing was read from it") from None
    common = _git(worktree.repository, ["rev-parse", "--path-format=absolute", "--git-common-dir"], git=git)
    records = os.path.realpath(os.path.join(common.decode("utf-8", "surrogateescape").strip(), "worktrees"))
    target = os.path.realpath(pointer.removeprefix("gitdir:").strip())
    if not pointer.startswith("gitdir:") or os.path.dirname(target) != records:
        raise WorktreeRefused(f"{worktree.path}'s .git points somewhere else than {worktree.repository}'s "
                              "worktree records: nothing was read from it")


def _git(folder: str, args: Sequence[str], *, git: str | None, may_filter: bool = False) -> bytes:
    try:
        output = run_git(folder, args, limit=_LISTING_LIMIT, git=git, may_filter=may_filter)
    except GitError as error:
        raise WorktreeRefused(f"git: {error}") from None
    if output.returncode != 0 or output.truncated:
        command = next((arg for arg in args if not arg.startswith("-")), "")  # past --literal-pathspecs
        raise WorktreeRefused(f"git's {command} in {folder} failed (it ended with {output.returncode})")
    return output.stdout


def _names(data: bytes) -> list[str]:
    return [name for name in data.decode("utf-8", "surrogateescape").split("\0") if name]


@threads.may_block
def changes(worktree: Worktree, *, counts: bool = True, git: str | None = None) -> list[ChangedFile]:
    """The worktree's files that differ from its base (committed or not,
    untracked included; ignored files left out), by path; without `counts`,
    their lines added and removed are not counted (a binary file is then
    told by its bytes, when it is applied). A FIFO, socket or device the
    agent left in place of a file is listed as not a regular file."""
    if not worktree.base:
        raise WorktreeRefused(f"the commit {worktree.branch} was made from is not known: its changes cannot be listed")
    check_still_a_worktree(worktree, git)
    raw = _names(_git(worktree.path, ["diff", "--raw", "-z", "--no-renames", *DIFF_OPTIONS, worktree.base, "--"],
                      git=git, may_filter=True))
    entries = list(zip(raw[0::2], raw[1::2], strict=True))
    special = {path for _, path in entries if _not_regular(worktree_file(worktree, path))}
    counted = _line_counts(worktree, [path for _, path in entries if path not in special] if special else None,
                           git=git) if counts else {}
    found = {}
    for header, path in entries:
        old_mode, new_mode, _, _, status = header.lstrip(":").split(" ")
        kind = ADDED if status == "A" else DELETED if status == "D" else MODIFIED
        numbers_of = counted.get(path, (0, 0) if not counts or path in special else None)
        why_not = ("a link or a submodule: change it by hand" if not {old_mode, new_mode} <= set(_REGULAR_MODES)
                   else NOT_REGULAR if path in special
                   else "a binary file: copy it by hand if you want it" if numbers_of is None else "")
        found[path] = ChangedFile(path, kind, *(numbers_of or (0, 0)), why_not=why_not)
    untracked = _names(_git(worktree.path, ["ls-files", "--others", "--exclude-standard", "-z", "--"], git=git))
    for path in untracked:
        data, why_not = _worktree_bytes(worktree, path)
        text_lines = (data or b"").count(b"\n") + (1 if data and not data.endswith(b"\n") else 0) if counts else 0
        why_not = why_not or ("a binary file: copy it by hand if you want it" if is_binary(data) else "")
        found[path] = ChangedFile(path, ADDED, 0 if why_not else text_lines, 0, why_not)
    return [found[path] for path in sorted(found)]


def _not_regular(full: str) -> bool:
    """Whether `full` is a FIFO, socket or device: git cannot hash it (its numstat
    fails whole), and it is neither read nor written. A link, a folder or no file is not."""
    try:
        mode = os.lstat(full).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISLNK(mode) or stat.S_ISDIR(mode))


def _line_counts(worktree: Worktree, paths: Sequence[str] | None, *, git: str | None) -> dict[str, tuple[int, int] | None]:
    """Lines (added, removed) per changed path, None for a binary file: of
    every change (`paths` None, one git call), or only of `paths`, in batches."""
    options = ["diff", "--numstat", "-z", "--no-renames", *DIFF_OPTIONS, worktree.base, "--"]
    calls = [options] if paths is None else [["--literal-pathspecs", *options, *batch] for batch in _batches(paths)]
    counted: dict[str, tuple[int, int] | None] = {}
    for args in calls:
        for entry in _names(_git(worktree.path, args, git=git, may_filter=True)):
            added, removed, path = entry.split("\t", 2)
            counted[path] = (int(added), int(removed)) if added != "-" else None
    return counted


def _batches(paths: Sequence[str]) -> Iterator[list[str]]:
    """`paths` in batches of arguments Windows takes (32 K characters a command line)."""
    batch: list[str] = []
    size = 0
    for path in paths:
        if batch and size + len(path) + 48 > _ARGUMENTS_BUDGET:  # 48: the rest of an argument (`<base>:`)
            yield batch
            batch, size = [], 0
        batch.append(path)
        size += len(path) + 48
    if batch:
        yield batch


def _worktree_bytes(worktree: Worktree, path: str) -> tuple[bytes | None, str]:
    """(the worktree's bytes of `path`, None when absent; why it may not be read)."""
    full = os.path.join(worktree.path, *path.split("/"))
    if os.path.realpath(full) != os.path.normpath(full):
        return None, "it leads elsewhere (a link) in the worktree: change it by hand"
    try:
        return read_bytes(full), ""
    except FileNotFoundError:
        return None, ""
    except (Refused, OSError) as error:
        return None, str(error)


def base_bytes(worktree: Worktree, file: ChangedFile, *, git: str | None = None) -> bytes | None:
    """The file at the worktree's base (None: it had none, the worktree added it),
    read from the repository (a blob is read with no filter)."""
    return bases(worktree, [file], git=git)[file.path]


@threads.may_block
def bases(worktree: Worktree, files: Sequence[ChangedFile], *, git: str | None = None) -> dict[str, bytes | None]:
    """Each file at the worktree's base (None: the worktree added it), a few
    git calls for all: their sizes (`ls-tree -l`), then the blobs one after
    the other (`show`, no textconv, which applies no filter to a blob), cut
    by those sizes. The arguments go in batches (Windows takes 32 K characters)."""
    found: dict[str, bytes | None] = {file.path: None for file in files if file.kind == ADDED}
    for batch in _batches([file.path for file in files if file.kind != ADDED]):
        listed = _names(_git(worktree.repository, ["--literal-pathspecs", "ls-tree", "-z", "-l", worktree.base, "--",
                                                   *batch], git=git))
        sizes = []
        for entry in listed:
            header, _, path = entry.partition("\t")
            _, kind, _, listed_size = header.split(maxsplit=3)
            if kind == "blob" and int(listed_size) > MAX_FILE_BYTES:
                raise WorktreeRefused(f"{path} holds more than the {MAX_FILE_BYTES:,} bytes the editor rewrites whole")
            if kind == "blob":
                sizes.append((path, int(listed_size)))
        data = _git(worktree.repository, ["show", "--no-textconv", "--format=",
                                          *(f"{worktree.base}:{path}" for path, _ in sizes)], git=git) if sizes else b""
        if len(data) != sum(size for _, size in sizes):
            raise WorktreeRefused("git show gave other blobs than listed: the base cannot be read")
        start = 0
        for path, size in sizes:
            found[path] = data[start:start + size]
            start += size
        found.update({path: None for path in batch if path not in found})  # not a blob at the base
    return found


def worktree_file(worktree: Worktree, path: str) -> str:
    return os.path.join(worktree.path, *path.split("/"))


def target_problem(repository: str, path: str) -> str:
    """Why `path` (git's, relative) may not be written in the user's tree ("" when it may)."""
    parts = path.split("/")
    if not path or os.path.isabs(path) or any(part in ("", ".", "..") for part in parts):
        return "not a plain path inside the repository"
    if any(part.casefold().rstrip(". ") == ".git" for part in parts):  # also .GIT and ".git." on Windows
        return "a path into .git: never written"
    full = os.path.join(repository, *parts)
    # Compared without case where the system ignores it (Windows: a file's real name may differ in case).
    if os.path.normcase(os.path.realpath(full)) != os.path.normcase(os.path.join(os.path.realpath(repository), *parts)):
        return "it leads out of place (a link on the way): never written"
    return ""


def _uncommitted(repository: str, git: str | None) -> set[str]:
    """The user's files with changes not committed (staged, unstaged or untracked)."""
    entries = _names(_git(repository, ["status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames",
                                       "--ignore-submodules=dirty"], git=git, may_filter=True))
    return {entry[3:] for entry in entries if len(entry) > 3}


@threads.may_block
def apply(worktree: Worktree, paths: Collection[str] | None = None, *, policy: str = MARKERS,
          unsaved: Collection[str] = (), in_views: Collection[str] = (), saved: SavedResults = NONE_SAVED,
          git: str | None = None) -> ApplyReport:
    """Apply the worktree's changes of `paths` (default: all) to the user's
    files as the module says. `unsaved`: paths open in a view with unsaved
    edits (refused); `in_views`: paths open in a clean view (their new bytes
    are returned for the view, not written here); `saved`: the worktree's
    records of what saves made of earlier applies."""
    report = ApplyReport()
    changed = {file.path: file for file in changes(worktree, counts=False, git=git)}
    chosen = sorted(changed) if paths is None else list(paths)
    planned: list[tuple[str, bytes | None, bytes | None, Decision]] = []
    dirty = _uncommitted(worktree.repository, git) if policy == REFUSE else set()
    at_base = bases(worktree, [changed[path] for path in chosen if path in changed and not changed[path].why_not],
                    git=git)
    for path in chosen:
        file = changed.get(path)
        why = ("not among the worktree's changes" if file is None else file.why_not
               or target_problem(worktree.repository, path)
               or ("open with unsaved edits: save or revert it first" if path in unsaved else "")
               or ("has uncommitted changes in your files" if path in dirty else ""))
        if why or file is None:
            report.refused.append(Outcome(path, why))
            continue
        try:
            theirs, why = _worktree_bytes(worktree, path)
            ours = _user_bytes(worktree.repository, path)
            decision = (Decision(why=why) if why
                        else _decide_after(saved, path, at_base.get(path), theirs, ours, worktree.name))
        except (Refused, OSError) as error:
            decision, theirs, ours = Decision(why=str(error)), None, None
        if decision.why:
            report.refused.append(Outcome(path, decision.why))
        elif policy == REFUSE and decision.conflicts:
            report.refused.append(Outcome(path, "your changes and the worktree's overlap"))
        else:
            planned.append((path, theirs, ours, decision))
    if policy == REFUSE and report.refused:
        report.refused += [Outcome(path, "not applied: the apply is refused whole") for path, _, _, _ in planned]
        return report
    for path, theirs, ours, decision in planned:
        _carry_out(worktree, path, (theirs, ours), decision, path in in_views, report)
    return report


def _user_file(repository: str, path: str) -> str:
    return os.path.join(repository, *path.split("/"))


def _user_bytes(repository: str, path: str) -> bytes | None:
    try:
        return read_bytes(_user_file(repository, path))
    except FileNotFoundError:
        return None


def _carry_out(worktree: Worktree, path: str, versions: tuple[bytes | None, bytes | None], decision: Decision,
               in_view: bool, report: ApplyReport) -> None:
    """`decision` carried out; `versions`: (the worktree's, the user's) bytes it was made from."""
    theirs, ours = versions
    done = (report.conflicts if decision.conflicts else report.applied)
    outcome = Outcome(path, f"{decision.conflicts} conflict{'s' if decision.conflicts != 1 else ''} marked"
                      if decision.conflicts else "")
    if decision.data is None and not decision.remove:
        report.applied.append(Outcome(path, "nothing to change"))
        return
    target = _user_file(worktree.repository, path)
    if in_view and decision.data is not None and ours is not None and theirs is not None:
        report.in_views.append(ViewWrite(path, ours, decision.data, theirs))
        done.append(outcome)
        return
    try:
        if _user_bytes(worktree.repository, path) != ours:  # saved by the user since it was read
            raise Refused("changed while it was merged: nothing was overwritten")
        if decision.remove:
            remove_file(target, within=worktree.repository)
        else:
            # The user's file keeps its permission bits; a new one takes the worktree's (executable or not).
            mode = os.stat(target if ours is not None else worktree_file(worktree, path)).st_mode & 0o7777
            replace_bytes(target, decision.data or b"", mode, within=worktree.repository)
    except (Refused, OSError) as error:
        report.refused.append(Outcome(path, str(error)))
        return
    done.append(outcome)


@threads.may_block
def record_save(saves: AppliedSaves, worktree: Worktree, write: ViewWrite, saved_text: str, encoding: str) -> None:
    """After `write` went into its view and was saved as `saved_text` (the view's
    text): the file's bytes recorded as the applied result of the worktree's
    version, if they are still that text (nothing is recorded of a save of the user's since)."""
    try:
        data = _user_bytes(worktree.repository, write.path)
    except (Refused, OSError):
        return
    if data is not None and decode(data, encoding).text == saved_text:
        saves.record(worktree.path, write.path, write.theirs, data)


@dataclass(frozen=True)
class Dropping:
    """Drop of one file, as read: `base` what it goes back to (None: the worktree
    added it, it is removed), `now` the worktree's file (None: none there)."""

    path: str
    base: bytes | None
    now: bytes | None


@threads.may_block
def plan_drop(worktree: Worktree, path: str, *, git: str | None = None) -> Dropping:
    """What dropping `path` (the worktree's file back to its base) writes.
    Refused for a path git does not list among the changes."""
    changed = {file.path: file for file in changes(worktree, git=git)}
    file = changed.get(path)
    if file is None or file.why_not or target_problem(worktree.path, path):
        raise Refused(f"{path}: {file.why_not if file else 'not among the worktree changes'}")
    base = base_bytes(worktree, file, git=git)
    now, why_not = _worktree_bytes(worktree, path)
    if why_not:
        raise Refused(f"{path}: {why_not}")
    return Dropping(path, base, now)


@threads.may_block
def drop(worktree: Worktree, dropping: Dropping) -> None:
    """`dropping` written on disk, inside the worktree only, while the file
    still holds what was read (else `Refused`, nothing changed)."""
    full = worktree_file(worktree, dropping.path)
    if _worktree_bytes(worktree, dropping.path) != (dropping.now, ""):
        raise Refused(f"{dropping.path} changed while it was dropped: nothing was overwritten")
    if dropping.base is None:
        remove_file(full, within=worktree.path)
    else:
        replace_bytes(full, dropping.base, None, within=worktree.path)


@threads.may_block
def state(worktree: Worktree, *, saved: SavedResults = NONE_SAVED, git: str | None = None) -> str:
    """EMPTY (no changes), APPLIED (applying again would change none of the
    user's files; `saved`: as in `apply`), NOT_APPLIED, or FOLDER_GONE
    (removed by hand: Discard prunes it)."""
    if not os.path.isdir(worktree.path):
        return FOLDER_GONE
    listed = changes(worktree, counts=False, git=git)
    if not listed:
        return EMPTY
    at_base = bases(worktree, [file for file in listed if not file.why_not], git=git)
    for file in listed:
        try:
            theirs, _ = _worktree_bytes(worktree, file.path)
            ours = _user_bytes(worktree.repository, file.path)
            decision = _decide_after(saved, file.path, at_base.get(file.path), theirs, ours, worktree.name)
        except (Refused, OSError):
            return NOT_APPLIED
        if decision.why or decision.remove or decision.data not in (None, ours):
            return NOT_APPLIED
    return APPLIED
