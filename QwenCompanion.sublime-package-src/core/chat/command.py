"""The command line that starts the agent, built like "Open in Terminal"
builds the TUI's (the `qwen_command` setting, macOS's login shell)."""

from __future__ import annotations

import shutil
from collections.abc import Sequence

from ..terminal import command_argv, command_line, login_shell_argv

ACP_FLAG = "--acp"


class CommandNotFound(Exception):
    pass


def agent_argv(
    command: str | list[str], *, windows: bool, login_shell: str | None, path: str | None,
    flags: Sequence[str] = (ACP_FLAG,),
) -> list[str]:
    """`qwen_command` plus `flags` (`--acp`) as an argv. On macOS (`login_shell` given)
    it runs through the user's login shell, so nvm/Homebrew PATHs apply; a
    bare program name is looked up on `path` (Windows finds `qwen.cmd`)."""
    if isinstance(command, str):
        words = command_argv(command, windows=windows)
    else:
        words = list(command)
    words.extend(flags)
    # A string keeps its shell syntax; a list is quoted word by word.
    shell_command = f"{command} {command_line(list(flags))}" if isinstance(command, str) else command_line(words)
    through_shell = login_shell_argv(login_shell, shell_command) if login_shell else None
    if through_shell is not None:
        return through_shell
    program = words[0]
    separators = ("/", "\\") if windows else ("/",)
    if not any(separator in program for separator in separators):  # a bare name: find it
        found = shutil.which(program, path=path)
        if found is None:
            raise CommandNotFound(
                f"“{program}” was not found on the PATH. Install Qwen Code (npm install -g @qwen-code/qwen-code) "
                "or set “qwen_command” in the Qwen Companion settings to its full path."
            )
        words[0] = found
    return words
