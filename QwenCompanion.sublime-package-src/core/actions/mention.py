"""The file reference Send Selection to Terminal types into qwen's prompt.

qwen 0.24.4's at-command (`parseAllAtCommands` in its atCommandProcessor)
takes everything after `@` up to an unescaped blank, `,;!?()[]{}` or a
final `.` as a path, resolved against its first workspace folder, and
reads the whole file; it has no line-range syntax (`@f.py:3-7` or
`@f.py#L3-7` is a file that does not exist, so nothing is read). The
range therefore follows as words: `@src/f.py lines 3-7 `. On POSIX the
CLI unescapes `\\` before blanks and shell characters, so those are
escaped; on Windows it takes the path as written.
"""

from __future__ import annotations

import os
import re

# The characters the CLI's escapePath escapes (SHELL_SPECIAL_CHARS).
SHELL_SPECIAL = re.compile(r"""([ \t()\[\]{};|*?$`'"#&<>!~,])""")


def file_mention(path: str, folder: str | None, first_line: int, last_line: int, *, windows: bool) -> str:
    """`@<path relative to folder>` and its 1-based lines, with a blank after
    it so the user types on; `first_line` 0 names the whole file."""
    name = os.path.relpath(path, folder) if folder is not None and _inside(path, folder) else path
    if not windows:
        name = SHELL_SPECIAL.sub(r"\\\1", name)
    if first_line <= 0:
        return f"@{name} "
    if last_line <= first_line:
        return f"@{name} line {first_line} "
    return f"@{name} lines {first_line}-{last_line} "


def selected_lines(start: tuple[int, int], end: tuple[int, int]) -> tuple[int, int]:
    """The 1-based first and last line of a selection from `start` to `end`
    (0-based row and column, as Sublime's `rowcol` gives them); (0, 0) when
    it is empty. A selection ending at a line's start does not take that line."""
    if start >= end:
        return 0, 0
    last = end[0] if end[1] > 0 else end[0] - 1
    return start[0] + 1, max(start[0], last) + 1


def _inside(path: str, folder: str) -> bool:
    path, folder = (os.path.normcase(os.path.abspath(p)) for p in (path, folder))
    try:
        return os.path.commonpath([path, folder]) == folder
    except ValueError:  # another drive
        return False
