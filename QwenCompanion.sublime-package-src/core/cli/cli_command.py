"""The command line that starts the agent, built like "Open in Terminal"
builds the TUI's (the `qwen_command` setting, macOS's login shell)."""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Sequence

from .node_installs import qwen_command_suggestion
from .terminal import command_argv, command_line, login_shell_argv

ACP_FLAG = "--acp"


class CommandNotFound(Exception):
    def __init__(self, message: str, program: str = "") -> None:
        super().__init__(message)
        self.program = program


def agent_argv(
    command: str | list[str], *, windows: bool, login_shell: str | None, path: str | None,
    flags: Sequence[str] = (ACP_FLAG,), home: str | None = None,
) -> list[str]:
    """`qwen_command` plus `flags` (`--acp`) as an argv. On macOS (`login_shell` given)
    it runs through the user's login shell, so nvm/Homebrew PATHs apply; a
    bare program name is looked up on `path` (Windows finds `qwen.cmd`), then
    elsewhere in the folders where nvm and Homebrew put it under `home`, as
    Diagnose Connection suggests: Sublime started from a Linux desktop has a
    PATH without what the shell's start-up files add (only a few `stat`s)."""
    words = command_argv(command, windows=windows) if isinstance(command, str) else list(command)
    words.extend(flags)
    # A string keeps its shell syntax; a list is quoted word by word.
    shell_command = " ".join([command, *map(shlex.quote, flags)]) if isinstance(command, str) else command_line(words)
    through_shell = login_shell_argv(login_shell, shell_command) if login_shell else None
    if through_shell is not None:
        return through_shell
    program = words[0]
    separators = ("/", "\\") if windows else ("/",)
    if not any(separator in program for separator in separators):  # a bare name: find it
        found = shutil.which(program, path=path)
        if found is not None:
            words[0] = found
            return words
        suggestion = qwen_command_suggestion(home, program) if home is not None and not windows else None
        if suggestion is None:
            raise CommandNotFound(
                f"“{program}” was not found on the PATH Sublime Text was started with. Install Qwen Code "
                "(npm install -g @qwen-code/qwen-code); if it is installed, run “command -v qwen” in a terminal "
                "(“where qwen” on Windows) and set “qwen_command” in the Qwen Companion settings to that full path.",
                program,
            )
        return suggestion + words[1:]
    return words
