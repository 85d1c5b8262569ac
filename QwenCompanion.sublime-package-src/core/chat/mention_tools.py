"""The outside tools mentions read from: `git` for `@diff`, the platform's
clipboard tool for a pasted image. Each runs as an argument list (never a
shell), with a time limit and a cap on what is read of its output; callers
run these on a thread of their own (they wait for a process)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..processes import kill_group, own_group_options

TOOL_TIMEOUT = 10.0  # seconds
MAX_MENTION_CHARS = 64 * 1024  # a mention's text, whatever it is
MAX_DIFF_BYTES = MAX_MENTION_CHARS  # what is read of git's output; the rest is not sent anyway
MAX_UNTRACKED = 200  # names of untracked files listed with a diff
MAX_CLIPBOARD_BYTES = 10 * 1024 * 1024 + 1  # one more than an image may have: "too large" is told apart


class MentionError(ValueError):
    """A mention that cannot be made; the message says why, for the user."""


@dataclass(frozen=True)
class ToolOutput:
    returncode: int
    stdout: bytes
    truncated: bool  # more was written than `limit`


def run_tool(argv: Sequence[str], *, cwd: str | None = None, limit: int, timeout: float = TOOL_TIMEOUT) -> ToolOutput:
    """Run `argv` (no shell), reading at most `limit` bytes of its output; past
    the limit or the time it is ended. Raises MentionError when it cannot start."""
    try:
        process = subprocess.Popen(
            list(argv), cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            **own_group_options(),
        )
    except OSError as error:
        raise MentionError(f"could not run {argv[0]}: {error.strerror or error}") from None
    assert process.stdout is not None
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        kill_group(process.pid)

    timer = threading.Timer(timeout, expire)
    timer.start()
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
        raise MentionError(f"{os.path.basename(argv[0])} gave no answer within {timeout:g} s")
    return ToolOutput(returncode, data[:limit], truncated)


def git_diff(folder: str, *, git: str | None = None) -> tuple[str, str, list[str], bool]:
    """(repository root, `git diff HEAD` text, untracked files, diff cut short)
    of the repository holding `folder`."""
    program = git or shutil.which("git")
    if program is None:
        raise MentionError("@diff needs git, which is not on the PATH")
    top = run_tool([program, "-C", folder, "rev-parse", "--show-toplevel"], limit=4096)
    if top.returncode != 0:
        raise MentionError(f"{folder} is not in a git repository")
    root = os.path.normpath(top.stdout.decode("utf-8", "replace").strip() or folder)
    plain = ["-c", "core.quotepath=off", "--no-pager"]
    diff = run_tool([program, "-C", root, *plain, "diff", "HEAD", "--no-color", "--no-ext-diff", "--"], limit=MAX_DIFF_BYTES)
    if diff.returncode != 0 and not diff.truncated:  # no commit yet: what is staged and what is not
        diff = run_tool([program, "-C", root, *plain, "diff", "--no-color", "--no-ext-diff", "--"], limit=MAX_DIFF_BYTES)
    others = run_tool([program, "-C", root, *plain, "ls-files", "--others", "--exclude-standard", "-z"], limit=64 * 1024)
    untracked = [n for n in others.stdout.decode("utf-8", "replace").split("\0") if n][:MAX_UNTRACKED + 1]
    return root, diff.stdout.decode("utf-8", "replace"), untracked, diff.truncated


# The platforms' clipboard tools, as argument lists that write a PNG to stdout.
_WINDOWS_CLIPBOARD = (
    "Add-Type -AssemblyName System.Windows.Forms, System.Drawing;"
    "$i = [System.Windows.Forms.Clipboard]::GetImage();"
    "if ($i) { $m = New-Object System.IO.MemoryStream;"
    " $i.Save($m, [System.Drawing.Imaging.ImageFormat]::Png);"
    " $o = [Console]::OpenStandardOutput(); $o.Write($m.ToArray(), 0, $m.Length); $o.Flush() }"
)


def clipboard_tools(platform: str, environ: dict[str, str]) -> list[tuple[str, list[str]]]:
    """(tool name, argv) to try in order on `platform` (sys.platform's values)."""
    if platform == "win32":
        return [("powershell", ["powershell", "-NoProfile", "-NonInteractive", "-STA", "-Command", _WINDOWS_CLIPBOARD])]
    if platform == "darwin":
        return [("pngpaste", ["pngpaste", "-"]),
                ("osascript", ["osascript", "-e", "the clipboard as «class PNGf»"])]
    tools = [("xclip", ["xclip", "-selection", "clipboard", "-target", "image/png", "-out"])]
    if environ.get("WAYLAND_DISPLAY"):
        tools.insert(0, ("wl-paste", ["wl-paste", "--no-newline", "--type", "image/png"]))
    return tools


def missing_tools_message(platform: str) -> str:
    if platform == "win32":
        return "pasting an image needs PowerShell (powershell.exe), which is not on the PATH"
    if platform == "darwin":
        return "pasting an image needs pngpaste (brew install pngpaste) or osascript, and neither is on the PATH"
    return "pasting an image needs wl-paste (package wl-clipboard) on Wayland or xclip on X11, and neither is on the PATH"


def clipboard_image(platform: str = sys.platform, environ: dict[str, str] | None = None,
                    which: Callable[[str], str | None] = shutil.which) -> bytes:
    """The clipboard's image as the first present tool gives it (at most
    `MAX_CLIPBOARD_BYTES`); MentionError saying which tool is missing."""
    tried = False
    for name, argv in clipboard_tools(platform, dict(os.environ if environ is None else environ)):
        program = which(argv[0])
        if program is None:
            continue
        tried = True
        output = run_tool([program, *argv[1:]], limit=MAX_CLIPBOARD_BYTES * (2 if name == "osascript" else 1) + 64)
        data = _from_osascript(output.stdout) if name == "osascript" else output.stdout
        if output.returncode == 0 and data:
            return data
        if output.truncated:
            raise MentionError("the image on the clipboard is larger than 10 MiB")
    if not tried:
        raise MentionError(missing_tools_message(platform))
    raise MentionError("the clipboard holds no image")


def _from_osascript(output: bytes) -> bytes:
    """osascript prints PNG data as `«data PNGf89504E47…»`."""
    text = output.decode("utf-8", "replace").strip()
    prefix = "«data PNGf"
    if not text.startswith(prefix) or not text.endswith("»"):
        return b""
    try:
        return bytes.fromhex(text[len(prefix):-1])
    except ValueError:
        return b""
