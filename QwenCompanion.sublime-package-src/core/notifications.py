"""Desktop notifications through the platform's own tool, built as argv (no
shell ever parses them): `notify-send` on Linux, `osascript` on macOS,
PowerShell on Windows. The text comes from the agent: control and bidi
characters go, it is capped, and it only ever reaches the tool as data (an
argument of osascript's `run` handler, an environment variable PowerShell
reads), never as code."""

from __future__ import annotations

from dataclasses import dataclass, field

from .display_text import display_text

TITLE = "Qwen Code"
TEXT_LIMIT = 200  # characters of the agent's text a notification shows
TEXT_ENV = "QWEN_COMPANION_NOTIFY_TEXT"
TITLE_ENV = "QWEN_COMPANION_NOTIFY_TITLE"

# osascript runs its `-e` lines, then calls `run` with the arguments after them.
APPLESCRIPT = ["on run argv", "display notification (item 2 of argv) with title (item 1 of argv)", "end run"]
# A balloon of the notification area (Windows 10/11 show it as a toast); the
# texts come from the environment, so nothing of them is PowerShell code.
POWERSHELL_SCRIPT = (
    "Add-Type -AssemblyName System.Windows.Forms; Add-Type -AssemblyName System.Drawing; "
    "$n = New-Object System.Windows.Forms.NotifyIcon; $n.Icon = [System.Drawing.SystemIcons]::Information; "
    f"$n.Visible = $true; $n.ShowBalloonTip(5000, $env:{TITLE_ENV}, $env:{TEXT_ENV}, 'Info'); "
    "Start-Sleep -Seconds 6; $n.Dispose()"
)


@dataclass(frozen=True)
class DesktopCommand:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)  # added to the editor's environment


def markup_escaped(text: str) -> str:
    """notify-send's body is markup (`<b>`, `<a href>` on some servers): shown as text."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def desktop_command(platform: str, text: str, title: str = TITLE) -> DesktopCommand | None:
    """The command that shows `text` on `platform` ("linux", "osx", "windows"
    as `sublime.platform()` says), None on any other."""
    title, text = display_text(title, TEXT_LIMIT), display_text(text, TEXT_LIMIT)
    if platform == "linux":
        # "--": a text starting with "-" is not an option.
        return DesktopCommand(["notify-send", "--app-name=Sublime Text", "--", title, markup_escaped(text)])
    if platform == "osx":
        lines = [arg for line in APPLESCRIPT for arg in ("-e", line)]
        return DesktopCommand(["osascript", *lines, title, text])
    if platform == "windows":
        return DesktopCommand(
            ["powershell.exe", "-NoProfile", "-NonInteractive", "-WindowStyle", "Hidden", "-Command", POWERSHELL_SCRIPT],
            {TITLE_ENV: title, TEXT_ENV: text},
        )
    return None
