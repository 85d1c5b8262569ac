"""The privacy filter (`ContextOptions.excludes`) as git pathspecs, so that
`git grep` can start at once and still never open an excluded file: no
listing of the tracked files has to be read and checked first.

`excludes` matches each lowered pattern, with `fnmatch`, against the file's
lowered name and against its lowered absolute path (where `*` also matches
`/`). Translated only for patterns made of ASCII characters and `*` (the
defaults are), where git can be told exactly those files:

- a path: the folder's own part is matched here, and what the path inside
  the folder must still match becomes `:(exclude,icase)REST` (`*` crosses
  `/`, as in fnmatch; git puts the folder's place in the repository before it);
- a name: `*/NAME` and `NAME` when it holds no `*`, else
  `:(exclude,glob,icase)**/NAME` (glob: `*` stays within the name); nothing
  when it starts with `*` (the path's `*NAME` already holds it);
- git would take a pattern with no wildcard for a folder too (and exclude
  what is in it): one of its letters is written as a bracket, `[v]`;
- git folds case in ASCII only, while Python's `lower()` also turns KELVIN
  SIGN into `k` and `İ` into `i` and a combining dot: a pattern's `k`, and
  its `i` before a `*`, are also given in those spellings.

None for any other pattern (a `?`, a bracket, a letter outside ASCII): the
caller lists the tracked files and asks `excludes` of each instead."""

from __future__ import annotations

import itertools
import os

_NOT_TRANSLATED = frozenset("?[]")
# Every non-ASCII character whose `str.lower()` holds an ASCII letter (all of
# Unicode), under the letter it stands for in a lowered pattern.
_LOWERED_FROM = {"k": "\u212a", "i": "\u0130"}
MAX_SPELLINGS = 16  # of one pattern; more and the caller checks each file itself


def excluding_pathspecs(patterns: tuple[str, ...], folder: str) -> list[str] | None:
    """Pathspecs for `git -C folder` that exclude exactly the files of
    `folder` that `ContextOptions(excluded_patterns=patterns).excludes`
    does; None when a pattern is outside what the module translates."""
    lowered = [pattern.replace("\\", "/").lower() for pattern in patterns if pattern]
    if not all(pattern.isascii() and not _NOT_TRANSLATED & set(pattern) for pattern in lowered):
        return None
    base = os.path.normpath(folder).replace("\\", "/").lower().rstrip("/") + "/"
    specs: set[str] = set()
    for pattern in lowered:
        for magic, spec in [*_names(pattern), *(("icase", rest) for rest in _rests(pattern, base))]:
            spellings = _spellings(spec)
            if spellings is None:
                return None
            for spelling in spellings:
                written = spelling if "*" in spelling else _bracketed(spelling)
                if written is None:
                    return None
                specs.add(f":(exclude,{magic}){written}")
    return sorted(specs)


def _names(pattern: str) -> list[tuple[str, str]]:
    """(magic, pattern) for the files whose name matches `pattern`."""
    if "/" in pattern or pattern.startswith("*"):
        return []  # a name holds no "/"; a leading "*" is in the path's rests
    if "*" not in pattern:
        return [("icase", f"*/{pattern}"), ("icase", pattern)]  # one star: git compares the end
    return [("glob,icase", f"**/{pattern}")]


def _rests(pattern: str, consumed: str) -> set[str]:
    """What a path must match after `consumed` for the whole to match
    `pattern` (`*` matching any run of characters, the rest themselves),
    less the rests a `*` just before them already holds."""
    states = _past_stars({0}, pattern)
    for char in consumed:
        states = _past_stars({index + (pattern[index] != "*") for index in states
                              if index < len(pattern) and pattern[index] in ("*", char)}, pattern)
    return {pattern[index:] for index in states
            if index < len(pattern) and not (index > 0 and pattern[index - 1] == "*" and index - 1 in states)}


def _past_stars(states: set[int], pattern: str) -> set[int]:
    """`states` and every place after a run of `*` at them (a star may match nothing)."""
    reached = set(states)
    for state in states:
        index = state
        while index < len(pattern) and pattern[index] == "*":
            index += 1
            reached.add(index)
    return reached


def _spellings(pattern: str) -> list[str] | None:
    """`pattern` with each `k`, and each `i` before a `*`, also in the
    non-ASCII spelling that lowers to it; None past MAX_SPELLINGS."""
    choices = []
    for index, char in enumerate(pattern):
        folds = char == "k" or (char == "i" and pattern[index + 1 : index + 2] == "*")
        choices.append((char, _LOWERED_FROM[char]) if folds else (char,))
    count = 1
    for choice in choices:
        count *= len(choice)
    if count > MAX_SPELLINGS:
        return None
    return ["".join(spelling) for spelling in itertools.product(*choices)]


def _bracketed(pattern: str) -> str | None:
    """`pattern` with its last ASCII letter or digit as a bracket: matched as
    a pattern by git, not as a path (with the folder it might name)."""
    for index in range(len(pattern) - 1, -1, -1):
        if pattern[index].isascii() and pattern[index].isalnum():
            return f"{pattern[:index]}[{pattern[index]}]{pattern[index + 1:]}"
    return None
