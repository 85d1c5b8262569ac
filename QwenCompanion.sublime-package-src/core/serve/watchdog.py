"""The watchdog beside a `qwen serve` daemon the package started
(serve_watchdog.js): the daemon and its agents (some 400 MB) otherwise
outlive every window, Sublime's end and even their folder, since qwen 0.24.4
reaps idle sessions and agents but never the daemon. It ends the daemon's
process group after `serve_idle_minutes` with no client and no running turn
(as the daemon's `GET /health?deep=1` counts them: open event streams,
active prompts, pending permissions, active work), or once one of its
folders is gone, and ends itself when the daemon is gone.

It is run by the node that runs the daemon (no other runtime), which starts
it again detached, in a process group of its own, and exits: it outlives
the plugin host and is never a child left for it to reap. Its settings, the
token among them, go on stdin: never argv. Blocks (a process
start, a file write): never on Sublime's threads."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from .. import threads
from ..cli.process_identity import CannotTell, executable, group_listener
from ..cli.processes import own_group_options
from ..companion.lockfile import write_private_text
from .daemon import RECORD_FOLDER, TOKEN_ENV, DaemonRecord, folders_key

log = logging.getLogger(__name__)

SCRIPT_NAME = "serve_watchdog.js"
MIN_POLL_MS = 500
MAX_POLL_MS = 30_000
POLLS_PER_IDLE_TIME = 6
LAUNCH_TIMEOUT_SECONDS = 10.0


def poll_ms(idle_ms: int) -> int:
    """How often it asks: a sixth of the idle time, within half a second and half a minute."""
    return max(MIN_POLL_MS, min(MAX_POLL_MS, idle_ms // POLLS_PER_IDLE_TIME))


def watchdog_settings(record: DaemonRecord, idle_minutes: float) -> dict[str, object]:
    idle_ms = round(idle_minutes * 60_000)
    return {"host": record.host, "port": record.port, "token": record.token, "pid": record.pid,
            "folders": list(record.folders), "idleMs": idle_ms, "pollMs": poll_ms(idle_ms)}


def daemon_node(record: DaemonRecord) -> str | None:
    """The node that runs the daemon: the program of the process listening on
    its port (a launcher may run node as a child), else of its pid; None
    when that is not a node."""
    try:
        listener = group_listener(record.pid, record.port)
    except CannotTell:
        listener = None
    program = executable(listener if listener is not None else record.pid)
    name = os.path.basename(program or "").lower()
    return program if name.startswith("node") else None  # node, node.exe, nodejs


def script_path(cache_dir: Path, script: str) -> Path:
    """The script, copied out of the package (node cannot run a file inside a
    .sublime-package) under a name of its content, so an upgrade never runs an
    old copy."""
    digest = hashlib.sha256(script.encode("utf-8")).hexdigest()[:16]
    path = cache_dir / RECORD_FOLDER / f"serve_watchdog-{digest}.js"
    if not path.is_file():
        write_private_text(path, script)
    return path


@threads.may_block
def start_watchdog(record: DaemonRecord, script: str, cache_dir: Path, idle_minutes: float,
                   base_env: Mapping[str, str]) -> subprocess.Popen[bytes] | None:
    """Start the daemon's watchdog (the launcher's process, ended once it has
    handed over); None when idle_minutes is 0 (never ends) or no node runs
    the daemon (said in the log)."""
    if idle_minutes <= 0:
        return None
    node = daemon_node(record)
    if node is None:
        log.warning("serve: no node found running %s: it has no watchdog and runs until stopped",
                    record.describe())
        return None
    env = {key: value for key, value in base_env.items() if key not in (TOKEN_ENV, "QWEN_DAEMON_TOKEN")}
    output = cache_dir / RECORD_FOLDER / f"{folders_key(record.folders)}.watchdog.out"
    fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        process = subprocess.Popen([node, str(script_path(cache_dir, script))], stdin=subprocess.PIPE, stdout=fd,
                                   stderr=subprocess.STDOUT, env=env, **own_group_options())
    finally:
        os.close(fd)
    assert process.stdin is not None
    with process.stdin:
        process.stdin.write(json.dumps(watchdog_settings(record, idle_minutes)).encode("utf-8"))
    try:  # it starts the watchdog detached, then exits: reaped here, as no zombie is left
        process.wait(LAUNCH_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        log.warning("serve: the watchdog of %s took long to start", record.describe())
    log.info("serve: a watchdog ends %s after %g idle minute(s)", record.describe(), idle_minutes)
    return process
