"""The one way the package runs git. A repository is part of the workspace,
and an agent can write into the workspace: whatever a repository's own files
could make git run (its config, its attributes, its hooks) must not run when
the package only asks git what changed. So every call here:

- sets `core.fsmonitor=false` (a repository's fsmonitor is a command git runs
  on every status or diff) and `core.hooksPath` to the null device (no hook
  runs, should a command ever fire one);
- sets `safe.bareRepository=explicit`: a folder that merely looks like a
  repository's insides (`HEAD`, `config`, `objects/`, `refs/` written by an
  agent) is never taken for a repository, so its planted config is never read;
- reads no attributes file of the user's or the system's (`core.attributesFile`
  is the null device, `GIT_ATTR_NOSYSTEM=1`), and turns off every filter driver
  the configuration names (`filter.<name>.clean`/`smudge`/`process` empty,
  `required=false`, given as GIT_CONFIG_KEY_n/VALUE_n: git runs no filter
  whose command is empty). Git 2.39, the oldest we expect, has no
  `--attr-source` (2.40) or `GIT_ATTR_SOURCE` (2.42) to read attributes from
  an empty tree, so the drivers themselves are emptied instead: the names
  come from `git config --get-regexp`, which reads configuration only and
  runs nothing;
- diffs with `--no-textconv --no-ext-diff` (no textconv, no `diff.external`,
  no `diff.<driver>.command`) and `--ignore-submodules=dirty` (no git runs
  inside a submodule, under a configuration of its own), and reads a blob with `cat-file blob`, which
  applies no filter at all;
- takes no repository from the environment (`GIT_DIR`, `GIT_WORK_TREE`, ...
  are dropped: the folder decides), no way of reading pathspecs from it
  (`GIT_LITERAL_PATHSPECS` would make an `:(exclude)` a file name) and no
  optional lock (`GIT_OPTIONAL_LOCKS=0`: a read never blocks the user's own git);
- runs as an argument list (no shell), with no stdin, in a process group of
  its own inside the editor's session (no console window on Windows), with
  a time limit and a cap on what is read of its output; a caller may read
  the output as it comes and end the process once it has enough.
The system's git configuration is still read (`GIT_CONFIG_NOSYSTEM` is not
set): a workspace cannot write it, and on Windows it holds what makes git
work there (line endings, the credential and SSL setup).

Its runners wait for a process: `threads.may_block`."""

from __future__ import annotations

import contextlib
import math
import os
import select
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import IO

from . import threads
from .cli.processes import kill_group, own_group_in_session_options

if sys.platform == "linux":
    import fcntl  # the pipe's size (F_SETPIPE_SZ) is Linux's alone

GIT_TIMEOUT = 10.0  # seconds
PIPE_BYTES = 1024 * 1024  # Linux's largest pipe for an unprivileged process
# Variables that would point git at another repository than the folder's, or
# configure it behind the runner's back (GIT_LITERAL_PATHSPECS: an `:(exclude)`
# pathspec taken for a file name, so git reads the file it should skip).
_REPOSITORY_VARIABLES = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
                         "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
                         "GIT_EXTERNAL_DIFF", "GIT_PAGER", "GIT_ATTR_SOURCE", "GIT_LITERAL_PATHSPECS",
                         "GIT_GLOB_PATHSPECS", "GIT_NOGLOB_PATHSPECS", "GIT_ICASE_PATHSPECS")
HARDENED_OPTIONS = (
    "-c", "core.fsmonitor=false",
    "-c", "safe.bareRepository=explicit",
    "-c", f"core.hooksPath={os.devnull}",
    "-c", f"core.attributesFile={os.devnull}",
    "--no-pager",
)
# A submodule's work tree is not looked into (`dirty`): git would run `status`
# in it, under the submodule's own configuration, whose filter drivers the
# superproject's `_filters_off` never saw. A changed submodule commit still shows.
DIFF_OPTIONS = ("--no-textconv", "--no-ext-diff", "--no-color", "--ignore-submodules=dirty")
_FILTER_KEYS = ("clean", "smudge", "process")


class GitError(Exception):
    """git could not be started, or gave no answer in time; the message says which."""


@dataclass(frozen=True)
class GitOutput:
    returncode: int
    stdout: bytes
    truncated: bool  # git wrote more than the cap


def find_git() -> str | None:
    """The git program on the PATH, or None."""
    return shutil.which("git")


def git_environment() -> dict[str, str]:
    environment = {k: v for k, v in os.environ.items() if k not in _REPOSITORY_VARIABLES}
    environment.update(GIT_OPTIONAL_LOCKS="0", GIT_ATTR_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0")
    return environment


class Running:
    """A process started and not read yet: the caller does other work
    meanwhile (another process, a search) and then `finish`es it, or `stop`s
    it when its answer is no longer wanted. Its deadline: on POSIX the reader
    polls the pipe until then (starting a timer thread per process cost ~2 ms
    on a busy machine, as much as the process); Windows' pipes cannot be
    polled, so there a timer thread ends it."""

    def __init__(self, argv: Sequence[str], *, cwd: str | None, limit: int, timeout: float,
                 env: dict[str, str] | None) -> None:
        self._name, self._limit, self._timeout = os.path.basename(argv[0]), limit, timeout
        self._deadline = time.monotonic() + timeout
        self._process = subprocess.Popen(
            list(argv), cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, **own_group_in_session_options(),
        )
        assert self._process.stdout is not None
        _widen(self._process.stdout.fileno())
        self._expired = threading.Event()
        self._timer = (threads.timer("QwenCompanion process deadline", timeout, self._expire)
                       if sys.platform == "win32" else None)

    def _expire(self) -> None:
        self._expired.set()
        kill_group(self._process.pid)

    @threads.may_block
    def finish(self, take: Callable[[bytes], bool] | None = None) -> tuple[int, bytes, bool]:
        """(return code, output, cut short), as `run_capped` says. With
        `take`, each piece of the output goes to it as it comes instead (the
        output answered is empty); once it returns False the process is ended
        unread: a reader with enough spares the rest of the process's work."""
        stdout = self._process.stdout
        assert stdout is not None
        kept: list[bytes] = []
        size, truncated, reaped = 0, False, False
        try:
            for piece in self._chunks(stdout):
                truncated = size + len(piece) > self._limit
                chunk = piece[: self._limit - size]
                size += len(chunk)
                enough = truncated
                if take is None:
                    kept.append(chunk)
                elif not take(chunk):
                    enough = True
                if enough:
                    kill_group(self._process.pid)
                    break
            returncode = self._exit_code()
            reaped = True
        finally:
            if self._timer is not None:
                self._timer.cancel()
            stdout.close()
            if not reaped:  # `take` failed: the process is not left behind
                kill_group(self._process.pid)
                self._process.wait()
        if self._expired.is_set():
            raise TimeoutError(f"{self._name} gave no answer within {self._timeout:g} s")
        return returncode, b"".join(kept), truncated

    def _chunks(self, stdout: IO[bytes]) -> Iterator[bytes]:
        """The output as it comes until its end or the deadline: on POSIX
        the pipe is polled until then; on Windows the timer ends the process."""
        if self._timer is not None:
            while chunk := stdout.read1(PIPE_BYTES):  # type: ignore[attr-defined]
                yield chunk
            return
        pipe = stdout.fileno()
        poller = select.poll()
        poller.register(pipe, select.POLLIN)
        while (left := self._deadline - time.monotonic()) > 0:
            if poller.poll(math.ceil(left * 1000)):
                chunk = os.read(pipe, PIPE_BYTES)
                if not chunk:
                    return
                yield chunk
        self._expire()

    def _exit_code(self) -> int:
        if self._timer is not None:
            return self._process.wait()
        try:
            return self._process.wait(max(self._deadline - time.monotonic(), 0))
        except subprocess.TimeoutExpired:  # its output closed, itself still running
            self._expire()
            return self._process.wait()

    @threads.may_block
    def stop(self) -> None:
        """End it unread (its group too) and reap it."""
        kill_group(self._process.pid)
        with contextlib.suppress(TimeoutError):
            self.finish()


@threads.may_block
def run_capped(argv: Sequence[str], *, cwd: str | None, limit: int, timeout: float,
               env: dict[str, str] | None = None) -> tuple[int, bytes, bool]:
    """Run `argv` (no shell, no stdin, its own process group), reading at most
    `limit` bytes of its output: (return code, output, cut short). Past the
    limit or `timeout` seconds it is ended; TimeoutError when the time ran
    out, OSError when it cannot start."""
    return Running(argv, cwd=cwd, limit=limit, timeout=timeout, env=env).finish()


def _widen(pipe: int) -> None:
    """Linux: a 1 MB pipe, so a tool writes its answer (git's list of 10,000
    files is 200 KB) without waiting for us to drain each 64 KB: on a busy
    machine each such wait is a scheduling delay for both processes."""
    if sys.platform == "linux":
        with contextlib.suppress(OSError):  # a lower limit set by the system
            fcntl.fcntl(pipe, fcntl.F_SETPIPE_SZ, PIPE_BYTES)


def _hardened(git: str, folder: str, args: Sequence[str]) -> list[str]:
    return [git, *HARDENED_OPTIONS, "-C", folder, *args]


def _filters_off(git: str, folder: str, timeout: float) -> dict[str, str]:
    """Configuration that empties every filter driver the configuration seen
    from `folder` defines (reading configuration runs nothing). Given as
    GIT_CONFIG_KEY_n/VALUE_n, which git ranks with `-c`: a driver's name may
    hold "=", which `-c name=value` would split at."""
    code, listed, _ = run_capped(
        _hardened(git, folder, ["config", "--null", "--name-only", "--get-regexp", r"^filter\."]),
        cwd=None, limit=256 * 1024, timeout=timeout, env=git_environment(),
    )
    names = set()
    for key in listed.decode("utf-8", "surrogateescape").split("\0") if code == 0 else []:
        driver, dot, _ = key.removeprefix("filter.").rpartition(".")
        if key.startswith("filter.") and dot:
            names.add(driver)
    settings = [(f"filter.{name}.{what}", "") for name in sorted(names) for what in _FILTER_KEYS]
    settings += [(f"filter.{name}.required", "false") for name in sorted(names)]
    environment = {"GIT_CONFIG_COUNT": str(len(settings))}
    for index, (key, value) in enumerate(settings):
        environment[f"GIT_CONFIG_KEY_{index}"], environment[f"GIT_CONFIG_VALUE_{index}"] = key, value
    return environment


class RunningGit:
    """A git command `start_git` started; `result` waits for its answer."""

    def __init__(self, running: Running) -> None:
        self._running = running

    @threads.may_block
    def result(self, take: Callable[[bytes], bool] | None = None) -> GitOutput:
        """Its answer (`take`: as `Running.finish` says); GitError when it gave none in time."""
        try:
            return GitOutput(*self._running.finish(take))
        except TimeoutError as error:
            raise GitError(str(error)) from None

    @threads.may_block
    def stop(self) -> None:
        self._running.stop()


@threads.may_block
def start_git(folder: str, args: Sequence[str], *, limit: int, git: str | None = None,
              timeout: float = GIT_TIMEOUT, may_filter: bool = False) -> RunningGit:
    """Start `git -C folder <args>` hardened as the module says, to be read
    later (`run_git` reads it at once). `may_filter`: the command may read
    the working tree's files through filters (diff, status), so the
    configuration's filter drivers are emptied first. GitError when git is
    missing or cannot start."""
    program = git or find_git()
    if program is None:
        raise GitError("git is not on the PATH")
    try:
        environment = git_environment()
        if may_filter:
            environment.update(_filters_off(program, folder, timeout))
        return RunningGit(Running(_hardened(program, folder, args), cwd=None, limit=limit, timeout=timeout,
                                  env=environment))
    except TimeoutError as error:
        raise GitError(str(error)) from None
    except OSError as error:
        raise GitError(f"could not run {program}: {error.strerror or error}") from None


@threads.may_block
def run_git(folder: str, args: Sequence[str], *, limit: int, git: str | None = None,
            timeout: float = GIT_TIMEOUT, may_filter: bool = False) -> GitOutput:
    """`start_git`, its answer read at once. GitError when git is missing,
    cannot start or gives no answer in time."""
    return start_git(folder, args, limit=limit, git=git, timeout=timeout, may_filter=may_filter).result()
