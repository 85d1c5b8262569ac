"""An agent's search pattern, made safe to run in the plugin host.

Python's `re` holds the interpreter while it matches and cannot be stopped:
one catastrophic pattern would freeze every package, the editor's main
thread included. A subprocess could be killed, but Sublime's plugin host has
no Python to start and git's regex dialects are not Python's. So the
pattern is bounded where it runs (see `project_search`: a thread of ours,
the deadline checked between files and lines, a regex matched on at most
`REGEX_LINE_CHARS` of a line) and refused before it runs when its shape
can backtrack without bound: a quantifier over something that itself
repeats or branches (`(a+)+`, `(a|aa)*`), a backreference, or more than
`MAX_OPEN_REPEATS` unbounded quantifiers (`.*a.*b.*c.*d` is polynomial of
that degree in the line's length). A plain text query is escaped: linear.
"""

from __future__ import annotations

import re
from typing import Any

from .answers import ToolRefusal

MAX_PATTERN_CHARS = 1000
MAX_OPEN_REPEATS = 3
REGEX_LINE_CHARS = 1000  # a regex sees this much of each line: its worst case stays bounded

_parser: Any = re._parser  # type: ignore[attr-defined]  # the stdlib's own parser (sre_parse): the pattern's real shape
_REPEATS = {"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"}
_BACKREFERENCES = {"GROUPREF", "GROUPREF_EXISTS"}


def compile_query(query: str, *, regex: bool, case_sensitive: bool) -> re.Pattern[str]:
    """The query as a compiled pattern; ToolRefusal with the reason when it is
    not valid or could run unbounded."""
    if len(query) > MAX_PATTERN_CHARS:
        raise ToolRefusal(f"the query is longer than {MAX_PATTERN_CHARS} characters")
    flags = 0 if case_sensitive else re.IGNORECASE
    if not regex:
        return re.compile(re.escape(query), flags)
    try:
        parsed = _parser.parse(query, flags)
    except re.error as error:
        raise ToolRefusal(f"the regex is not valid: {error}") from None
    danger = dangerous_shape(parsed)
    if danger is not None:
        raise ToolRefusal(f"the regex is refused: {danger}, which can take unbounded time; simplify it")
    return re.compile(query, flags)


def dangerous_shape(parsed: Any) -> str | None:
    """Why a parsed pattern may backtrack without bound, or None."""
    open_repeats = 0
    pending: list[tuple[Any, bool]] = [(parsed, False)]  # (sub-pattern, inside a repeat)
    while pending:
        pattern, in_repeat = pending.pop()
        for op, value in pattern:
            name = str(op)
            if name in _BACKREFERENCES:
                return "it uses a backreference"
            if name in _REPEATS:
                _low, high, body = value
                if high == _parser.MAXREPEAT:
                    open_repeats += 1
                if in_repeat and high > 1:
                    return "it nests a quantifier inside a quantifier"
                repeats = high > 1
                if repeats and _branches(body):
                    return "it repeats an alternation"
                pending.append((body, in_repeat or repeats))
            elif name == "SUBPATTERN":
                pending.append((value[-1], in_repeat))
            elif name == "BRANCH":
                pending.extend((branch, in_repeat) for branch in value[1])
            elif name in ("ASSERT", "ASSERT_NOT", "ATOMIC_GROUP"):
                pending.append((value[-1] if isinstance(value, tuple) else value, in_repeat))
    if open_repeats > MAX_OPEN_REPEATS:
        return f"it has {open_repeats} unbounded quantifiers (at most {MAX_OPEN_REPEATS})"
    return None


def _branches(pattern: Any) -> bool:
    for op, value in pattern:
        name = str(op)
        if name == "BRANCH":
            return True
        if name == "SUBPATTERN" and _branches(value[-1]):
            return True
    return False
