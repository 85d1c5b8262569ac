"""Desktop notifications' commands per platform: argv only (no shell), the
agent's text cleaned, capped, and never code for osascript or PowerShell."""

from __future__ import annotations

from functools import partial

import pytest

from qwencompanion_src.core.display_text import display_text
from qwencompanion_src.core.notifications import (
    APPLESCRIPT,
    POWERSHELL_SCRIPT,
    TEXT_ENV,
    TEXT_LIMIT,
    TITLE,
    TITLE_ENV,
    desktop_command,
)

HOSTILE = [
    '" & (do shell script "touch ~/pwned") & "',  # AppleScript string break-out
    "'; Remove-Item -Recurse C:\\ ; '",  # PowerShell
    "$(Start-Process calc) `$env:PATH` ${env:HOME}",
    "--urgency=critical -i /etc/passwd",  # an option to notify-send
    "a\x00b\x1b[31mred\x07\x7f\x9b",  # NUL, an escape sequence, bell, DEL, CSI
    "evil\u202egnp.exe \u2066x\u2069 zero\u200bwidth",  # bidi override, isolates, zero width
    "line one\nline two\r\n\tthree\u2028four",
]


clean_text = partial(display_text, limit=TEXT_LIMIT)


def test_control_and_format_characters_go_and_white_space_is_one_space() -> None:
    assert clean_text("a\x00b\x1b[31mred\x07\x7f\x9b") == "ab[31mred"
    assert clean_text("evil\u202egnp.exe \u2066x\u2069 zero\u200bwidth") == "evilgnp.exe x zerowidth"
    assert clean_text("  line one\nline two\r\n\tthree\u2028four ") == "line one line two three four"


def test_long_text_is_capped() -> None:
    text = clean_text("word " * 1000)
    assert len(text) <= TEXT_LIMIT and text.endswith("…")
    assert clean_text("x" * TEXT_LIMIT) == "x" * TEXT_LIMIT


@pytest.mark.parametrize("text", HOSTILE)
def test_linux_passes_the_text_after_the_options_as_text_not_markup(text: str) -> None:
    command = desktop_command("linux", text + " <b>bold</b> & <a href='x'>")
    assert command is not None and command.env == {}
    assert command.argv[:4] == ["notify-send", "--app-name=Sublime Text", "--", TITLE]
    body = command.argv[4]
    assert len(command.argv) == 5 and "<" not in body and ">" not in body and "&lt;b&gt;bold" in body
    assert all(ord(c) >= 0x20 and c not in "\x7f\u202e\u2066" for c in body)


@pytest.mark.parametrize("text", HOSTILE)
def test_macos_gives_the_text_to_the_run_handler_never_to_the_script(text: str) -> None:
    command = desktop_command("osx", text)
    assert command is not None
    script = command.argv[1:-2]
    assert command.argv[0] == "osascript" and script == [a for line in APPLESCRIPT for a in ("-e", line)]
    assert command.argv[-2:] == [TITLE, clean_text(text)]  # the title (never an option) first, then the text


@pytest.mark.parametrize("text", HOSTILE)
def test_windows_reads_the_text_from_the_environment(text: str) -> None:
    command = desktop_command("windows", text)
    assert command is not None
    assert command.argv == ["powershell.exe", "-NoProfile", "-NonInteractive", "-WindowStyle", "Hidden",
                            "-Command", POWERSHELL_SCRIPT]
    assert command.env == {TITLE_ENV: TITLE, TEXT_ENV: clean_text(text)}
    assert f"$env:{TEXT_ENV}" in POWERSHELL_SCRIPT


def test_no_tool_on_another_platform() -> None:
    assert desktop_command("beos", "hi") is None
