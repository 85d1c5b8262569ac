"""What git says of one of the window's folders for a search, each command
started as soon as its arguments are known and read when the search needs
its answer: the untracked files (`ls-files -o`, a walk of the folder) are
listed while git greps the tracked ones, and git grep starts at once when
it can be told which files are private (else after the tracked files are
listed, for the caller to name them). Each process is git's through the
hardened runner, and one never read is ended with its group."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .. import git, threads

LIST_BYTES = 32 * 1024 * 1024
GREP_BYTES = 8 * 1024 * 1024


class GitFolder:
    def __init__(self, folder: str, seconds: Callable[[], float], grep_args: Sequence[str] | None = None) -> None:
        """Start `git grep grep_args` when given, else the list of `folder`'s
        tracked files, and the list of its untracked ones; `seconds` is the time left."""
        self.folder = folder
        self._seconds = seconds
        self._running: dict[str, git.RunningGit] = {}
        self._answers: dict[str, git.GitOutput] = {}
        self._errors: dict[str, git.GitError] = {}
        self.grep_started = grep_args is not None  # with the folder, before the tracked files were listed
        try:  # the longest first
            if grep_args is not None:
                self._start("grep", grep_args, GREP_BYTES)
            else:
                self._start("tracked", ["ls-files", "-c", "--deduplicate", "-z"], LIST_BYTES)
            self._start("untracked", ["ls-files", "-o", "--exclude-standard", "-z"], LIST_BYTES)
        except git.GitError:
            self.close()  # no git: not a repository, for the search

    @threads.may_block
    def is_repository(self) -> bool:
        try:
            return self._answer("untracked" if self.grep_started else "tracked").returncode == 0
        except git.GitError:
            return False

    @threads.may_block
    def tracked(self) -> git.GitOutput:
        """GitError when git stopped or failed."""
        return self._succeeded(self._answer("tracked"))

    @threads.may_block
    def untracked(self) -> git.GitOutput:
        """GitError when git stopped or failed."""
        return self._succeeded(self._answer("untracked"))

    @threads.may_block
    def grep(self, args: Sequence[str], take: Callable[[bytes], bool]) -> git.GitOutput:
        """git grep's output handed to `take` as it comes (git is ended once
        `take` says False): the one started with the folder, else `git grep
        args` now. GitError when git could not start or gave no answer in time."""
        if "grep" not in self._running:
            self._start("grep", args, GREP_BYTES)
        return self._running.pop("grep").result(take)

    @threads.may_block
    def close(self) -> None:
        """End every command whose answer nobody read."""
        for running in self._running.values():
            running.stop()
        self._running.clear()

    def _start(self, name: str, args: Sequence[str], limit: int) -> None:
        self._running[name] = git.start_git(self.folder, args, limit=limit, timeout=max(self._seconds(), 0.1))

    def _answer(self, name: str) -> git.GitOutput:
        if name in self._errors:
            raise self._errors[name]
        if name not in self._answers:
            running = self._running.pop(name, None)
            if running is None:
                raise git.GitError("git could not start")
            try:
                self._answers[name] = running.result()
            except git.GitError as error:
                self._errors[name] = error
                raise
        return self._answers[name]

    def _succeeded(self, output: git.GitOutput) -> git.GitOutput:
        if output.returncode != 0:
            raise git.GitError(f"git failed in {self.folder} (exit {output.returncode})")
        return output
