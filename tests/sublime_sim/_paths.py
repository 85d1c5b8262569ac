"""How Sublime matches and finds files on each platform (the path modes).

- Linux ("linux"): paths are compared as spelled (after `abspath`); the
  file system is case-sensitive.
- macOS ("osx"): a file opened with another case is the file already open
  (sublimehq/sublime_text#3994: Sublime matches case-insensitively there) and
  the file system ignores case (APFS's default), so `a.TXT` loads `a.txt`.
  Symlinks such as `/var` → `/private/var` are not resolved: a file opened
  through one gets a tab of its own (sublimehq/sublime_text#5408).
- Windows ("windows"): like macOS for case (NTFS ignores it; Sublime matches
  `c:\\x` with `C:\\X`), and `/` and `\\` are the same separator.

The simulated files live on the test machine's disk, so paths keep its
syntax (no drive letters); the package's own rules for drive letters and
`\\` are unit-tested with the Windows path flavour.
"""

from __future__ import annotations

import ntpath
import os
import unicodedata


def open_file_key(path: str, platform: str) -> str:
    """The key under which Sublime finds an open file."""
    path = os.path.abspath(path)
    if platform == "windows":
        return ntpath.normcase(path)
    if platform == "osx":
        return unicodedata.normalize("NFC", path).casefold()
    return path


def on_disk(path: str, platform: str) -> str:
    """The existing file `path` names on this platform: on a case-insensitive
    file system, its real spelling when only the case differs."""
    if platform == "linux" or os.path.exists(path):
        return path
    head, tail = os.path.split(os.path.abspath(path))
    if not tail or head == path:
        return path
    parent = on_disk(head, platform)
    try:
        names = os.listdir(parent)
    except OSError:
        return os.path.join(parent, tail)
    wanted = open_file_key(tail, platform)
    match = next((name for name in names if open_file_key(name, platform) == wanted), tail)
    return os.path.join(parent, match)
