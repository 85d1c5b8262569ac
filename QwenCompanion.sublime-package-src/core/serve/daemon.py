"""Start, find again and stop the `qwen serve` daemon of a window's folders.

The daemon's API gives whoever holds its token full control of the agent
(prompts, tools, file writes), so:
- it listens on 127.0.0.1 only, with `--require-auth` (no token-free
  loopback mode) and no Web Shell;
- the token reaches it through the environment (`QWEN_SERVER_TOKEN`, which the
  daemon deletes from the environment of the agents it starts), never argv,
  where every local user can read it; nothing here logs it;
- the record that lets the package find the daemon again after a reload
  (pid, its start token, port, token) is a 0600 file in a 0700 folder of the
  user's cache, and a record is used only when it is still the user's own
  file, names a loopback address and a live process of the user's that is
  the one recorded (its start token: a pid is reused once its process has
  gone, and a restart starts every count again), that process (or its
  group) listens on the recorded port, and the daemon there refuses a
  request without the token. Nothing is signalled on a record's word alone
  either: Stop ends a group only while its leader is the process recorded.

Everything here blocks (process start, file and socket reads): call it from
the chat's thread or a worker of ours, never from Sublime's threads.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import secrets
import stat
import subprocess
import sys
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .. import threads
from ..cli.process_identity import CannotTell, anyone_listens, group_listener, same_process, start_token
from ..cli.processes import end_group_waiting, own_group_options
from ..companion.lockfile import pid_alive, write_private_json
from ..files.paths import HOST_STYLE, PathStyle, path_identity
from .http import Address, HttpError, request_json_blocking

log = logging.getLogger(__name__)

TOKEN_ENV = "QWEN_SERVER_TOKEN"
CLIENT_MCP_ENV = "QWEN_SERVE_CLIENT_MCP_OVER_WS"  # the daemon takes client-hosted MCP servers only with it
LOOPBACK_HOST = "127.0.0.1"
# The daemon's first line on stdout once it listens (0.24.4):
# "qwen serve listening on http://127.0.0.1:4170 (mode=http-bridge, workspace=...)".
LISTENING_RE = re.compile(r"qwen serve listening on https?://(?P<host>[^\s/]+):(?P<port>\d+)")
START_TIMEOUT_SECONDS = 60.0
START_POLL_SECONDS = 0.1
# What of the daemon's output is read while waiting for its port: it prints
# a handful of lines before it listens; more is not a daemon starting.
MAX_STARTUP_OUTPUT_BYTES = 256 * 1024
RECORD_FOLDER = "serve"
PROBE_TIMEOUT_SECONDS = 5.0
STOP_GRACE_SECONDS = 5.0  # SIGTERM to SIGKILL, as serve_watchdog.js waits (its TERM_GRACE_MS)


class DaemonRefused(Exception):
    """A daemon that must not be used (or could not be started); the message says why."""


class StaleRecord(DaemonRefused):
    """The record names a daemon that is gone: a new one may take its place."""


@dataclass(frozen=True)
class DaemonRecord:
    """What finds a running daemon again: the 0600 record's content."""

    pid: int
    port: int
    host: str
    token: str = field(repr=False)  # a record in a log or a traceback shows no token
    folders: tuple[str, ...] = ()
    started_at: float = 0.0
    process_start: str = ""  # the pid's start token (process_identity): "" trusts nothing

    def to_json(self) -> dict[str, object]:
        data = asdict(self)
        data["folders"] = list(self.folders)
        return data

    @classmethod
    def from_json(cls, data: object) -> DaemonRecord:
        if not isinstance(data, dict):
            raise ValueError("the record is not a JSON object")
        pid, port, host, token = data.get("pid"), data.get("port"), data.get("host"), data.get("token")
        folders, started_at = data.get("folders"), data.get("started_at")
        if not (isinstance(pid, int) and isinstance(port, int) and isinstance(host, str) and isinstance(token, str)):
            raise ValueError("the record lacks pid, port, host or token")
        if not (isinstance(folders, list) and all(isinstance(folder, str) for folder in folders)):
            raise ValueError("the record's folders are not a list of paths")
        if not isinstance(started_at, (int, float)):
            raise ValueError("the record lacks its start time")
        process_start = data.get("process_start", "")  # absent: a record of an earlier version, never trusted
        if not isinstance(process_start, str):
            raise ValueError("the record's process start is not a string")
        return cls(pid, port, host, token, tuple(folders), float(started_at), process_start)

    def describe(self) -> str:
        """For messages and logs: everything but the token."""
        return f"qwen serve (pid {self.pid}) on {self.host}:{self.port}"


def new_token() -> str:
    return secrets.token_hex(32)


def serve_flags(folders: Sequence[str], web: bool = False) -> list[str]:
    """`serve` for these folders: loopback, a free port, auth required.
    The token is deliberately absent: see `serve_env`."""
    flags = ["serve", "--hostname", LOOPBACK_HOST, "--port", "0", "--require-auth", "--web" if web else "--no-web"]
    for folder in folders:
        flags += ["--workspace", folder]
    return flags


def serve_argv(qwen_argv: Sequence[str], folders: Sequence[str], web: bool = False) -> list[str]:
    return [*qwen_argv, *serve_flags(folders, web)]


def serve_env(base: Mapping[str, str], token: str) -> dict[str, str]:
    """The daemon's environment: `base` with the token, and without a token
    of another daemon that `base` might carry; with client-MCP on (the
    chat's MCP servers reach the session over the daemon's WebSocket, behind
    the same token: client_mcp.py)."""
    env = {key: value for key, value in base.items() if key not in (TOKEN_ENV, "QWEN_DAEMON_TOKEN")}
    env[TOKEN_ENV] = token
    env[CLIENT_MCP_ENV] = "1"
    return env


def folders_key(folders: Sequence[str], style: PathStyle = HOST_STYLE) -> str:
    """One record per set of folders, whatever their order, their symlinks or
    (on Windows and macOS) their case."""
    normalized = sorted(path_identity(folder, style) for folder in folders)
    return hashlib.sha256("\0".join(normalized).encode("utf-8")).hexdigest()[:32]


def record_path(cache_dir: Path, folders: Sequence[str], style: PathStyle = HOST_STYLE) -> Path:
    return cache_dir / RECORD_FOLDER / f"{folders_key(folders, style)}.json"


def output_path(cache_dir: Path, folders: Sequence[str]) -> Path:
    """Where the daemon's stdout and stderr go: a file of ours, not a pipe,
    so the daemon can outlive the plugin host that started it."""
    return cache_dir / RECORD_FOLDER / f"{folders_key(folders)}.out"


def is_loopback(host: str) -> bool:
    return host == "localhost" or host == "::1" or host == "[::1]" or host.startswith("127.")


def is_users_process(pid: int) -> bool:
    """POSIX: a live process this user may signal (another user's answers EPERM).
    Windows has no such check short of its security API; a process there is
    the user's when it is alive and the record (a private file) names it."""
    if sys.platform == "win32":
        return pid_alive(pid)
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def daemon_running(record: DaemonRecord) -> bool:
    """The recorded daemon still runs: its pid names the process recorded."""
    return same_process(record.pid, record.process_start)


def write_record(path: Path, record: DaemonRecord) -> None:
    write_private_json(path, record.to_json())


def remove_record(path: Path) -> None:
    try:
        path.unlink(missing_ok=True)
    except OSError as error:
        log.warning("cannot remove the serve record %s: %s", path, error.strerror or error)


def read_record(path: Path) -> DaemonRecord | None:
    """The record at `path`, None when there is none; DaemonRefused when it is
    there but is not the user's private file or not a record."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise DaemonRefused(f"cannot read the daemon record {path}: {error.strerror or error}") from None
    if sys.platform != "win32":
        if info.st_uid != os.getuid():
            raise DaemonRefused(f"the daemon record {path} belongs to another user: not used")
        if stat.S_IMODE(info.st_mode) & 0o077:  # the group's bits too: the token is the daemon's whole control
            raise DaemonRefused(f"the daemon record {path} is open to your group or others (mode "
                                f"{stat.S_IMODE(info.st_mode):o}): not used, as its token may be known; remove "
                                "it to have a new daemon started")
    try:
        return DaemonRecord.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError) as error:
        raise DaemonRefused(f"the daemon record {path} is unreadable: {error}") from None


Probe = Callable[[DaemonRecord, bool], int]
"""`probe(record, with_token)`: the HTTP status of `GET /health` at the
record's address, with or without its token (raises OSError when nothing answers)."""


def check_record(record: DaemonRecord, probe: Probe) -> None:
    """Raise DaemonRefused unless the record names a daemon that may be
    attached to: loopback, alive, the user's, and refusing a request without
    the token while accepting one with it."""
    if not is_loopback(record.host):
        raise DaemonRefused(f"{record.describe()} is not on a loopback address: not attached to")
    if not pid_alive(record.pid):
        raise StaleRecord(f"{record.describe()} has exited")
    if not same_process(record.pid, record.process_start):
        raise StaleRecord(f"{record.describe()} has exited: its pid now names another process "
                          "(or the machine has restarted since)")
    if not is_users_process(record.pid):
        raise DaemonRefused(f"{record.describe()} is not running as this user: not attached to")
    check_listener(record)
    try:
        without_token = probe(record, False)
        with_token = probe(record, True)
    except OSError as error:
        raise StaleRecord(f"{record.describe()} does not answer: {error.strerror or error}") from None
    if without_token != 401:
        raise DaemonRefused(
            f"{record.describe()} answers without a token (HTTP {without_token}): any local process could "
            "drive it, so it is not attached to"
        )
    if with_token != 200:
        raise DaemonRefused(f"{record.describe()} refuses its token (HTTP {with_token}): not attached to")


def check_listener(record: DaemonRecord) -> None:
    """The recorded process (or one of its group: a launcher may run node as
    a child) listens on the recorded port: else the token would go to
    whatever listens there. Where this cannot be told (Windows), the start
    token's check stands alone: a live daemon holds its own port."""
    try:
        listener = group_listener(record.pid, record.port)
    except CannotTell as unknown:
        log.debug("serve: the port's owner is not checked: %s", unknown)
        return
    if listener is None:
        with contextlib.suppress(CannotTell):
            if not anyone_listens(record.port):  # its socket closed: a daemon in its end, no impostor
                raise StaleRecord(f"{record.describe()} no longer listens on port {record.port}")
        raise DaemonRefused(f"{record.describe()} does not listen on port {record.port}: another process "
                            "does, so it is not attached to (and is not sent the token)")


# The daemons this process started and still holds (a chat's bridge does),
# by pid: ours to reap when we stop them. Unreaped, a daemon that has ended
# stays a zombie in its group, "running" by its pid and start time. One no
# longer held is left to `subprocess`, which reaps what it dropped.
_children: weakref.WeakValueDictionary[int, subprocess.Popen[bytes]] = weakref.WeakValueDictionary()


@dataclass
class StartedDaemon:
    process: subprocess.Popen[bytes]
    record: DaemonRecord


@threads.may_block
def start_daemon(
    argv: Sequence[str],
    cwd: str,
    env: Mapping[str, str],
    token: str,
    folders: Sequence[str],
    output: Path,
    timeout: float = START_TIMEOUT_SECONDS,
) -> StartedDaemon:
    """Start the daemon in a process group of its own and wait for the port it
    prints. Its output goes to `output` (0600): a pipe would break when the
    plugin host that reads it goes away while the daemon keeps running."""
    if token in argv:
        raise ValueError("the daemon's token must not be on its command line")
    output.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        process = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=fd,
            stderr=subprocess.STDOUT,
            **own_group_options(),
        )
    finally:
        os.close(fd)
    process_start = start_token(process.pid) or ""  # read at once: it is our child, alive or unreaped
    try:
        host, port = _wait_for_port(process, output, timeout)
    except BaseException:
        end_group_waiting(process.pid, STOP_GRACE_SECONDS, process)
        raise
    _children[process.pid] = process
    record = DaemonRecord(process.pid, port, host, token, tuple(folders), time.time(), process_start)
    log.info("started %s for %d folder(s)", record.describe(), len(folders))
    return StartedDaemon(process, record)


@threads.may_block
def _wait_for_port(process: subprocess.Popen[bytes], output: Path, timeout: float) -> tuple[str, int]:
    deadline = time.monotonic() + timeout
    while True:
        with open(output, "rb") as handle:
            text = handle.read(MAX_STARTUP_OUTPUT_BYTES).decode("utf-8", "replace")
        found = LISTENING_RE.search(text)
        if found:
            host = found.group("host")
            if not is_loopback(host):
                raise DaemonRefused(f"qwen serve listens on {host}, not on loopback: stopped")
            return host, int(found.group("port"))
        if process.poll() is not None:
            tail = text.strip().splitlines()[-5:]
            raise DaemonRefused(f"qwen serve exited ({process.returncode}) before listening: {' | '.join(tail)}")
        if time.monotonic() >= deadline:
            raise DaemonRefused(f"qwen serve did not listen within {timeout:.0f} s")
        time.sleep(START_POLL_SECONDS)


@threads.may_block
def http_probe(record: DaemonRecord, with_token: bool) -> int:
    """The status of `GET /health` at the record's address (a Probe); blocks,
    so never on a thread that runs an event loop."""
    address = Address(record.host, record.port, record.token)
    try:
        return request_json_blocking(address, "GET", "/health", with_token=with_token,
                                     timeout=PROBE_TIMEOUT_SECONDS).status
    except (HttpError, TimeoutError) as error:
        raise OSError(str(error)) from None


@dataclass(frozen=True)
class DaemonStatus:
    """What Diagnose and the driver's `serve_status` show of a daemon."""

    pid: int
    port: int
    version: str
    sessions: int
    require_auth: bool
    loopback: bool


@threads.may_block
def daemon_status(record: DaemonRecord) -> DaemonStatus:
    """`GET /daemon/status` of the record's daemon; blocks (like `http_probe`).
    Raises OSError when it does not answer or answers something else."""
    address = Address(record.host, record.port, record.token)
    try:
        answer = request_json_blocking(address, "GET", "/daemon/status", timeout=PROBE_TIMEOUT_SECONDS)
    except (HttpError, TimeoutError) as error:
        raise OSError(str(error)) from None
    body = answer.body
    if answer.status != 200 or not isinstance(body, dict):
        raise OSError(f"GET /daemon/status answered HTTP {answer.status}")
    facts, security = body.get("daemon") or {}, body.get("security") or {}
    sessions = ((body.get("runtime") or {}).get("sessions") or {}).get("active")
    return DaemonStatus(
        pid=int(facts.get("pid") or record.pid),
        port=record.port,
        version=str(facts.get("qwenCodeVersion") or ""),
        sessions=sessions if isinstance(sessions, int) else 0,
        require_auth=security.get("requireAuth") is True,
        loopback=security.get("loopbackBind") is True,
    )


@dataclass(frozen=True)
class Attached:
    record: DaemonRecord
    process: subprocess.Popen[bytes] | None  # None: found again through the record
    note: str  # for the log: why a daemon was started rather than attached to


@threads.may_block
def attach_or_start(
    cache_dir: Path,
    folders: Sequence[str],
    qwen_argv: Sequence[str],
    base_env: Mapping[str, str],
    probe: Probe = http_probe,
    web: bool = False,
    daemon_argv: Sequence[str] | None = None,
    on_started: Callable[[DaemonRecord], object] | None = None,
) -> Attached:
    """The folders' daemon: the recorded one when it passes `check_record`,
    else (none recorded, or it has exited) a new one, recorded. A recorded
    daemon that fails a safety check raises DaemonRefused: it is the user's
    to look into, and another one on the same folders is not started.
    `daemon_argv`, when given, is the whole command line (the editor's, whose
    login shell needs the flags inside its command); else `qwen_argv` + the flags.
    `on_started` is given a new daemon's record once it is written (its watchdog starts there)."""
    path = record_path(cache_dir, folders)
    found = read_record(path)
    note = "no daemon was recorded for these folders"
    if found is not None:
        try:
            check_record(found, probe)
            return Attached(found, None, "")
        except StaleRecord as stale:
            note = str(stale)
            remove_record(path)
    token = new_token()
    argv = list(daemon_argv) if daemon_argv is not None else serve_argv(qwen_argv, folders, web)
    started = start_daemon(argv, folders[0], serve_env(base_env, token), token,
                           folders, output_path(cache_dir, folders))
    write_record(path, started.record)
    if on_started is not None:
        on_started(started.record)
    return Attached(started.record, started.process, note)


@threads.may_block
def stop_daemon(record: DaemonRecord) -> bool:
    """End the daemon and its children (its process group: the agents it
    started), only while its pid is still the process recorded: a reused pid
    is another program's, whose group is left alone. SIGTERM first, as the
    watchdog does: an agent SIGKILLed while it starts leaves qwen's
    extension-store lock, and every qwen started in the next minute fails
    ("Extension store is busy"). A daemon this process started is reaped
    here. True when it was ended."""
    if not (daemon_running(record) and is_users_process(record.pid)):
        log.info("%s is no longer running: nothing stopped", record.describe())
        return False
    end_group_waiting(record.pid, STOP_GRACE_SECONDS, _children.pop(record.pid, None))
    log.info("stopped %s", record.describe())
    return True


@threads.may_block
def stop_recorded(cache_dir: Path, folders: Sequence[str]) -> DaemonRecord | None:
    """Forget the folders' recorded daemon, then stop it; the record, or None when there was none.
    Forgotten first, so no status or attach finds a record of a daemon in its end.
    A record that is not the user's private file is left alone (DaemonRefused)."""
    return _stop_at(record_path(cache_dir, folders))


@threads.may_block
def _stop_at(path: Path) -> DaemonRecord | None:
    found = forget_record(path)
    if found is not None:
        stop_daemon(found)
    return found


def forget_record(path: Path) -> DaemonRecord | None:
    """The record at `path`, removed (a small file: any thread); DaemonRefused as `read_record`."""
    found = read_record(path)
    if found is not None:
        remove_record(path)
    return found


RECORD_KEY = re.compile(r"[0-9a-f]{32}")  # folders_key's form: a key from a command names no other file


@dataclass(frozen=True)
class RecordedDaemon:
    """A daemon the package started, as its record says (Diagnose's list)."""

    key: str
    record: DaemonRecord | None  # None: the record is refused (`problem` says why)
    problem: str = ""

    @property
    def running(self) -> bool:
        return self.record is not None and daemon_running(self.record)


def recorded_daemons(cache_dir: Path) -> list[RecordedDaemon]:
    """Every daemon record in the cache folder (blocks: file reads, a process's start)."""
    found: list[RecordedDaemon] = []
    for path in sorted((cache_dir / RECORD_FOLDER).glob("*.json")):
        if not RECORD_KEY.fullmatch(path.stem):
            continue
        try:
            record = read_record(path)
        except DaemonRefused as refused:
            found.append(RecordedDaemon(path.stem, None, str(refused)))
            continue
        if record is not None:
            found.append(RecordedDaemon(path.stem, record))
    return found


@threads.may_block
def sweep_records(cache_dir: Path) -> list[str]:
    """At the package's start: forget the records of daemons that have exited
    (or ran before a restart), and stop those whose folder is gone; what was
    done, for the log. A refused record is left for the user to look into."""
    done: list[str] = []
    for daemon in recorded_daemons(cache_dir):
        record = daemon.record
        if record is None:
            continue
        gone = next((folder for folder in record.folders if not os.path.isdir(folder)), None)
        if daemon.running and gone is None:
            continue
        remove_record(cache_dir / RECORD_FOLDER / f"{daemon.key}.json")
        if daemon.running and stop_daemon(record):
            done.append(f"stopped {record.describe()}: its folder {gone} is gone")
        else:
            done.append(f"forgot {record.describe()}: it no longer runs")
    return done


@threads.may_block
def stop_by_key(cache_dir: Path, key: str) -> DaemonRecord | None:
    """Diagnose's Stop: forget and stop the daemon recorded under `key`
    (None when there is none; DaemonRefused when its record is refused)."""
    return _stop_at(cache_dir / RECORD_FOLDER / f"{key}.json") if RECORD_KEY.fullmatch(key) else None
