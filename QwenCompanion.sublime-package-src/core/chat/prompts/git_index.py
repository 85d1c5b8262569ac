"""A file's text as git's index (the staging area) holds it: what Sublime's
diff gutter compares a file of a repository with, so Keep gives a view that
reference back."""

from __future__ import annotations

import os

from ... import threads
from ...files.agent_files import MAX_FILE_BYTES, decode
from ...files.encodings import DEFAULT_FALLBACK
from ...git import GitError, run_git

GIT_TIMEOUT = 5.0


@threads.may_block
def index_text(path: str, git: str | None, *, timeout: float = GIT_TIMEOUT,
               fallback_encoding: str = DEFAULT_FALLBACK) -> str | None:
    """`path`'s staged text (newlines as "\\n"), or None: no `git`, the file is
    not in a repository or not in its index, or git gave no answer within
    `timeout` seconds. git runs through the hardened runner (core/git.py) in
    the file's folder and names it `:./<name>` (a path relative to that
    folder, in git's own syntax). `cat-file blob` prints the bytes as stored:
    no textconv or filter command of the repository's config runs."""
    if git is None:
        return None
    folder, name = os.path.split(path)
    try:
        done = run_git(folder or os.curdir, ["cat-file", "blob", f":./{name}"], limit=MAX_FILE_BYTES,
                       git=git, timeout=timeout)
    except GitError:
        return None
    if done.returncode != 0 or done.truncated:
        return None
    return decode(done.stdout, fallback_encoding).text
