"""The user's pages say what the package is: the README stays short, and the
references in docs/ list exactly the package's settings (with their defaults)
and palette commands (caption and command), so neither can drift from
QwenCompanion.sublime-settings and Default.sublime-commands. A key written as
a Ctrl+K chord in a table is the one the keymap binds to that command, and the
commands reference gives every chord of the keymap.

When a setting or a command is added, the failure says which row to add and
where; fill in its meaning. (Links and anchors: test_docs_links.py.)
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.sublime_sim._jsonc import decode_value

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
SETTINGS_PAGE = ROOT / "docs" / "settings.md"
COMMANDS_PAGE = ROOT / "docs" / "commands.md"
SETTINGS_FILE = ROOT / "QwenCompanion.sublime-package-src" / "QwenCompanion.sublime-settings"
COMMANDS_FILE = ROOT / "Default.sublime-commands"
KEYMAP_FILE = ROOT / "QwenCompanion.sublime-package-src" / "Default.sublime-keymap"
README_MAX_LINES = 300

CODE_SPAN = re.compile(r"`([^`]+)`")
CHORD = re.compile(r"<kbd>Ctrl\+K</kbd>, <kbd>([A-Z])</kbd>")


@dataclass(frozen=True)
class Row:
    """One row of a Markdown table: its header's cells and its own."""

    header: tuple[str, ...]
    cells: tuple[str, ...]


def _cells(line: str) -> tuple[str, ...]:
    """The cells of a table line; a `|` inside a code span is text."""
    cells, current, in_code = [], "", False
    for char in line.strip().strip("|"):
        if char == "`":
            in_code = not in_code
        if char == "|" and not in_code:
            cells.append(current.strip())
            current = ""
        else:
            current += char
    return (*cells, current.strip())


def table_rows(text: str) -> Iterator[Row]:
    header: tuple[str, ...] | None = None
    previous = ""
    for line in text.splitlines():
        if not line.startswith("|"):
            header, previous = None, line
            continue
        if re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", line.strip()):
            header = _cells(previous)
        elif header is not None:
            yield Row(header, _cells(line))
        previous = line


def _code(cell: str) -> list[str]:
    return CODE_SPAN.findall(cell)


def shipped_settings() -> dict[str, Any]:
    settings: dict[str, Any] = decode_value(SETTINGS_FILE.read_text(encoding="utf-8"))
    return settings


def shipped_commands() -> list[dict[str, Any]]:
    commands: list[dict[str, Any]] = json.loads(COMMANDS_FILE.read_text(encoding="utf-8"))
    return commands


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def documented_settings(text: str) -> dict[str, str]:
    """Each setting of the page's `Setting | Default | …` tables: its default as written."""
    return {_code(row.cells[0])[0]: row.cells[1]
            for row in table_rows(text) if row.header[:2] == ("Setting", "Default") and _code(row.cells[0])}


def settings_problems(page: str, text: str, settings: dict[str, Any], *, every: bool) -> list[str]:
    """What `page` says wrong of `settings`; with `every`, what it leaves out too."""
    documented = documented_settings(text)
    problems = []
    for name, value in settings.items():
        if name not in documented:
            if every:
                problems.append(f"{page} lacks the setting `{name}` of QwenCompanion.sublime-settings: add the row "
                                f"| `{name}` | `{_json(value)}` | <what it does> | to the table of its feature")
            continue
        written = _code(documented[name])
        try:
            shown = json.loads(written[0]) if len(written) == 1 else None
        except json.JSONDecodeError:
            shown = None
        if shown != value or len(written) != 1:
            problems.append(f"{page} gives `{name}` the default {documented[name]}; "
                            f"QwenCompanion.sublime-settings has `{_json(value)}`: write that in its Default cell")
    problems += [f"{page} lists the setting `{name}`, which QwenCompanion.sublime-settings does not have: "
                 f"remove its row (or add the setting there)" for name in documented if name not in settings]
    return problems


def _palette_entry(cells: tuple[str, ...]) -> tuple[str, str]:
    return cells[0], (_code(cells[1]) or [""])[0]


def _expected_row(command: dict[str, Any]) -> str:
    args = f" `{_json(command['args'])}`" if "args" in command else ""
    return f"| {command['caption']} | `{command['command']}`{args} | <key> | <what it does> |"


def commands_problems(page: str, text: str, commands: list[dict[str, Any]]) -> list[str]:
    """Where `page`'s `Command palette | Command | …` rows and the palette's entries differ."""
    documented = Counter(_palette_entry(row.cells) for row in table_rows(text)
                         if row.header[:2] == ("Command palette", "Command"))
    shipped = Counter((command["caption"], command["command"]) for command in commands)
    problems = [f"{page} lacks the palette entry {caption!r} ({name}) of Default.sublime-commands: add the row "
                + _expected_row(next(c for c in commands if (c["caption"], c["command"]) == (caption, name)))
                + " to the section of its feature"
                for caption, name in (shipped - documented).elements()]
    problems += [f"{page} lists {caption!r} ({name}), which Default.sublime-commands does not have (or has once): "
                 f"remove the row or correct its caption and command" for caption, name in (documented - shipped).elements()]
    return problems


def _chords(keymap: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """(letter, command, args as JSON) of every primary+k chord of the keymap."""
    return {(binding["keys"][1].upper(), binding["command"], _json(binding.get("args", {})))
            for binding in keymap if len(binding["keys"]) == 2 and binding["keys"][0] == "primary+k"}


def documented_chords(text: str, commands: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(letter, palette entry) of every Ctrl+K chord a `Command palette` table gives a palette command."""
    by_caption = {command["caption"]: command for command in commands}
    for row in table_rows(text):
        command = by_caption.get(row.cells[0])
        if row.header[0] == "Command palette" and command is not None:
            for letter in CHORD.findall(" ".join(row.cells[1:])):
                yield letter, command


def chord_problems(page: str, text: str, commands: list[dict[str, Any]], keymap: list[dict[str, Any]]) -> list[str]:
    """A Ctrl+K chord a table gives a palette command is bound to that command (and its args)."""
    bound = _chords(keymap)
    return [f"{page}: {command['caption']!r} is given Ctrl+K, {letter}, "
            f"which Default.sublime-keymap does not bind to {command['command']}"
            for letter, command in documented_chords(text, commands)
            if (letter, command["command"], _json(command.get("args", {}))) not in bound]


def test_the_readme_is_short() -> None:
    lines = len(README.read_text(encoding="utf-8").splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines: move detail into docs/ (at most {README_MAX_LINES})"


def test_the_settings_reference_lists_every_setting_with_its_default() -> None:
    problems = settings_problems("docs/settings.md", SETTINGS_PAGE.read_text(encoding="utf-8"),
                                 shipped_settings(), every=True)
    assert not problems, "\n".join(problems)


def test_the_readmes_settings_are_settings_with_their_defaults() -> None:
    text = README.read_text(encoding="utf-8")
    assert documented_settings(text), "README.md's settings table is gone"
    problems = settings_problems("README.md", text, shipped_settings(), every=False)
    assert not problems, "\n".join(problems)


def test_the_commands_reference_lists_every_palette_command() -> None:
    problems = commands_problems("docs/commands.md", COMMANDS_PAGE.read_text(encoding="utf-8"), shipped_commands())
    assert not problems, "\n".join(problems)


def test_the_readmes_commands_are_palette_commands() -> None:
    captions = {command["caption"] for command in shipped_commands()}
    rows = [row for row in table_rows(README.read_text(encoding="utf-8")) if row.header[0] == "Command palette"]
    assert 0 < len(rows) <= 10
    assert [row.cells[0] for row in rows if row.cells[0] not in captions] == []


def test_the_keys_the_pages_give_are_the_keymaps() -> None:
    keymap: list[dict[str, Any]] = decode_value(KEYMAP_FILE.read_text(encoding="utf-8"))
    commands = shipped_commands()
    problems = [problem for page in (README, COMMANDS_PAGE, ROOT / "docs" / "quick-actions.md")
                for problem in chord_problems(page.name, page.read_text(encoding="utf-8"), commands, keymap)]
    assert not problems, "\n".join(problems)


def test_every_chord_of_the_keymap_is_in_the_commands_reference() -> None:
    keymap: list[dict[str, Any]] = decode_value(KEYMAP_FILE.read_text(encoding="utf-8"))
    shown = {(letter, command["command"], _json(command.get("args", {})))
             for letter, command in documented_chords(COMMANDS_PAGE.read_text(encoding="utf-8"), shipped_commands())}
    missing = [f"Ctrl+K, {letter} runs {command}" + ("" if args == "{}" else f" {args}")
               + ": give it in the Key cell of that command's row in docs/commands.md"
               for letter, command, args in sorted(_chords(keymap) - shown)]
    assert not missing, "\n".join(missing)


def test_the_checks_name_what_to_add_and_what_is_wrong() -> None:
    """A reference with a setting missing, a wrong default, a stale command and a
    command missing: each is named with the row to write."""
    settings = {"log_level": "INFO", "serve_idle_minutes": 30}
    page = "| Setting | Default | Meaning |\n|---|---|---|\n| `log_level` | `\"DEBUG\"` | How much. |\n"
    assert settings_problems("s.md", page, settings, every=True) == [
        ("s.md gives `log_level` the default `\"DEBUG\"`; QwenCompanion.sublime-settings has `\"INFO\"`: "
         "write that in its Default cell"),
        ("s.md lacks the setting `serve_idle_minutes` of QwenCompanion.sublime-settings: add the row "
         "| `serve_idle_minutes` | `30` | <what it does> | to the table of its feature"),
    ]
    commands = [{"caption": "Qwen Code: Chat", "command": "qwen_chat"},
                {"caption": "Qwen Code: Fix", "command": "qwen_action", "args": {"action": "fix"}}]
    page = ("| Command palette | Command | Key | What it does |\n|---|---|---|---|\n"
            "| Qwen Code: Chat | `qwen_chat` | | Opens it. |\n| Qwen Code: Gone | `qwen_gone` | | Was. |\n")
    assert commands_problems("c.md", page, commands) == [
        ("c.md lacks the palette entry 'Qwen Code: Fix' (qwen_action) of Default.sublime-commands: add the row "
         '| Qwen Code: Fix | `qwen_action` `{"action": "fix"}` | <key> | <what it does> | to the section of its feature'),
        ("c.md lists 'Qwen Code: Gone' (qwen_gone), which Default.sublime-commands does not have (or has once): "
         "remove the row or correct its caption and command"),
    ]
    keymap = [{"keys": ["primary+k", "c"], "command": "qwen_chat"}]
    page = "| Command palette | Key |\n|---|---|\n| Qwen Code: Chat | <kbd>Ctrl+K</kbd>, <kbd>H</kbd> |\n"
    assert chord_problems("r.md", page, commands, keymap) == [
        "r.md: 'Qwen Code: Chat' is given Ctrl+K, H, which Default.sublime-keymap does not bind to qwen_chat"]
