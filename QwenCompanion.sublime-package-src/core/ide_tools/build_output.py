"""`get_build_output`: the tail of Sublime's build panel and the errors in
it, found as Sublime finds them: each line against the build system's
`file_regex` (file, line, column, message), else its `line_regex` (line,
column, message) under the last file named above, relative paths joined to
the panel's `result_base_dir` (Default's exec.py sets the three).

A build's output and its regexes come from the project: both are data,
bounded like an agent's (the lines cut, the regexes checked by
`search_patterns` and matched on at most `REGEX_LINE_CHARS` of a line), and
this runs on a thread of ours.
"""

from __future__ import annotations

import os
import re

from .. import threads
from ..json_types import JsonObject
from .answers import ToolRefusal
from .search_patterns import REGEX_LINE_CHARS, compile_query

MAX_LINES = 2000
MAX_LINE_CHARS = 500
MAX_OUTPUT_CHARS = 48 * 1024  # the lines' share of the answer
MAX_ERRORS = 200


def _regex(source: object, name: str, notes: list[str]) -> re.Pattern[str] | None:
    if not isinstance(source, str) or not source:
        return None
    try:
        return compile_query(source, regex=True, case_sensitive=True)
    except ToolRefusal as refusal:
        notes.append(f"the build system's {name} was not used: {refusal}")
        return None


def _group(found: re.Match[str], index: int) -> str | None:
    return found.group(index) if found.re.groups >= index else None


def _number(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdigit() and len(value) < 10 else None


@threads.may_block  # the project's regexes: never Sublime's threads
def build_output(text: str, file_regex: object, line_regex: object, base_dir: object) -> JsonObject:
    """The panel's last MAX_LINES lines and the errors in them."""
    notes: list[str] = []
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) > MAX_LINES:
        notes.append(f"the first {len(lines) - MAX_LINES} lines are left out")
        lines = lines[-MAX_LINES:]
    lines = [line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + "…" for line in lines]
    errors = _errors(lines, _regex(file_regex, "file_regex", notes), _regex(line_regex, "line_regex", notes),
                     base_dir if isinstance(base_dir, str) else "")
    if len(errors) > MAX_ERRORS:
        notes.append(f"only the first {MAX_ERRORS} of {len(errors)} errors are listed")
        errors = errors[:MAX_ERRORS]
    shown = "\n".join(lines)
    if len(shown) > MAX_OUTPUT_CHARS:
        shown = shown[-MAX_OUTPUT_CHARS:].split("\n", 1)[-1]
        notes.append(f"the output is cut to its last {MAX_OUTPUT_CHARS // 1024} KB")
    answer: JsonObject = {"output": shown, "errors": errors}
    if notes:
        answer["note"] = "; ".join(notes)
    return answer


def _errors(lines: list[str], file_regex: re.Pattern[str] | None, line_regex: re.Pattern[str] | None,
            base_dir: str) -> list[JsonObject]:
    found: list[JsonObject] = []
    current_file: str | None = None
    for line in lines:
        by_file = file_regex.search(line, 0, REGEX_LINE_CHARS) if file_regex is not None else None
        if by_file is not None and _group(by_file, 1):
            current_file = _group(by_file, 1)
            row, column, message = _group(by_file, 2), _group(by_file, 3), _group(by_file, 4)
        else:
            by_line = line_regex.search(line, 0, REGEX_LINE_CHARS) if line_regex is not None else None
            if by_line is None or current_file is None:
                continue
            row, column, message = _group(by_line, 1), _group(by_line, 2), _group(by_line, 3)
        assert current_file is not None
        path = current_file if os.path.isabs(current_file) or not base_dir else os.path.join(base_dir, current_file)
        error: JsonObject = {"abspath": os.path.normpath(path), "line": _number(row), "column": _number(column),
                             "message": (message or "").strip()}
        found.append(error)
    return found
