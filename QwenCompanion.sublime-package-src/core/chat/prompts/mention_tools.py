"""The outside tools mentions read from: `git` for `@diff`, the platform's
clipboard tool for a pasted image. Each runs as an argument list (never a
shell), with a time limit and a cap on what is read of its output."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ... import threads
from ...git import DIFF_OPTIONS, GitError, GitOutput, find_git, run_capped, run_git

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


@threads.may_block
def run_tool(argv: Sequence[str], *, cwd: str | None = None, limit: int, timeout: float = TOOL_TIMEOUT) -> ToolOutput:
    """Run `argv` (no shell), reading at most `limit` bytes of its output; past
    the limit or the time it is ended. Raises MentionError when it cannot start."""
    try:
        returncode, data, truncated = run_capped(argv, cwd=cwd, limit=limit, timeout=timeout)
    except TimeoutError as error:
        raise MentionError(str(error)) from None
    except OSError as error:
        raise MentionError(f"could not run {argv[0]}: {error.strerror or error}") from None
    return ToolOutput(returncode, data, truncated)


@threads.may_block
def git_diff(folder: str, *, boundary: str | None = None, git: str | None = None) -> tuple[str, str, list[str], bool]:
    """(repository root, `git diff HEAD` text, untracked files, diff cut short)
    of the repository holding `folder`. When that repository reaches above
    `boundary` (the window's folder holding `folder`: a folder inside a larger
    repository, a home folder kept in git), only `boundary`'s part of it is
    diffed: a mention never carries files from outside the window's folders.
    git runs through the hardened runner (core/git.py): nothing of the
    repository's runs."""
    program = git or find_git()
    if program is None:
        raise MentionError("@diff needs git, which is not on the PATH")

    def run(where: str, args: list[str], limit: int, may_filter: bool = False) -> GitOutput:
        try:
            return run_git(where, args, limit=limit, git=program, timeout=TOOL_TIMEOUT, may_filter=may_filter)
        except GitError as error:
            raise MentionError(str(error)) from None

    top = run(folder, ["rev-parse", "--show-toplevel"], 4096)
    if top.returncode != 0:
        raise MentionError(f"{folder} is not in a git repository")
    root = os.path.normpath(top.stdout.decode("utf-8", "replace").strip() or folder)
    within = _pathspec_within(root, boundary)
    plain = ["-c", "core.quotepath=off"]
    diff = run(root, [*plain, "diff", "HEAD", *DIFF_OPTIONS, "--", *within], MAX_DIFF_BYTES, True)
    if diff.returncode != 0 and not diff.truncated:  # no commit yet: what is staged and what is not
        diff = run(root, [*plain, "diff", *DIFF_OPTIONS, "--", *within], MAX_DIFF_BYTES, True)
    others = run(root, [*plain, "ls-files", "--others", "--exclude-standard", "-z", "--", *within], 64 * 1024)
    untracked = [n for n in others.stdout.decode("utf-8", "replace").split("\0") if n][:MAX_UNTRACKED + 1]
    return root, diff.stdout.decode("utf-8", "replace"), untracked, diff.truncated


def _pathspec_within(root: str, boundary: str | None) -> list[str]:
    """No pathspec when the repository lies inside `boundary`; the pathspec of
    `boundary` when the repository holds it; MentionError when neither (the
    folder reached the repository through a link out of the window's folders)."""
    if boundary is None:
        return []
    real_root, real_boundary = os.path.realpath(root), os.path.realpath(boundary)
    if _inside(real_root, real_boundary):
        return []
    if _inside(real_boundary, real_root):
        return [f":(top,literal){os.path.relpath(real_boundary, real_root).replace(os.sep, '/')}"]
    raise MentionError(f"the repository at {root} is outside the window's folder {boundary}")


def _inside(path: str, folder: str) -> bool:
    try:
        relative = os.path.relpath(path, folder)
    except ValueError:  # another drive (Windows)
        return False
    return relative != os.pardir and not relative.startswith(os.pardir + os.sep)


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


@threads.may_block
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
