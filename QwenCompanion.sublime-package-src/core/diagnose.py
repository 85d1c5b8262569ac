"""The "Diagnose Connection" report.

The helpers at the top gather facts (they read files and run `qwen
--version`, but never touch Sublime); `build_report` turns plain `Facts` into
the text, so every rule about what is wrong is unit-testable.
"""

from __future__ import annotations

import hmac
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .companion import lockfile
from .files.paths import HOST_STYLE, PathStyle, is_within

VERSION_TIMEOUT = 10.0
CLI_DEFAULT_APPROVAL_MODE = "auto"  # qwen 0.24.4's default
ASKING_MODES = ("default", "plan")
MAX_REFUSALS_SHOWN = 5
INSTALL_TERMINUS = "Package Control: Install Package → Terminus"

# --- facts ----------------------------------------------------------------


@dataclass(frozen=True)
class LockCheck:
    path: str
    state: Literal["ok", "missing", "unreadable", "malformed", "mismatch"]
    detail: str = ""  # why, in words; never the token


@dataclass(frozen=True)
class CliProbe:
    name: str  # the executable as configured, e.g. "qwen"
    path: str | None  # where it was found on PATH
    version: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class GeminiFacts:
    """gemini-cli, when the `companion_clis` setting serves it."""
    cli: CliProbe
    file: LockCheck | None = None  # None when there is no server to check against
    error: str | None = None  # why the server could not write the file


@dataclass(frozen=True)
class RemoteFacts:
    """The window's remote endpoint (the `path_maps` / `wsl_distro` settings)."""
    port: int
    lock_file: str | None  # None while it is not written
    folders: list[str]  # the window's folders as the remote CLI names them


@dataclass(frozen=True)
class QwenSettings:
    path: str
    exists: bool
    error: str | None = None
    ide_enabled: bool | None = None  # None: not set
    approval_mode: str | None = None  # None: not set


@dataclass(frozen=True)
class SessionRow:
    id_prefix: str
    client_name: str
    age_seconds: float
    stream_open: bool


@dataclass(frozen=True)
class Refusal:
    at: float
    reason: str  # origin, host, missing-token, wrong-token
    detail: str


@dataclass(frozen=True)
class Facts:
    now: float
    window_id: int
    running: bool
    port: int
    started_at: float
    roots: list[str]
    lock_directory: str
    cli: CliProbe
    user_settings: QwenSettings
    startup_error: str | None = None
    lock_error: str | None = None
    lock: LockCheck | None = None  # None when there is no server to check against
    sessions: list[SessionRow] = field(default_factory=list)
    refusals: list[Refusal] = field(default_factory=list)
    folder: str | None = None  # the folder a CLI would run in
    folder_inside: bool | None = None
    folder_settings: QwenSettings | None = None  # <folder>/.qwen/settings.json
    command_approval_mode: str | None = None  # from a flag in the qwen_command setting
    terminus: bool = True
    login_shell: str | None = None  # macOS: Open in Terminal runs qwen through it
    shell_cli: CliProbe | None = None  # qwen as that shell finds it
    suggested_command: list[str] | None = None  # a qwen_command that needs no PATH
    relative_qwen_home: str | None = None  # QWEN_HOME when it is a relative path
    gemini: GeminiFacts | None = None  # None: gemini is not in `companion_clis`
    remote: RemoteFacts | None = None  # None: no remote endpoint


def _read_checked(path: Path, expected_types: dict[str, type]) -> dict[str, Any] | LockCheck:
    """A discovery file's content, or the LockCheck saying why it is not usable
    (missing, unreadable, not JSON, a field missing, not our `ideInfo`)."""
    where = str(path)
    try:
        data = lockfile.read_lock(path)
    except FileNotFoundError:
        return LockCheck(where, "missing")
    except OSError as error:
        return LockCheck(where, "unreadable", error.strerror or str(error))
    except json.JSONDecodeError as error:
        return LockCheck(where, "malformed", f"not valid JSON: {error}")
    except ValueError as error:
        return LockCheck(where, "malformed", str(error))
    bad = [name for name, kind in expected_types.items() if not isinstance(data.get(name), kind)]
    if bad:
        return LockCheck(where, "malformed", "missing or wrong type: " + ", ".join(bad))
    ide_info = data["ideInfo"]
    if ide_info.get("name") != lockfile.IDE_INFO["name"]:
        return LockCheck(where, "malformed", f"ideInfo.name is {ide_info.get('name')!r}, not {lockfile.IDE_INFO['name']!r}")
    return data


def _server_mismatches(data: dict[str, Any], *, port: int, token: str, workspace_path: str) -> list[str]:
    mismatches = []
    if data["port"] != port:
        mismatches.append(f"port is {data['port']}, the server listens on {port}")
    if not hmac.compare_digest(data["authToken"].encode(), token.encode()):
        mismatches.append("authToken belongs to another server")
    if data["workspacePath"] != workspace_path:
        mismatches.append(f"workspacePath is {data['workspacePath']!r}, the window's folders give {workspace_path!r}")
    return mismatches


def inspect_lock(path: Path, *, port: int, token: str, workspace_path: str, ppid: int) -> LockCheck:
    """Is the lock file there, readable, well-formed, and about this server?"""
    data = _read_checked(path, {"port": int, "workspacePath": str, "authToken": str, "ppid": int, "ideInfo": dict})
    if isinstance(data, LockCheck):
        return data
    mismatches = _server_mismatches(data, port=port, token=token, workspace_path=workspace_path)
    if data["ppid"] != ppid:
        mismatches.append(f"ppid is {data['ppid']}, Sublime Text is {ppid}")
    if mismatches:
        return LockCheck(str(path), "mismatch", "; ".join(mismatches))
    return LockCheck(str(path), "ok")


def inspect_gemini_file(path: Path, *, port: int, token: str, workspace_path: str) -> LockCheck:
    """Is gemini-cli's discovery file there, readable, well-formed, and about this server?"""
    data = _read_checked(path, {"port": int, "workspacePath": str, "authToken": str, "ideInfo": dict})
    if isinstance(data, LockCheck):
        return data
    mismatches = _server_mismatches(data, port=port, token=token, workspace_path=workspace_path)
    return LockCheck(str(path), "mismatch", "; ".join(mismatches)) if mismatches else LockCheck(str(path), "ok")


def probe_cli(name: str, *, timeout: float = VERSION_TIMEOUT, path: str | None = None) -> CliProbe:
    """Find `name` on PATH and run `name --version` (blocking: not on the UI thread)."""
    found = shutil.which(name, path=path)
    if found is None:
        return CliProbe(name, None, error="not found on PATH")
    # else qwen and gemini re-execute themselves first
    env = dict(os.environ, QWEN_CODE_NO_RELAUNCH="true", GEMINI_CLI_NO_RELAUNCH="true")
    try:
        done = subprocess.run(
            [found, "--version"],
            capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, env=env, check=False,
            creationflags=getattr(subprocess, "CREATE_NO_WINDOW", 0),
        )
    except subprocess.TimeoutExpired:
        return CliProbe(name, found, error=f"`{name} --version` gave no answer within {timeout:g} s")
    except OSError as error:
        return CliProbe(name, found, error=f"cannot run it: {error.strerror or error}")
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [""])[-1]
        return CliProbe(name, found, error=f"`{name} --version` exited with {done.returncode}: {last}".rstrip(": "))
    lines = done.stdout.strip().splitlines()
    return CliProbe(name, found, version=lines[0].strip() if lines else "(no output)")


def qwen_home(environ: Mapping[str, str]) -> Path:
    """Where qwen keeps settings.json and ide/, as the CLI computes it."""
    return lockfile.lock_dir(environ).parent


# Strings are kept; comments and trailing commas (qwen accepts both) are dropped.
_JSONC = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/|,(?=\s*[}\]])', re.DOTALL)


def _loads_jsonc(text: str) -> object:
    return json.loads(_JSONC.sub(lambda m: m[0] if m[0].startswith('"') else "", text))


def read_qwen_settings(path: Path) -> QwenSettings:
    where = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return QwenSettings(where, exists=False)
    except OSError as error:
        return QwenSettings(where, exists=True, error=error.strerror or str(error))
    try:
        data = _loads_jsonc(text) if text.strip() else {}
    except ValueError as error:
        return QwenSettings(where, exists=True, error=f"not valid JSON: {error}")
    if not isinstance(data, dict):
        return QwenSettings(where, exists=True, error="not a JSON object")
    ide = data.get("ide")
    tools = data.get("tools")
    # Flat keys are the settings' first format, which qwen still migrates.
    enabled = ide.get("enabled") if isinstance(ide, dict) else data.get("ideMode")
    mode = tools.get("approvalMode") if isinstance(tools, dict) else data.get("approvalMode")
    return QwenSettings(
        where,
        exists=True,
        ide_enabled=enabled if isinstance(enabled, bool) else None,
        approval_mode=mode if isinstance(mode, str) else None,
    )


def approval_mode_from_command(argv: Sequence[str]) -> str | None:
    """An approval mode forced by the command line (`--approval-mode X`, `--yolo`)."""
    for index, word in enumerate(argv):
        if word in ("--yolo", "-y"):
            return "yolo"
        if word == "--approval-mode" and index + 1 < len(argv):
            return argv[index + 1]
        if word.startswith("--approval-mode="):
            return word.split("=", 1)[1]
    return None


def folder_inside(folder: str, roots: Sequence[str], style: PathStyle = HOST_STYLE) -> bool:
    """Would the CLI accept `folder` as its working directory? Like the CLI,
    compare real paths (symlinks resolved)."""
    return any(is_within(folder, root, style) for root in roots)


# --- the report -----------------------------------------------------------


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def _row(label: str, value: str) -> str:
    return f"  {label + ':' if label else '':<16}{value}"


def _clock(at: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(at))


_REFUSAL_NAMES = {
    "origin": "browser request",
    "host": "wrong Host header",
    "missing-token": "no token",
    "wrong-token": "wrong token",
}


def _setting_source(facts: Facts, name: Literal["ide_enabled", "approval_mode"]) -> tuple[object, str | None]:
    """The effective value of a qwen setting and the file it comes from."""
    for settings in (facts.folder_settings, facts.user_settings):
        if settings is not None and getattr(settings, name) is not None:
            return getattr(settings, name), settings.path
    return None, None


def effective_approval_mode(facts: Facts) -> tuple[str, str]:
    """(mode, where it comes from)."""
    if facts.command_approval_mode:
        return facts.command_approval_mode, "the qwen_command setting"
    mode, source = _setting_source(facts, "approval_mode")
    if isinstance(mode, str) and source:
        return mode, source
    return CLI_DEFAULT_APPROVAL_MODE, "not set; qwen 0.24.4's default"


_HOW_TO_REVIEW = ('For reviews in Sublime, set "tools": {"approvalMode": "default"} in qwen\'s settings.json '
                  "or start qwen with --approval-mode default.")


def approval_advice(mode: str) -> str:
    if mode in ASKING_MODES:
        return "edits ask first, and each proposed edit opens as a diff in Sublime Text."
    if mode == "auto":
        return f"qwen approves most edits without asking, so a diff rarely opens in Sublime Text. {_HOW_TO_REVIEW}"
    if mode in ("yolo", "auto-edit"):
        return f"edits are applied without asking, so no diff opens in Sublime Text. {_HOW_TO_REVIEW}"
    return "not a mode qwen 0.24.4 knows (plan, default, auto-edit, auto, yolo)."


def problems(facts: Facts) -> list[str]:
    """What would stop a CLI from connecting, most likely first."""
    found: list[str] = []
    if facts.startup_error:
        found.append(f"The companion did not start: {facts.startup_error}")
    elif not facts.running:
        found.append("This window's server is not running. Run “Qwen Code: Restart Server”; "
                     "if it fails again, “Qwen Code: Show Log” says why.")
    if facts.lock_error:
        found.append(f"The companion {facts.lock_error}, so the CLI cannot find this server. "
                     f"Make {facts.lock_directory} writable, then run “Qwen Code: Restart Server”.")
    elif facts.lock is not None and facts.lock.state != "ok":
        lock = facts.lock
        what = {
            "missing": "is missing",
            "unreadable": f"cannot be read ({lock.detail})",
            "malformed": f"is not a valid lock file ({lock.detail})",
            "mismatch": f"does not describe this server ({lock.detail})",
        }[lock.state]
        found.append(f"The lock file {lock.path} {what}, so the CLI cannot find this server. "
                     "Run “Qwen Code: Restart Server” to write it again.")
    if facts.relative_qwen_home is not None:
        found.append(f"QWEN_HOME is a relative path ({facts.relative_qwen_home}): qwen resolves it against the "
                     f"folder it starts in, so it looks for lock files elsewhere in every folder (this window's "
                     f"are in {facts.lock_directory}). Set QWEN_HOME to an absolute path.")
    if facts.running and not facts.roots:
        found.append("This window has no folder, and the CLI refuses to connect to a window without "
                     "one (“please open a workspace folder”). Add one: Project → Add Folder to Project…")
    elif facts.folder is not None and facts.folder_inside is False:
        found.append(f"{facts.folder} is outside this window's folders, so a CLI started there refuses to "
                     f"connect (“Directory mismatch”). Start qwen in {' or '.join(facts.roots)} (as "
                     "“Qwen Code: Open in Terminal” does), or add the folder to this window: "
                     "Project → Add Folder to Project…")
    found += _settings_problems(facts)
    found += _refusal_problems(facts)
    found += _cli_problems(facts)
    if not facts.terminus:
        found.append(f"Terminus is not installed, and “Qwen Code: Open in Terminal” needs it ({INSTALL_TERMINUS}). "
                     "Meanwhile “Qwen Code: Copy Connect Command” starts qwen from any terminal.")
    return found


def _cli_problems(facts: Facts) -> list[str]:
    shell = facts.shell_cli
    if shell is not None and shell.path and not shell.error:
        return []  # Open in Terminal runs qwen through the login shell, which finds it
    cli = facts.cli
    if cli.path is not None and not cli.error:
        return []
    if cli.path is None:
        sentence = f"`{cli.name}` is not on Sublime Text's PATH"
        advice = (". Install Qwen Code (npm install -g @qwen-code/qwen-code) or set qwen_command to its full path. "
                  "(A terminal whose shell profile adds it to PATH may still find it.)")
    else:
        sentence, advice = f"`{cli.name}` does not run: {cli.error}", "."
    if shell is not None and facts.login_shell:
        sentence += (f"; your login shell ({facts.login_shell} -l -i, which Open in Terminal uses) "
                     f"{'does not find it' if shell.path is None else 'cannot run it'} either ({shell.error})")
        advice = (". Install Qwen Code (npm install -g @qwen-code/qwen-code); installed with nvm, load nvm in "
                  "~/.zprofile (read by login shells) as well as ~/.zshrc; or set qwen_command to "
                  '["/full/path/to/node", "/full/path/to/qwen"].')
    if facts.suggested_command:
        advice = (f'. Set "qwen_command": {json.dumps(facts.suggested_command)} in the package settings: node and '
                  "qwen by full path, because qwen starts with `#!/usr/bin/env node` and its path alone still "
                  "needs node on PATH.")
    return [sentence + advice]


def _settings_problems(facts: Facts) -> list[str]:
    found: list[str] = []
    for settings in (facts.user_settings, facts.folder_settings):
        if settings is not None and settings.error:
            found.append(f"qwen cannot read {settings.path} ({settings.error}); fix it, or qwen ignores its settings.")
    enabled, source = _setting_source(facts, "ide_enabled")
    if enabled is not True:
        where = f"ide.enabled is false in {source}" if source else "ide.enabled is not set"
        found.append(f"IDE mode is off in qwen ({where}). Run /ide enable inside qwen once, or set "
                     f'"ide": {{"enabled": true}} in {source or facts.user_settings.path}.')
    return found


def _refusal_problems(facts: Facts) -> list[str]:
    found: list[str] = []
    wrong = [r for r in facts.refusals if r.reason == "wrong-token"]
    missing = [r for r in facts.refusals if r.reason == "missing-token"]
    if wrong:
        found.append(f"{len(wrong)} request(s) came with a wrong token (last at {_clock(wrong[-1].at)}): a CLI "
                     "is using another server's lock file, usually because it was started before this server "
                     "restarted or in another window's terminal. Run /ide enable in it to look again, or "
                     "start it anew with “Qwen Code: Open in Terminal”.")
    if missing:
        found.append(f"{len(missing)} request(s) came without a token (last at {_clock(missing[-1].at)}): a CLI "
                     "whose QWEN_CODE_IDE_SERVER_PORT points here runs in a folder outside this window's "
                     "folders (the CLI then tries the port without the token).")
    return found


def _probe_text(probe: CliProbe, where: str, display: Callable[[str], str]) -> str:
    if probe.path is None:
        return f"`{probe.name}` not found {where}"
    if probe.error:
        return f"{display(probe.path)} ({probe.error})"
    return f"{display(probe.path)}, version {probe.version}"


_CHECK_TEXT = {
    "ok": "readable, well-formed, matches this server",
    "missing": "missing",
    "unreadable": "unreadable: {}",
    "malformed": "malformed: {}",
    "mismatch": "does not match this server: {}",
}


def _gemini_lines(gemini: GeminiFacts | None, display: Callable[[str], str]) -> list[str]:
    lines = ["", "gemini CLI"]
    if gemini is None:
        return [*lines, _row("served", "no (not in the companion_clis setting)")]
    lines.append(_row("executable", _probe_text(gemini.cli, "on PATH", display)))
    if gemini.error:
        lines.append(_row("discovery file", f"not written: {gemini.error}"))
    elif gemini.file is not None:
        lines.append(_row("discovery file", gemini.file.path))
        lines.append(_row("", _CHECK_TEXT[gemini.file.state].format(gemini.file.detail)))
    return lines


def _remote_lines(remote: RemoteFacts | None) -> list[str]:
    lines = ["", "Remote endpoint (WSL, containers, SSH)"]
    if remote is None:
        return [*lines, _row("state", "none (set path_maps, or wsl_distro on Windows)")]
    lines.append(_row("port", str(remote.port)))
    lines.append(_row("lock file", remote.lock_file or "not written"))
    if not remote.folders:
        return [*lines, _row("folders there", "none: no path_maps entry holds a folder of this window")]
    lines.append(_row("folders there", remote.folders[0]))
    return lines + [_row("", folder) for folder in remote.folders[1:]]


def build_report(facts: Facts, display: Callable[[str], str] = str) -> str:
    """The report; `display` shows a file's path as the user reads it (relative
    to the window's folder). The folders themselves are shown whole."""
    lines = [f"Qwen Code: connection diagnosis for window {facts.window_id}, {_clock(facts.now)}", ""]

    found = problems(facts)
    subject = f"a CLI started in {facts.folder}" if facts.folder else "a CLI"
    lines.append(f"Most likely reason {subject} would not connect:")
    if found:
        lines.append(f"  • {found[0]}")
        if len(found) > 1:
            lines.append("Also check:")
            lines += [f"  • {item}" for item in found[1:]]
    elif facts.sessions:
        lines.append(f"  None found: {len(facts.sessions)} CLI(s) connected.")
    else:
        lines.append("  None found. Start qwen in one of the window's folders (“Qwen Code: Open in Terminal” "
                     "does), then run /ide status inside it.")

    lines += ["", "Server"]
    if facts.running:
        lines.append(_row("state", f"running since {_clock(facts.started_at)} ({_duration(facts.now - facts.started_at)})"))
        lines.append(_row("port", str(facts.port)))
    else:
        lines.append(_row("state", "not running"))
    if facts.lock is not None:
        lines.append(_row("lock file", facts.lock.path))
        lines.append(_row("", _CHECK_TEXT[facts.lock.state].format(facts.lock.detail)))
    else:
        lines.append(_row("lock folder", facts.lock_directory))
    lines.append(_row("folders", facts.roots[0] if facts.roots else "(none)"))
    lines += [_row("", root) for root in facts.roots[1:]]

    lines += ["", f"Connected CLIs: {len(facts.sessions)}"]
    for session in facts.sessions:
        stream = "event stream open" if session.stream_open else "no event stream (gets no context)"
        lines.append(f"  {session.id_prefix}  {session.client_name or '(unnamed)'}  "
                     f"for {_duration(session.age_seconds)}, {stream}")

    if facts.refusals:
        shown = facts.refusals[-MAX_REFUSALS_SHOWN:]
        lines += ["", f"Refused requests (last {len(shown)} of {len(facts.refusals)}):"]
        for refusal in shown:
            name = _REFUSAL_NAMES.get(refusal.reason, refusal.reason)
            lines.append(f"  {_clock(refusal.at)}  {name}: {refusal.detail}")

    lines += ["", "qwen CLI"]
    lines.append(_row("executable", _probe_text(facts.cli, "on PATH", display)))
    if facts.shell_cli is not None and facts.login_shell:
        lines.append(_row("login shell", f"{facts.login_shell} -l -i (runs qwen for Open in Terminal): "
                          + _probe_text(facts.shell_cli, "by that shell", display)))
    for label, settings in (("settings", facts.user_settings), ("folder settings", facts.folder_settings)):
        if settings is None or (settings is facts.folder_settings and not settings.exists):
            continue
        state = "not found" if not settings.exists else (settings.error or "read")
        lines.append(_row(label, f"{display(settings.path)} ({state})"))
    enabled, source = _setting_source(facts, "ide_enabled")
    lines.append(_row("ide.enabled", json.dumps(enabled) if source else "not set (off)"))
    mode, mode_source = effective_approval_mode(facts)
    lines.append(_row("approval mode", f"{mode} ({mode_source})"))
    lines.append(_row("", approval_advice(mode)))
    lines.append(_row("Terminus", "installed" if facts.terminus else "not installed"))
    lines += _gemini_lines(facts.gemini, display)
    lines += _remote_lines(facts.remote)

    if facts.folder is not None:
        lines += ["", f"Folder checked: {facts.folder}"]
        if facts.folder_inside:
            lines.append("  inside the window's folders: a CLI started there may connect.")
        elif facts.folder_inside is False:
            lines.append("  outside the window's folders: a CLI started there refuses to connect.")
    return "\n".join(lines) + "\n"
