"""Where npm puts a global command beside node (nvm, Homebrew, nodejs.org):
a `qwen_command` that needs no PATH, for a Sublime started without the
shell's (macOS)."""

from __future__ import annotations

import glob
import os


def node_install_dirs(home: str) -> list[str]:
    """Folders where npm puts global commands next to node (newest nvm first)."""
    nvm = sorted(glob.glob(os.path.join(home, ".nvm", "versions", "node", "*", "bin")), key=_version_key, reverse=True)
    return [*nvm, "/opt/homebrew/bin", "/usr/local/bin"]  # Homebrew (Apple silicon, Intel), nodejs.org


def _version_key(path: str) -> tuple[int, ...]:
    version = os.path.basename(os.path.dirname(path)).lstrip("v")
    return tuple(int(part) if part.isdigit() else 0 for part in version.split("."))


def qwen_command_suggestion(home: str, name: str = "qwen") -> list[str] | None:
    """A `qwen_command` that runs without any PATH: node and qwen by their
    full paths (qwen's first line is `#!/usr/bin/env node`, so qwen's path
    alone still needs node on PATH)."""
    for folder in node_install_dirs(home):
        qwen, node = os.path.join(folder, name), os.path.join(folder, "node")
        if os.path.isfile(qwen) and os.access(node, os.X_OK):
            return [node, os.path.realpath(qwen)]
    return None
