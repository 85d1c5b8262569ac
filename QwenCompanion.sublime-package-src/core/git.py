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
  are dropped: the folder decides) and takes no optional lock
  (`GIT_OPTIONAL_LOCKS=0`: a read never blocks the user's own git);
- runs as an argument list (no shell), with no stdin, in a process group of
  its own inside the editor's session (no console window on Windows), with
  a time limit and a cap on what is read of its output.
The system's git configuration is still read (`GIT_CONFIG_NOSYSTEM` is not
set): a workspace cannot write it, and on Windows it holds what makes git
work there (line endings, the credential and SSL setup).

Its runners wait for a process: `threads.may_block`."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from . import threads
from .cli.processes import kill_group, own_group_in_session_options

if sys.platform == "linux":
    import fcntl  # the pipe's size (F_SETPIPE_SZ) is Linux's alone

GIT_TIMEOUT = 10.0  # seconds
PIPE_BYTES = 1024 * 1024  # Linux's largest pipe for an unprivileged process
# Variables that would point git at another repository than the folder's, or
# configure it behind the runner's back.
_REPOSITORY_VARIABLES = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
                         "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
                         "GIT_EXTERNAL_DIFF", "GIT_PAGER", "GIT_ATTR_SOURCE")
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


@threads.may_block
def run_capped(argv: Sequence[str], *, cwd: str | None, limit: int, timeout: float,
               env: dict[str, str] | None = None) -> tuple[int, bytes, bool]:
    """Run `argv` (no shell, no stdin, its own process group), reading at most
    `limit` bytes of its output: (return code, output, cut short). Past the
    limit or `timeout` seconds it is ended; TimeoutError when the time ran
    out, OSError when it cannot start."""
    process = subprocess.Popen(
        list(argv), cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, **own_group_in_session_options(),
    )
    assert process.stdout is not None
    _widen(process.stdout.fileno())
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        kill_group(process.pid)

    timer = threads.timer("QwenCompanion process deadline", timeout, expire)
    try:
        data = process.stdout.read(limit + 1)
        truncated = len(data) > limit
        if truncated:
            kill_group(process.pid)
        returncode = process.wait()
    finally:
        timer.cancel()
        process.stdout.close()
    if expired.is_set():
        raise TimeoutError(f"{os.path.basename(argv[0])} gave no answer within {timeout:g} s")
    return returncode, data[:limit], truncated


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


@threads.may_block
def run_git(folder: str, args: Sequence[str], *, limit: int, git: str | None = None,
            timeout: float = GIT_TIMEOUT, may_filter: bool = False) -> GitOutput:
    """Run `git -C folder <args>` hardened as the module says. `may_filter`:
    the command may read the working tree's files through filters (diff,
    status), so the configuration's filter drivers are emptied first.
    GitError when git is missing, cannot start or gives no answer in time."""
    program = git or find_git()
    if program is None:
        raise GitError("git is not on the PATH")
    try:
        environment = git_environment()
        if may_filter:
            environment.update(_filters_off(program, folder, timeout))
        code, output, truncated = run_capped(_hardened(program, folder, args), cwd=None, limit=limit,
                                             timeout=timeout, env=environment)
    except TimeoutError as error:
        raise GitError(str(error)) from None
    except OSError as error:
        raise GitError(f"could not run {program}: {error.strerror or error}") from None
    return GitOutput(code, output, truncated)
