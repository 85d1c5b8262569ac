"""Git worktrees a chat's agent works in: a new branch `qwen/<name>` from the
repository's HEAD, checked out in a folder outside the project (one
subfolder per repository under the `worktrees_folder`), so the agent's
edits never touch the user's working tree, index or branches.

Every git call goes through the hardened runner (core/git.py): checking a
worktree out could run a repository's hooks (post-checkout) and filters
(smudge); the runner turns hooks off and `may_filter` empties every filter
driver. A refusal (`WorktreeRefused`) creates nothing.

Blocking (it waits for git): call it on a thread of ours only."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from dataclasses import dataclass

from ..git import GitError, run_git

BRANCH_PREFIX = "qwen/"
MAX_NAME_LENGTH = 40
# Checking out a large repository takes a while; reading refs does not.
ADD_TIMEOUT = 300.0
_QUERY_LIMIT = 1024 * 1024
_INDEX_LIMIT = 256 * 1024 * 1024  # `ls-files --stage` of a very large repository (about 100 bytes a file)
# Short and safe as a folder name on every system and as a ref (check-ref-format):
# letters, digits, ".", "_", "-"; starting with a letter or digit.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_WINDOWS_DEVICES = {"con", "prn", "aux", "nul", *(f"com{n}" for n in range(1, 10)), *(f"lpt{n}" for n in range(1, 10))}


class WorktreeRefused(Exception):
    """What was asked cannot be done; the message says why, for the user. Nothing was created."""


@dataclass(frozen=True)
class Worktree:
    name: str
    path: str  # its folder
    branch: str  # qwen/<name>
    repository: str  # the main working tree's top folder
    base: str = ""  # the commit it was made from: what its changes are against


def name_problem(name: str) -> str | None:
    """Why `name` cannot name a worktree (None: it can)."""
    if not name:
        return "give the task a name"
    if len(name) > MAX_NAME_LENGTH:
        return f"a name has at most {MAX_NAME_LENGTH} characters"
    if not _NAME.fullmatch(name):
        return "a name has only letters, digits, '.', '_' and '-', and starts with a letter or digit"
    if ".." in name or name.endswith((".", ".lock")):
        return "a name cannot hold '..' or end with '.' or '.lock'"
    if name.split(".")[0].lower() in _WINDOWS_DEVICES:
        return f"“{name}” is a device name on Windows"
    return None


def repository_folder(worktrees_folder: str, repository: str) -> str:
    """Where the worktrees of `repository` go: its folder name plus a short
    hash of its path (two checkouts named alike stay apart)."""
    top = os.path.normcase(os.path.realpath(repository))
    digest = hashlib.sha256(top.encode("utf-8", "surrogateescape")).hexdigest()[:10]
    return os.path.join(worktrees_folder, f"{os.path.basename(top) or 'repository'}-{digest}")


def _inside(path: str, folder: str) -> bool:
    try:
        return os.path.commonpath([os.path.normcase(path), os.path.normcase(folder)]) == os.path.normcase(folder)
    except ValueError:  # another drive on Windows
        return False


def _text(folder: str, args: list[str], *, git: str | None) -> tuple[int, str]:
    output = run_git(folder, args, limit=_QUERY_LIMIT, git=git)
    return output.returncode, output.stdout.decode("utf-8", "surrogateescape").strip()


def repository_of(folder: str, *, git: str | None = None) -> str:
    """The main working tree's top folder of the repository `folder` is in
    (also from inside one of its worktrees); refused when it is in none."""
    if not os.path.isdir(folder):
        raise WorktreeRefused(f"{folder} is not a folder")
    code, top = _text(folder, ["rev-parse", "--show-toplevel"], git=git)
    if code != 0 or not top:
        raise WorktreeRefused(f"{folder} is not in a git repository")
    worktrees = _worktree_records(top, git)
    return os.path.normpath(worktrees[0].get("worktree") or top) if worktrees else os.path.normpath(top)


def _worktree_records(folder: str, git: str | None) -> list[dict[str, str]]:
    """`git worktree list`, the main working tree first: each record's fields by name."""
    code, porcelain = _text(folder, ["worktree", "list", "--porcelain", "-z"], git=git)
    records = []
    for record in porcelain.split("\0\0") if code == 0 else []:
        fields = dict(line.partition(" ")[::2] for line in record.split("\0") if line)
        if fields:
            records.append(fields)
    return records


def _branch_names(repository: str, git: str | None) -> list[str]:
    code, listed = _text(repository, ["for-each-ref", "--format=%(refname:short)", f"refs/heads/{BRANCH_PREFIX}"],
                         git=git)
    return listed.splitlines() if code == 0 else []


def _dirty_submodules(repository: str, git: str | None) -> list[str]:
    """Submodules whose checkout differs from the commit the repository
    records, or holds changes: a worktree would not have that work. Each is
    asked in its own folder, so the runner empties its own filter drivers."""
    listing = run_git(repository, ["ls-files", "--stage", "-z"], limit=_INDEX_LIMIT, git=git)
    if listing.truncated:
        raise WorktreeRefused("the repository's index is too large to check its submodules")
    staged = listing.stdout.decode("utf-8", "surrogateescape")
    dirty = []
    for entry in staged.split("\0") if listing.returncode == 0 else []:
        mode_and_hash, _, path = entry.partition("\t")
        mode, _, recorded = mode_and_hash.partition(" ")
        if mode != "160000":
            continue
        folder = os.path.join(repository, path)
        head_code, head = _text(folder, ["rev-parse", "HEAD"], git=git) if os.path.isdir(folder) else (1, "")
        if head_code != 0:
            continue  # not checked out: nothing of the user's is in it
        status = run_git(folder, ["status", "--porcelain", "--ignore-submodules=all"], limit=_QUERY_LIMIT, git=git,
                         may_filter=True)
        if not head.startswith(recorded.split()[0]) or status.returncode != 0 or status.stdout.strip():
            dirty.append(path)
    return dirty


def create(folder: str, name: str, worktrees_folder: str, *, git: str | None = None) -> Worktree:
    """A new worktree named `name` of the repository `folder` is in, on the
    new branch qwen/<name> at HEAD, in a folder under `worktrees_folder`.
    WorktreeRefused (nothing created) when it cannot be."""
    problem = name_problem(name)
    if problem is not None:
        raise WorktreeRefused(f"“{name}”: {problem}")
    try:
        repository = repository_of(folder, git=git)
        branch = BRANCH_PREFIX + name  # a valid ref: name_problem allows no name check-ref-format refuses
        code, base = _text(repository, ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], git=git)
        if code != 0:
            raise WorktreeRefused(f"{repository} has no commit yet: commit once, then make a worktree")
        # Compared without case: on macOS and Windows "Fix" and "fix" are one folder (and one loose ref).
        if name.lower() in (used.removeprefix(BRANCH_PREFIX).lower() for used in _branch_names(repository, git)):
            raise WorktreeRefused(f"the branch {branch} already exists: choose another name")
        parent = repository_folder(worktrees_folder, repository)
        if _inside(os.path.realpath(parent), os.path.realpath(repository)):
            raise WorktreeRefused(f"the worktrees folder {worktrees_folder} is inside the repository: "
                                  "choose a folder outside it (the worktrees_folder setting)")
        path = os.path.join(parent, name)
        taken = os.listdir(parent) if os.path.isdir(parent) else []
        if name.lower() in (each.lower() for each in taken):
            raise WorktreeRefused(f"{path} already exists: choose another name")
        dirty = _dirty_submodules(repository, git)
        if dirty:
            raise WorktreeRefused(f"the submodule {dirty[0]} has changes or another commit checked out: "
                                  "commit them in the repository first")
        os.makedirs(parent, exist_ok=True)
        # From the commit read above: HEAD may move meanwhile, the recorded base may not.
        added = run_git(repository, ["worktree", "add", "--quiet", "-b", branch, path, base], limit=_QUERY_LIMIT,
                        git=git, timeout=ADD_TIMEOUT, may_filter=True)
    except GitError as error:
        raise WorktreeRefused(f"git: {error}") from None
    if added.returncode != 0:
        _remove(repository, path, branch, git)  # what git left of it
        shutil.rmtree(path, ignore_errors=True)  # the folder was not there before: all in it is git's
        raise WorktreeRefused(f"git could not make the worktree (git worktree add ended with {added.returncode})")
    return Worktree(name, path, branch, repository, base)


def base_of(repository: str, branch: str, git: str | None) -> str:
    """The commit `branch` was made from: the oldest entry of its reflog (git
    writes "branch: Created from ..." there), else where it meets HEAD; ""
    when neither is known."""
    code, entries = _text(repository, ["reflog", "show", "--format=%H", f"refs/heads/{branch}", "--"], git=git)
    oldest = entries.splitlines()[-1] if code == 0 and entries else ""
    if oldest:
        return oldest
    code, meeting = _text(repository, ["merge-base", "HEAD", f"refs/heads/{branch}"], git=git)
    return meeting if code == 0 else ""


def _remove(repository: str, path: str, branch: str, git: str | None) -> None:
    if os.path.isdir(path):
        run_git(repository, ["worktree", "remove", "--force", path], limit=_QUERY_LIMIT, git=git)
    run_git(repository, ["worktree", "prune"], limit=_QUERY_LIMIT, git=git)
    if branch in _branch_names(repository, git):
        run_git(repository, ["branch", "-D", branch], limit=_QUERY_LIMIT, git=git)


def discard(worktree: Worktree, *, git: str | None = None) -> None:
    """Remove the worktree's folder (changes in it included) and its branch.
    WorktreeRefused when git leaves either behind."""
    try:
        _remove(worktree.repository, worktree.path, worktree.branch, git)
        left = os.path.isdir(worktree.path) or worktree.branch in _branch_names(worktree.repository, git)
    except GitError as error:
        raise WorktreeRefused(f"git: {error}") from None
    if left:
        raise WorktreeRefused(f"git left {worktree.path} or the branch {worktree.branch} behind")


def listed(folder: str, worktrees_folder: str, *, git: str | None = None) -> list[Worktree]:
    """The package's worktrees of the repository `folder` is in: those git
    knows on a qwen/ branch in the repository's subfolder of `worktrees_folder`
    (also one whose folder was removed by hand: git lists it as prunable
    until Discard prunes it and deletes its branch)."""
    try:
        repository = repository_of(folder, git=git)
        parent = os.path.normcase(os.path.realpath(repository_folder(worktrees_folder, repository)))
        found = []
        for fields in _worktree_records(repository, git):
            path, branch = fields.get("worktree", ""), fields.get("branch", "").removeprefix("refs/heads/")
            if (branch.startswith(BRANCH_PREFIX) and path
                    and os.path.normcase(os.path.dirname(os.path.realpath(path))) == parent):
                found.append(Worktree(branch.removeprefix(BRANCH_PREFIX), os.path.normpath(path), branch, repository,
                                      base_of(repository, branch, git)))
    except GitError as error:
        raise WorktreeRefused(f"git: {error}") from None
    return found
