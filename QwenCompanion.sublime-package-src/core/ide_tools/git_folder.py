"""What git says of one of the window's folders for a search, each command
started as soon as its arguments are known and read when the search needs
its answer: the untracked files (`ls-files -o`, a walk of the folder) are
listed while the tracked ones are listed and grepped. Each process is git's
through the hardened runner, and one never read is ended with its group."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .. import git, threads

LIST_BYTES = 32 * 1024 * 1024
GREP_BYTES = 8 * 1024 * 1024


class GitFolder:
    def __init__(self, folder: str, seconds: Callable[[], float]) -> None:
        """Start listing `folder`'s tracked and untracked files; `seconds` is the time left."""
        self.folder = folder
        self._seconds = seconds
        self._running: dict[str, git.RunningGit] = {}
        self._answers: dict[str, git.GitOutput] = {}
        self._errors: dict[str, git.GitError] = {}
        try:  # the one read first, first
            self._start("tracked", ["ls-files", "-c", "--deduplicate", "-z"], LIST_BYTES)
            self._start("untracked", ["ls-files", "-o", "--exclude-standard", "-z"], LIST_BYTES)
        except git.GitError:
            self.close()  # no git: not a repository, for the search

    @threads.may_block
    def is_repository(self) -> bool:
        try:
            return self._answer("tracked").returncode == 0
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
        """`git grep args`, its output handed to `take` as it comes (git is
        ended once `take` says False). GitError when git could not start or
        gave no answer in time."""
        running = git.start_git(self.folder, args, limit=GREP_BYTES, timeout=max(self._seconds(), 0.1))
        return running.result(take)

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
