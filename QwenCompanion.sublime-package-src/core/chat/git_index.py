"""A file's text as git's index (the staging area) holds it: what Sublime's
diff gutter compares a file of a repository with, so Keep gives a view that
reference back. Blocking (it runs git): a thread of ours only."""

from __future__ import annotations

import os
import subprocess

from ..encodings import DEFAULT_FALLBACK
from .agent_files import MAX_FILE_BYTES, decode

GIT_TIMEOUT = 5.0


def index_text(path: str, git: str | None, *, timeout: float = GIT_TIMEOUT,
               fallback_encoding: str = DEFAULT_FALLBACK) -> str | None:
    """`path`'s staged text (newlines as "\\n"), or None: no `git`, the file is
    not in a repository or not in its index, or git gave no answer within
    `timeout` seconds. No shell; git runs in the file's folder and names it
    `:./<name>` (a path relative to that folder, in git's own syntax).
    `cat-file blob` prints the bytes as stored: no textconv or filter
    command of the repository's config runs, and fsmonitor is off."""
    if git is None:
        return None
    folder, name = os.path.split(path)
    argv = [git, "-c", "core.fsmonitor=false", "-C", folder or os.curdir, "cat-file", "blob", f":./{name}"]
    try:
        done = subprocess.run(
            argv, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},  # a read never takes the index's lock
            creationflags=getattr(subprocess, "CREATE_NO_WINDOW", 0),
        )
    except (subprocess.TimeoutExpired, OSError):
        return None
    if done.returncode != 0 or len(done.stdout) > MAX_FILE_BYTES:
        return None
    return decode(done.stdout, fallback_encoding).text
