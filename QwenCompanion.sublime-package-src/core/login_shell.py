"""Finding qwen the way the user's shell does (macOS).

Sublime started from the Dock or Finder has launchd's PATH, without what
~/.zprofile, ~/.zshrc or ~/.bash_profile add (nvm, Homebrew, Volta), and
Terminus runs a string command with `bash -l -c`, which reads none of zsh's
files. So Open in Terminal runs qwen through the user's login shell
(`core.cli.terminal.login_shell_argv`), and Diagnose asks that same shell.
Blocking (it runs the shell): never on the UI thread.
"""

from __future__ import annotations

import os
import shlex
import subprocess

from .cli.terminal import login_shell_argv
from .diagnose import VERSION_TIMEOUT, CliProbe

_MARK = "__qwen_companion_path__"


def probe_cli_in_login_shell(name: str, shell: str, *, timeout: float = VERSION_TIMEOUT) -> CliProbe | None:
    """`name` as the login shell finds and runs it (`--version`); None when
    the shell is not one that takes `-l -i -c`."""
    quoted = shlex.quote(name)
    script = f'printf "\\n{_MARK}%s\\n" "$(command -v {quoted})"; QWEN_CODE_NO_RELAUNCH=true {quoted} --version'
    if os.path.basename(shell) == "fish":  # fish sets variables with env, not a prefix assignment
        script = f'printf "\\n{_MARK}%s\\n" (command -v {quoted}); env QWEN_CODE_NO_RELAUNCH=true {quoted} --version'
    argv = login_shell_argv(shell, script)
    if argv is None:
        return None
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired:
        return CliProbe(name, None, error=f"{shell} -l -i gave no answer within {timeout:g} s")
    except OSError as error:
        return CliProbe(name, None, error=f"cannot run {shell}: {error.strerror or error}")
    lines = done.stdout.splitlines()
    marked = [index for index, line in enumerate(lines) if line.startswith(_MARK)]
    found = lines[marked[-1]][len(_MARK):].strip() if marked else ""
    if not found:
        return CliProbe(name, None, error=f"not found by {shell} -l -i")
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [""])[-1]
        return CliProbe(name, found, error=f"`{name} --version` exited with {done.returncode}: {last}".rstrip(": "))
    after = [line.strip() for line in lines[marked[-1] + 1:] if line.strip()]
    return CliProbe(name, found, version=after[0] if after else "(no output)")
