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
`MAX_OPEN_REPEATS` unbounded quantifiers in a row that can match the same
text (`.*a.*b.*c.*d` is polynomial of that degree in the line's length). A plain text query is escaped: linear.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .answers import ToolRefusal

MAX_PATTERN_CHARS = 1000
MAX_OPEN_REPEATS = 3
REGEX_LINE_CHARS = 1000  # a regex sees this much of each line: its worst case stays bounded

_parser: Any = re._parser  # type: ignore[attr-defined]  # the stdlib's own parser (sre_parse): the pattern's real shape
_REPEATS = {"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"}
_BACKREFERENCES = {"GROUPREF", "GROUPREF_EXISTS"}
_GROUPS = {"SUBPATTERN", "ASSERT", "ASSERT_NOT", "ATOMIC_GROUP"}


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
    pending: list[tuple[Any, bool]] = [(parsed, False)]  # (sub-pattern, inside a repeat)
    while pending:
        pattern, in_repeat = pending.pop()
        for op, value in pattern:
            name = str(op)
            if name in _BACKREFERENCES:
                return "it uses a backreference"
            if name in _REPEATS:
                _low, high, body = value
                if in_repeat and high > 1:
                    return "it nests a quantifier inside a quantifier"
                repeats = high > 1
                if repeats and _branches(body):
                    return "it repeats an alternation"
                pending.append((body, in_repeat or repeats))
            elif name == "BRANCH":
                pending.extend((branch, in_repeat) for branch in value[1])
            elif name in _GROUPS:
                pending.append((value[-1], in_repeat))
    run = _longest_run(parsed)
    if run > MAX_OPEN_REPEATS:
        return (f"it has {run} unbounded quantifiers in a row that can match the same text "
                f"(at most {MAX_OPEN_REPEATS})")
    return None


def _flat(pattern: Any) -> list[tuple[str, Any]]:
    """The sequence with its groups' contents inline."""
    items: list[tuple[str, Any]] = []
    for op, value in pattern:
        name = str(op)
        if name in ("SUBPATTERN", "ATOMIC_GROUP"):
            items.extend(_flat(value[-1]))
        else:
            items.append((name, value))
    return items


def _unbounded_bodies(pattern: Any) -> list[Any]:
    found = []
    for name, value in _flat(pattern):
        if name in _REPEATS:
            if value[1] == _parser.MAXREPEAT:
                found.append(value[2])
            found.extend(_unbounded_bodies(value[2]))
        elif name == "BRANCH":
            for branch in value[1]:
                found.extend(_unbounded_bodies(branch))
    return found


def _longest_run(pattern: Any) -> int:
    """The most unbounded quantifiers one after another with nothing between
    them that all of them would have to give way to: `.*a.*b` is a run of
    two, `[^:]*:[0-9]+` two runs of one (`[^:]` cannot match the `:`)."""
    run: list[Any] = []
    longest = 0
    for name, value in _flat(pattern):
        if name == "LITERAL":
            if not any(_may_match(body, chr(value)) for body in run):
                run = []
        elif name in _REPEATS or name == "BRANCH":
            run.extend(_unbounded_bodies([(getattr(_parser, name), value)]))
        longest = max(longest, len(run))
    return longest


def _may_match(body: Any, char: str) -> bool:
    """Whether a repeated element could match `char` (True when unsure)."""
    items = _flat(body)
    if len(items) != 1:
        return True
    name, value = items[0]
    if name == "LITERAL":
        return chr(value) == char
    if name == "NOT_LITERAL":
        return chr(value) != char
    if name == "IN":
        return _in_set(value, char)
    return True


def _in_set(members: Any, char: str) -> bool:
    negated = False
    hit = False
    for op, value in members:
        name = str(op)
        if name == "NEGATE":
            negated = True
        elif name == "LITERAL":
            hit = hit or chr(value) == char
        elif name == "RANGE":
            hit = hit or value[0] <= ord(char) <= value[1]
        elif name == "CATEGORY":
            category = _CATEGORIES.get(str(value))
            hit = hit or category is None or category(char)
        else:
            return True
    return hit != negated


_CATEGORIES: dict[str, Callable[[str], bool]] = {
    "CATEGORY_DIGIT": str.isdigit, "CATEGORY_NOT_DIGIT": lambda c: not c.isdigit(),
    "CATEGORY_SPACE": str.isspace, "CATEGORY_NOT_SPACE": lambda c: not c.isspace(),
    "CATEGORY_WORD": lambda c: c.isalnum() or c == "_", "CATEGORY_NOT_WORD": lambda c: not (c.isalnum() or c == "_"),
}


def _branches(pattern: Any) -> bool:
    return any(name == "BRANCH" for name, _value in _flat(pattern))
