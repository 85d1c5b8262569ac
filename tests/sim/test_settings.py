"""The package's one settings object (`plugin/settings.py`), with the BUILT
package in the simulated editor: the defaults are the shipped file's, and a
value of the wrong type gets the default and one warning."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.sublime_sim import _jsonc
from tests.support.editor import BUILT_PACKAGE, PACKAGE, Editor, open_editor


@pytest.fixture
def editor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Editor]:
    with open_editor(tmp_path, monkeypatch) as editor:
        yield editor


@pytest.fixture
def warnings() -> Iterator[list[str]]:
    """The warnings the package logs while the test runs."""
    caught: list[str] = []

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno == logging.WARNING:
                caught.append(record.getMessage())

    handler = Catch()
    logger = logging.getLogger(PACKAGE)
    logger.addHandler(handler)
    try:
        yield caught
    finally:
        logger.removeHandler(handler)


def module(name: str) -> ModuleType:
    return sys.modules[f"{PACKAGE}.plugin.{name}"]


def shipped_settings() -> dict[str, Any]:
    text = (BUILT_PACKAGE / "QwenCompanion.sublime-settings").read_text(encoding="utf-8")
    values = _jsonc.decode_file_text(text)
    assert isinstance(values, dict)
    return values


# --- the settings object ---------------------------------------------------------------


def test_the_defaults_are_the_shipped_files(editor: Editor, warnings: list[str]) -> None:
    settings = module("settings")
    shipped = shipped_settings()
    # Every key, and only those, with the shipped value: the two cannot drift apart.
    assert vars(settings.Settings({})) == shipped
    # The shipped values pass their own checks.
    assert vars(settings.Settings(shipped)) == shipped
    assert warnings == []


def test_a_value_of_the_wrong_type_gets_the_default_and_one_warning(editor: Editor, warnings: list[str]) -> None:
    wrong = {
        "status_bar": "yes",
        "actions_max_running": "many",  # int("many") raised before
        "context_debounce_ms": True,
        "qwen_command": 7,
        "actions_answer_place": "window",
        "excluded_file_patterns": ["*.secret", 3],  # the user's other patterns stay
        "log_level": "debug",  # a level's name in any case is right
        "chat_agents": {"mine": {"command": ["mine", "--acp"]}, "broken": {"env": {}}},  # the user's others stay
        "chat_agent": "nobody",
    }
    editor.settings(wrong)
    editor.host.wait_idle()
    prefs = module("settings").userprefs()
    assert prefs.status_bar is True
    assert prefs.actions_max_running == 3
    assert prefs.context_debounce_ms == 50
    assert prefs.qwen_command == "qwen"
    assert prefs.actions_answer_place == "beside"
    assert prefs.excluded_file_patterns == ["*.secret"]
    assert prefs.log_level == "DEBUG"
    assert prefs.chat_agents == {"mine": {"command": ["mine", "--acp"]}}
    assert prefs.chat_agent == "qwen"
    told = sorted(message.split()[2] for message in warnings)
    assert told == ["actions_answer_place", "actions_max_running", "chat_agent", "chat_agents.broken",
                    "context_debounce_ms", "excluded_file_patterns", "qwen_command", "status_bar"]
    # Another change: the same wrong values are not told again.
    editor.settings({**wrong, "chat_prestart": False})
    editor.host.wait_idle()
    assert len(warnings) == len(told)
    editor.host.assert_no_errors()


def test_a_set_from_code_is_seen_at_once(editor: Editor) -> None:
    """Sublime calls the change callbacks for `Settings.set` too: the watched copy follows."""
    editor.host.run_on_main(lambda: [
        editor.sublime.load_settings("QwenCompanion.sublime-settings").set("terminal_location", "tab"),
        editor.sublime.load_settings("Preferences.sublime-settings").set("fallback_encoding", "Cyrillic (Windows 1251)"),
    ])
    settings = module("settings")
    assert settings.userprefs().terminal_location == "tab"
    assert settings.fallback_encoding() == "Cyrillic (Windows 1251)"
