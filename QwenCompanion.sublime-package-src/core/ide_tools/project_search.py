"""`search_project`: a text search over the window's folders, as the user
sees them, bounded in every dimension.

Which files: inside a git repository, the ones git lists (`ls-files -c`
and `ls-files -o --exclude-standard`, so `.gitignore` holds; `git_folder`),
the tracked ones searched by `git grep` itself for a plain text query (the
hardened runner, `-F`: the same matches as the escaped pattern, at git's
speed, in a process the deadline can end and the search ends once its
answer is full); outside one, a walk that skips Sublime's
`folder_exclude_patterns`, `file_exclude_patterns` and
`binary_file_patterns`. Everywhere: files open
with unsaved text are searched in that text instead, files matching
`excluded_file_patterns` are neither read nor answered, only regular files
are read (no FIFO, device or socket: opening one could block), a symlink is
followed only to a file inside the folders, and a file with a NUL byte in its
first 8,000 bytes (git's test) is binary and skipped.

Runs on a thread of ours (never Sublime's main or worker thread); how the
agent's regex is bounded is `search_patterns`' doc.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from .. import git, threads
from ..context_rules import ContextOptions
from ..files.paths import is_within
from .git_folder import GitFolder
from .privacy_pathspecs import excluding_pathspecs
from .search_patterns import REGEX_LINE_CHARS

SEARCH_SECONDS = 10.0
DEFAULT_MAX_RESULTS = 200
MAX_LINE_CHARS = 200  # of each result's text
MAX_ANSWER_BYTES = 64 * 1024
MAX_FILE_BYTES = 4 * 1024 * 1024  # a bigger file is passed over (minified bundles, dumps)
BINARY_SNIFF_BYTES = 8000


@dataclass(frozen=True)
class SublimePatterns:
    """Sublime's own file filters, applied outside a repository."""

    folder_exclude: tuple[str, ...] = ()
    file_exclude: tuple[str, ...] = ()
    binary: tuple[str, ...] = ()

    def skips_folder(self, name: str) -> bool:
        return any(fnmatch.fnmatch(name, pattern) for pattern in self.folder_exclude)

    def skips_file(self, name: str) -> bool:
        return any(fnmatch.fnmatch(name, pattern) for pattern in (*self.file_exclude, *self.binary))


@dataclass(frozen=True)
class SearchQuery:
    pattern: re.Pattern[str]
    literal: str | None  # the text itself when the query is not a regex (git grep -F)
    glob: str | None = None
    max_results: int = DEFAULT_MAX_RESULTS


@dataclass(frozen=True)
class SearchScope:
    folders: list[str]
    unsaved: dict[str, str]  # path -> the open view's text, for views with unsaved changes
    privacy: ContextOptions
    sublime_patterns: SublimePatterns = SublimePatterns()
    seconds: float = SEARCH_SECONDS


@dataclass
class _Answer:
    """The result lines, bounded as the module says."""

    max_results: int
    lines: list[str] = field(default_factory=list)
    size: int = 0
    full: bool = False  # max_results reached or MAX_ANSWER_BYTES
    cut_by_size: bool = False
    partial: str | None = None  # why the search stopped early
    places: list[tuple[str, int]] = field(default_factory=list)  # each line's (label, line number)
    seen: set[tuple[str, int]] = field(default_factory=set)

    def add(self, label: str, line: int, column: int, text: str) -> None:
        if not self.full and (label, line) not in self.seen:
            self._keep((label, line), f"{label}:{line}:{column}: {_shown(text, column)}")

    def take_from(self, other: _Answer) -> None:
        """`other`'s lines after these, within these bounds, and what cut it short."""
        for place, entry in zip(other.places, other.lines, strict=True):
            if self.full:
                break
            self._keep(place, entry)
        if other.full and not self.full:
            self.full, self.cut_by_size = True, other.cut_by_size
        if self.partial is None:
            self.partial = other.partial

    def _keep(self, place: tuple[str, int], entry: str) -> None:
        if len(self.lines) >= self.max_results:
            self.full = True
            return
        size = (len(entry) if entry.isascii() else len(entry.encode("utf-8", "surrogatepass"))) + 1
        if self.size + size > MAX_ANSWER_BYTES:
            self.full = self.cut_by_size = True
            return
        self.seen.add(place)
        self.places.append(place)
        self.lines.append(entry)
        self.size += size

    def text(self) -> str:
        notes = []
        if self.cut_by_size:
            notes.append(f"[cut: the answer reached {MAX_ANSWER_BYTES // 1024} KB; narrow the query or the glob]")
        elif self.full:
            notes.append(f"[cut at {self.max_results} matches; there are more: narrow the query or the glob]")
        if self.partial is not None:
            notes.append(f"[partial: {self.partial}]")
        if not self.lines and not notes:
            return "No matches."
        return "\n".join([*self.lines, *notes])


def _shown(text: str, column: int) -> str:
    """The line, at most MAX_LINE_CHARS of it, around the match."""
    text = text.rstrip("\r\n")
    if len(text) <= MAX_LINE_CHARS:
        return text
    start = max(0, min(column - 1 - MAX_LINE_CHARS // 4, len(text) - MAX_LINE_CHARS))
    shown = text[start : start + MAX_LINE_CHARS]
    return ("…" if start else "") + shown + ("…" if start + MAX_LINE_CHARS < len(text) else "")


class _Clock:
    def __init__(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds
        self.seconds = seconds

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def over(self) -> bool:
        return time.monotonic() >= self.deadline


@threads.may_block  # the agent's regex, the disk and git: never Sublime's threads
def search_project(query: SearchQuery, scope: SearchScope) -> str:
    """The matches as `path:line:column: text` lines (paths relative to their
    folder, prefixed with the folder's name when the window has several),
    with a last line saying when the answer was cut or the search partial."""
    answer = _Answer(query.max_results)
    clock = _Clock(scope.seconds)
    wanted = _Wanted(query.glob, scope.privacy)
    labels = _labels(scope.folders)
    gits = {folder: _git_folder(folder, query, wanted, clock) for folder in scope.folders}
    try:
        # git grep's answers first, read as git writes them (the rest waits on them anyway)
        grepped = {folder: _git_grep(folder_git, query, labels[folder], wanted, set(scope.unsaved))
                   for folder, folder_git in gits.items() if folder_git.grep_started}
        _search_folders(query, scope, wanted, answer, clock, labels, gits, grepped)
    finally:
        for folder_git in gits.values():
            folder_git.close()
    return answer.text()


def _git_folder(folder: str, query: SearchQuery, wanted: _Wanted, clock: _Clock) -> GitFolder:
    """A word query has git grep start at once when git can be told which files are private."""
    excluding = wanted.pathspecs(folder) if query.literal is not None else None
    return GitFolder(folder, clock.left, None if excluding is None else _grep_args(query, excluding))


def _search_folders(query: SearchQuery, scope: SearchScope, wanted: _Wanted, answer: _Answer, clock: _Clock,
                    labels: dict[str, str], gits: dict[str, GitFolder], grepped: dict[str, _Answer]) -> None:
    unsaved = {path: text for path, text in scope.unsaved.items() if _folder_of(path, scope.folders) is not None}
    repositories = {folder: folder_git.is_repository() for folder, folder_git in gits.items()}
    ignored = _ignored_unsaved(unsaved, scope.folders, repositories)
    for path in sorted(unsaved):
        folder = _folder_of(path, scope.folders)
        assert folder is not None
        relative = _relative(path, folder)
        if path in ignored or not wanted(path, relative):
            continue
        if not repositories[folder] and _sublime_skips(relative, scope.sublime_patterns):
            continue
        _match_text(query, unsaved[path], labels[folder] + relative, answer, clock)
    for folder in scope.folders:
        if answer.full or answer.partial is not None:
            break
        label = labels[folder]
        if not repositories[folder]:
            _search_files(query, folder, label, _walk(folder, scope.sublime_patterns), scope, wanted, answer, clock)
            continue
        if query.literal is None:
            tracked = _tracked(gits[folder], answer)
            listed = sorted([*_names(tracked), *_untracked(gits[folder], answer)])
            _search_files(query, folder, label, listed, scope, wanted, answer, clock)
            continue
        # Tracked files by git grep (git's index and threads), the few
        # untracked ones here: `git grep --untracked` walks the folder again.
        found = grepped.get(folder) or _git_grep(gits[folder], query, label, wanted, set(unsaved))
        answer.take_from(found)
        _search_files(query, folder, label, _untracked(gits[folder], answer), scope, wanted, answer, clock)


def _search_files(query: SearchQuery, folder: str, label: str, files: Iterable[str], scope: SearchScope,
                  wanted: _Wanted, answer: _Answer, clock: _Clock) -> None:
    for relative in files:
        path = os.path.join(folder, relative)
        if answer.full or _out_of_time(answer, clock):
            return
        if path in scope.unsaved or not wanted(path, relative):
            continue
        text = _read(path, scope.folders)
        if text is not None:
            _match_text(query, text, label + relative, answer, clock)


class _Wanted:
    """The glob the agent gave, and the privacy filter (never read, never answered)."""

    def __init__(self, glob: str | None, privacy: ContextOptions) -> None:
        self._glob = glob
        self._privacy = privacy

    def __call__(self, path: str, relative: str) -> bool:
        if self._privacy.excludes(path):
            return False
        if self._glob is None:
            return True
        target = relative if "/" in self._glob else relative.rsplit("/", 1)[-1]
        return fnmatch.fnmatch(target, self._glob)

    def pathspecs(self, folder: str) -> list[str] | None:
        """The privacy filter as git pathspecs leaving out those files, where it translates exactly."""
        return excluding_pathspecs(self._privacy.excluded_patterns, folder)

    def private_among(self, folder: str, listing: str) -> list[str]:
        """The tracked files of `listing` (`ls-files -z`) that `ContextOptions.excludes`, in
        bulk (a search asks of every file git lists). A name or path a pattern
        matches holds the pattern's longest wildcard-free run: when every run
        is ASCII (lowered alike in a path and in the whole listing) and none
        can lie in the folder's own part of the path, the listing is searched
        for the runs in C, and only files holding one are asked."""
        prefix = folder.replace("\\", "/").rstrip("/").lower() + "/"
        patterns = [pattern.replace("\\", "/").lower() for pattern in self._privacy.excluded_patterns]
        runs = [_literal_run(pattern) for pattern in patterns]
        if all(run and run.isascii() and "/" not in pattern and run not in prefix
               for pattern, run in zip(patterns, runs, strict=True)):
            lowered = listing.lower()
            present = [run for run in runs if run in lowered]
            if not present:
                return []
            candidates = [relative for relative in _names(listing) if any(run in relative.lower() for run in present)]
        else:
            candidates = _names(listing)
        return [relative for relative in candidates if self._privacy.excludes(os.path.join(folder, relative))]


def _literal_run(pattern: str) -> str:
    """The longest part of an fnmatch pattern that every match holds as it is
    (only before a `[`: a bracket's contents are not literal)."""
    return max(re.split(r"[*?]", pattern.split("[", 1)[0]), key=len)


def _labels(folders: list[str]) -> dict[str, str]:
    if len(folders) == 1:
        return {folders[0]: ""}
    return {folder: os.path.basename(folder.rstrip("/\\")) + "/" for folder in folders}


def _folder_of(path: str, folders: list[str]) -> str | None:
    return next((folder for folder in folders if is_within(path, folder)), None)


def _relative(path: str, folder: str) -> str:
    return os.path.relpath(path, folder).replace(os.sep, "/")


def _out_of_time(answer: _Answer, clock: _Clock) -> bool:
    if clock.over() and answer.partial is None:
        answer.partial = f"the search took more than {clock.seconds:g} s; these are the matches found until then"
    return answer.partial is not None


def _match_text(query: SearchQuery, text: str, label: str, answer: _Answer, clock: _Clock) -> None:
    """The first match of each line of `text`, as `git grep -n` gives them."""
    pattern = query.pattern
    if query.literal is None:
        _match_lines(pattern, text, label, answer, clock)
        return
    # An escaped literal runs in linear time over the whole text: one pass in C.
    line, line_start, last_line = 1, 0, 0
    for found in pattern.finditer(text):
        if answer.full:
            return
        start = found.start()
        line += text.count("\n", line_start, start)
        line_start = text.rfind("\n", 0, start) + 1
        if line == last_line:
            continue
        last_line = line
        end = text.find("\n", start)
        answer.add(label, line, start - line_start + 1, text[line_start : end if end >= 0 else len(text)])
        line_start = start


def _match_lines(pattern: re.Pattern[str], text: str, label: str, answer: _Answer, clock: _Clock) -> None:
    """A regex, line by line on at most REGEX_LINE_CHARS of each, the clock
    read between lines: one line's worst case is bounded by the pattern's shape."""
    for number, line in enumerate(text.split("\n"), 1):
        if answer.full or (number % 256 == 0 and _out_of_time(answer, clock)):
            return
        found = pattern.search(line, 0, REGEX_LINE_CHARS)
        if found is not None:
            answer.add(label, number, found.start() + 1, line)


def _read(path: str, folders: list[str]) -> str | None:
    """A regular file's text, or None: not regular, a symlink out of the
    folders, too big, binary or unreadable."""
    try:
        if os.path.islink(path):
            target = os.path.realpath(path)
            if _folder_of(target, folders) is None:
                return None
            path = target
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            return None
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_FILE_BYTES or b"\0" in data[:BINARY_SNIFF_BYTES]:
        return None
    return data.decode("utf-8", "replace")


def _walk(folder: str, patterns: SublimePatterns) -> Iterator[str]:
    """Files under `folder` outside a repository, relative, in a stable order;
    symlinked folders are not entered."""
    for root, directories, files in os.walk(folder, followlinks=False):
        directories[:] = sorted(d for d in directories if not patterns.skips_folder(d))
        for name in sorted(files):
            if not patterns.skips_file(name):
                yield _relative(os.path.join(root, name), folder)


def _sublime_skips(relative: str, patterns: SublimePatterns) -> bool:
    *directories, name = relative.split("/")
    return patterns.skips_file(name) or any(patterns.skips_folder(d) for d in directories)


def _ignored_unsaved(unsaved: dict[str, str], folders: list[str], repositories: dict[str, bool]) -> set[str]:
    """The unsaved files git ignores (`.gitignore` holds for open files too)."""
    ignored: set[str] = set()
    for folder in folders:
        paths = [path for path in unsaved if repositories[folder] and _folder_of(path, folders) == folder]
        if not paths:
            continue
        try:
            # -z needs --stdin, which the runner does not give: one path a line, unquoted.
            output = git.run_git(folder, ["-c", "core.quotePath=false", "check-ignore", "--", *paths],
                                 limit=1024 * 1024)
        except git.GitError:
            continue
        names = output.stdout.decode("utf-8", "surrogateescape").splitlines()
        ignored.update(_absolute(folder, name) for name in names if name)
    return ignored


def _absolute(folder: str, name: str) -> str:
    return os.path.normpath(os.path.join(folder, name))


def _names(listed: str) -> list[str]:
    """The paths of an `ls-files -z` answer."""
    return [name for name in listed.split("\0") if name]


def _untracked(folder_git: GitFolder, answer: _Answer) -> list[str]:
    return sorted(_names(_listing(folder_git.untracked, answer)))


def _tracked(folder_git: GitFolder, answer: _Answer) -> str:
    return _listing(folder_git.tracked, answer)


def _listing(listed: Callable[[], git.GitOutput], answer: _Answer) -> str:
    """An `ls-files -z` answer ("" when git failed: the search says so)."""
    try:
        output = listed()
    except git.GitError as error:
        answer.partial = f"git ls-files stopped: {error}"
        return ""
    if output.truncated:
        answer.partial = "git listed more files than the search reads"
    return output.stdout.decode("utf-8", "surrogateescape")


def _grep_args(query: SearchQuery, excluding: list[str]) -> list[str]:
    """git grep for a plain text query over the tracked files, never opening
    those `excluding` (pathspecs) names."""
    assert query.literal is not None
    # Outside a repository git grep fails at once, whatever the user's configuration says.
    args = ["-c", "grep.fallbackToNoIndex=false", "grep", "-n", "--column", "-I", "-F", "-z", "--no-color"]
    if query.pattern.flags & re.IGNORECASE:
        args.append("-i")
    args += ["-e", query.literal, "--", "."]
    if query.glob is not None:
        args.append(f":(glob){query.glob}" if "/" in query.glob else f":(glob)**/{query.glob}")
    return args + excluding


def _git_grep(folder_git: GitFolder, query: SearchQuery, label: str, wanted: _Wanted, skip: set[str]) -> _Answer:
    """A plain text query by git grep over the tracked files of the folder
    (never reading a private one), its records read as git writes them and
    git ended once they fill an answer; the caller adds them to its own."""
    found = _Answer(query.max_results)
    folder = folder_git.folder
    private = [] if folder_git.grep_started else wanted.private_among(folder, _tracked(folder_git, found))
    if found.partial is not None:
        return found
    records = _GrepRecords(folder, label, wanted, skip, found)
    try:
        output = folder_git.grep(_grep_args(query, [f":(exclude,literal){name}" for name in private]), records.take)
    except git.GitError as error:
        found.partial = f"git grep stopped: {error}"
        return found
    if found.full:
        return found
    if output.returncode not in (0, 1):
        found.partial = f"git grep failed in {folder} (exit {output.returncode})"
    elif output.truncated:
        found.partial = "git grep wrote more than the search reads"
    return found


class _GrepRecords:
    """`git grep -z -n --column`'s records (name, line, column and text,
    ended by a newline), into the answer as they come."""

    def __init__(self, folder: str, label: str, wanted: _Wanted, skip: set[str], answer: _Answer) -> None:
        self._label, self._wanted, self._answer = label, wanted, answer
        self._unsaved = {_relative(path, folder) for path in skip if is_within(path, folder)}
        self._inside = os.path.join(os.path.normpath(folder), "")  # + a name git lists: the file's normal path
        self._rest = b""  # the start of a record the next piece ends
        self._asked, self._keep = "", False

    def take(self, piece: bytes) -> bool:
        """False once the answer is full: git may stop."""
        *records, self._rest = (self._rest + piece).split(b"\n")
        for record in records:
            if self._answer.full:
                break
            self._add(record)
        return not self._answer.full

    def _add(self, record: bytes) -> None:
        parts = record.split(b"\0", 3)
        if len(parts) != 4:
            return
        name, line, column, text = parts
        relative = name.decode("utf-8", "surrogateescape")
        if relative != self._asked:  # a file's matches come together: asked once
            self._asked = relative
            self._keep = relative not in self._unsaved and self._wanted(self._inside + relative, relative)
        if self._keep:
            # git counts the column in bytes, the answer in code points
            start = int(column) if text.isascii() else len(text[: int(column) - 1].decode("utf-8", "replace")) + 1
            self._answer.add(self._label + relative, int(line), start, text.decode("utf-8", "replace"))
