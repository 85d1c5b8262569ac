"""The one place the package reads its settings (as sublimelsp/LSP's
`Settings` and `userprefs()` do): every key of QwenCompanion.sublime-settings
with its type and the shipped file's default, and the two of Sublime's
preferences the package follows.

A value of the wrong type gets the default and a logged warning, never an
exception. While the package is loaded (`watch`), the values are read once
and again only when the file changes, so a read from any thread is an
attribute access, not a call into Sublime; `change_listeners` then run.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

import sublime

from ..core import threads
from ..core.chat.agent.agents import entry_problem, known_agents
from ..core.files.encodings import DEFAULT_FALLBACK

log = logging.getLogger(__name__)

PACKAGE_SETTINGS = "QwenCompanion.sublime-settings"
PREFERENCES = "Preferences.sublime-settings"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
ANSWER_PLACES = ("beside", "panel", "tab")
_ON_CHANGE_TAG = "QwenCompanion.settings"

T = TypeVar("T")
type Source = "sublime.Settings | Mapping[str, Any]"

# key -> the last wrong value reported: each is told once, not at every read
_reported: dict[str, str] = {}
_reported_lock = threading.Lock()


class _Reader:
    """Reads keys of one settings source, each with its default and the test
    of its type."""

    def __init__(self, source: Source) -> None:
        self._source = source

    def read(self, key: str, default: T, valid: Callable[[object], bool], expected: str) -> T:
        value: object = self._source.get(key)
        if value is None:  # missing, or null: as LSP's settings, the default
            return default
        if valid(value):
            return cast(T, value)
        _report(key, value, f"must be {expected}; using {default!r}")
        return default

    def boolean(self, key: str, default: bool) -> bool:
        return self.read(key, default, lambda value: isinstance(value, bool), "true or false")

    def choice(self, key: str, default: str, choices: tuple[str, ...]) -> str:
        return self.read(key, default, lambda value: value in choices, "one of " + ", ".join(map(repr, choices)))

    def number(self, key: str, default: int) -> int | float:
        return self.read(key, default, _is_number, "a number")

    def strings(self, key: str, default: list[str]) -> list[str]:
        """A list whose other items are left out: a list of patterns loses
        the wrong one, not the user's others."""
        value = self.read(key, default, lambda value: isinstance(value, list), "a list of strings")
        kept = [item for item in value if isinstance(item, str)]
        if len(kept) != len(value):
            _report(key, value, "must hold only strings; the others are left out")
        return kept


    def agents(self, key: str, default: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """`chat_agents`: an object whose unusable entries are left out (each
        told once), not the user's others."""
        value = self.read(key, default, lambda value: isinstance(value, dict), "an object of agents")
        kept: dict[str, dict[str, Any]] = {}
        for name, entry in value.items():
            problem = entry_problem(name, entry)
            if problem is None:
                kept[name] = entry
            else:
                _report(f"{key}.{name}", entry, f"{problem}; it is left out")
        return kept


def _report(key: str, value: object, problem: str) -> None:
    shown = repr(value)
    with _reported_lock:
        first = _reported.get(key) != shown
        _reported[key] = shown
    if first:
        log.warning("the setting %s %s (it is %s)", key, problem, shown)


def _is_minutes(value: object) -> bool:
    return _is_number(value) and isinstance(value, (int, float)) and value >= 0


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


class Settings:
    """QwenCompanion.sublime-settings, typed; the defaults are the shipped file's
    (a test keeps them equal). Values are checked for their type here; rules on
    the value itself (a non-empty command, the debounce's range) stay with the
    code that uses it."""

    def __init__(self, source: Source) -> None:
        read = _Reader(source)
        level = read.read("log_level", "INFO", lambda value: isinstance(value, str) and value.upper() in LOG_LEVELS,
                          "one of " + ", ".join(LOG_LEVELS))
        self.log_level: str = level.upper()
        self.qwen_command: str | list[str] = read.read(
            "qwen_command", "qwen", lambda value: isinstance(value, str) or _is_strings(value),
            "a string or a list of strings")
        self.gemini_command: str | list[str] = read.read(
            "gemini_command", "gemini", lambda value: isinstance(value, str) or _is_strings(value),
            "a string or a list of strings")
        self.terminal_location: str = read.read("terminal_location", "panel", lambda value: isinstance(value, str),
                                                "a string")
        self.terminal_reuse: bool = read.boolean("terminal_reuse", True)
        self.terminal_auto_close: bool | str = read.read(
            "terminal_auto_close", "on_success", lambda value: isinstance(value, (bool, str)), "true, false or a string")
        self.status_bar: bool = read.boolean("status_bar", True)
        self.context_debounce_ms: int | float = read.number("context_debounce_ms", 50)
        self.send_selected_text: bool = read.boolean("send_selected_text", True)
        self.excluded_file_patterns: list[str] = read.strings("excluded_file_patterns", [
            ".env", ".env.*", "*.pem", "*.key", "*.p12", "*.pfx",
            "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", ".netrc", ".pgpass",
        ])
        self.workspace_trusted: bool | None = read.read(
            "workspace_trusted", None, lambda value: value is None or isinstance(value, bool), "true, false or null")
        self.ide_tools: bool = read.boolean("ide_tools", True)
        self.companion_clis: list[str] = read.strings("companion_clis", ["qwen", "gemini"])
        # A CLI elsewhere (a container, SSH, WSL): entries are checked by core.cli.path_maps.
        self.path_maps: list[Any] = read.read("path_maps", [], lambda value: isinstance(value, list),
                                              "a list of {\"local\": …, \"remote\": …}")
        self.wsl_distro: str = read.read("wsl_distro", "", lambda value: isinstance(value, str), "a string")
        self.remote_qwen_command: str | list[str] = read.read(
            "remote_qwen_command", "qwen", lambda value: isinstance(value, str) or _is_strings(value),
            "a string or a list of strings")
        self.actions_language: str = read.choice("actions_language", "en", ("en", "zh"))
        self.actions_model: str | None = read.read(
            "actions_model", None, lambda value: value is None or isinstance(value, str), "a string or null")
        self.actions_timeout_s: int | float = read.number("actions_timeout_s", 300)
        self.actions_max_running: int | float = read.number("actions_max_running", 3)
        self.actions_answer_place: str = read.choice("actions_answer_place", "beside", ANSWER_PLACES)
        self.chat_prestart: bool = read.boolean("chat_prestart", False)
        self.chat_send_context: bool = read.boolean("chat_send_context", True)
        self.chat_guarded_files: str = read.choice("chat_guarded_files", "ask", ("ask", "refuse"))
        self.chat_follow_agent: bool = read.boolean("chat_follow_agent", False)
        self.chat_desktop_notifications: bool = read.boolean("chat_desktop_notifications", True)
        self.chat_agents: dict[str, dict[str, Any]] = read.agents("chat_agents", {"qwen": {}, "gemini": {}})
        self.chat_agent: str = read.read(
            "chat_agent", "qwen", lambda value: isinstance(value, str) and value in known_agents(self.chat_agents),
            "the name of an agent of chat_agents (or qwen or gemini)")
        # The user's MCP servers for every chat; its entries are checked when a session opens (user_mcp_servers.py).
        self.chat_mcp_servers: dict[str, Any] = read.read(
            "chat_mcp_servers", {}, lambda value: isinstance(value, dict), "an object of MCP servers by name")
        # "serve": chats run on a `qwen serve` daemon, whose agent writes files itself (past the editor's checks).
        self.chat_transport: str = read.choice("chat_transport", "stdio", ("stdio", "serve"))
        self.serve_keep_running: bool = read.boolean("serve_keep_running", True)
        self.serve_idle_minutes: int | float = read.read(
            "serve_idle_minutes", 60, _is_minutes, "a number of minutes, 0 or more")
        # Where New Chat in a Worktree puts worktrees ("": the package's cache folder).
        self.worktrees_folder: str = read.read("worktrees_folder", "", lambda value: isinstance(value, str), "a string")
        self.worktree_apply_conflicts: str = read.choice("worktree_apply_conflicts", "markers", ("markers", "refuse"))

    def context_values(self) -> dict[str, object]:
        """The keys `ContextOptions.from_settings` reads (the CLIs' editor
        context and the chat's prompt context share them)."""
        return {
            "send_selected_text": self.send_selected_text,
            "excluded_file_patterns": self.excluded_file_patterns,
            "workspace_trusted": self.workspace_trusted,
        }


class Preferences:
    """The preferences of Sublime's own the package follows."""

    def __init__(self, source: Source) -> None:
        read = _Reader(source)
        # How Sublime opens a file that is not UTF-8: reviews read files alike.
        self.fallback_encoding: str = read.read(
            "fallback_encoding", DEFAULT_FALLBACK, lambda value: isinstance(value, str) and bool(value),
            "an encoding's name")
        self.ignored_packages: list[str] = read.strings("ignored_packages", [])
        # What Sublime leaves out of its sidebar and Find in Files (its defaults):
        # search_project outside a git repository leaves them out too.
        self.folder_exclude_patterns: list[str] = read.strings(
            "folder_exclude_patterns", [".svn", ".git", ".hg", "CVS", ".Trash", ".Trash-*"])
        self.file_exclude_patterns: list[str] = read.strings("file_exclude_patterns", [
            "*.pyc", "*.pyo", "*.exe", "*.dll", "*.obj", "*.o", "*.a", "*.lib", "*.so", "*.dylib", "*.ncb",
            "*.sdf", "*.suo", "*.pdb", "*.idb", ".DS_Store", ".directory", "desktop.ini", "*.class", "*.psd",
            "*.db", "*.sublime-workspace"])
        self.binary_file_patterns: list[str] = read.strings("binary_file_patterns", [
            "*.jpg", "*.jpeg", "*.png", "*.gif", "*.ttf", "*.tga", "*.dds", "*.ico", "*.eot", "*.pdf", "*.swf",
            "*.jar", "*.zip"])


# Set while watched (between `watch` and `unwatch`); replaced whole on a change.
_settings: Settings | None = None
_preferences: Preferences | None = None
# Called after QwenCompanion.sublime-settings changed (wiring.py adds them).
change_listeners: list[Callable[[], None]] = []


def userprefs() -> Settings:
    """The package's settings: the watched copy, or read now when not watched."""
    current = _settings
    return current if current is not None else Settings(sublime.load_settings(PACKAGE_SETTINGS))


def preferences() -> Preferences:
    current = _preferences
    return current if current is not None else Preferences(sublime.load_settings(PREFERENCES))


def fallback_encoding() -> str:
    return preferences().fallback_encoding


def _package_changed() -> None:
    global _settings
    _settings = Settings(sublime.load_settings(PACKAGE_SETTINGS))
    for listener in list(change_listeners):
        try:
            listener()
        except Exception:
            log.exception("a settings change listener failed")


def _preferences_changed() -> None:
    global _preferences
    _preferences = Preferences(sublime.load_settings(PREFERENCES))


@threads.on_main
def watch() -> None:
    """Read both files and follow their changes (when loading)."""
    for name, changed in ((PACKAGE_SETTINGS, _package_changed), (PREFERENCES, _preferences_changed)):
        settings = sublime.load_settings(name)
        settings.clear_on_change(_ON_CHANGE_TAG)  # a reloaded module's old callback
        settings.add_on_change(_ON_CHANGE_TAG, changed)
    global _settings, _preferences
    _settings = Settings(sublime.load_settings(PACKAGE_SETTINGS))
    _preferences = Preferences(sublime.load_settings(PREFERENCES))


def unwatch() -> None:
    """Unloading: the settings no longer call into this module."""
    global _settings, _preferences
    for name in (PACKAGE_SETTINGS, PREFERENCES):
        sublime.load_settings(name).clear_on_change(_ON_CHANGE_TAG)
    _settings = _preferences = None


def choose_actions_model(model: str | None) -> None:
    """Save the quick actions' model in the user's settings (None: the CLI's default)."""
    settings = sublime.load_settings(PACKAGE_SETTINGS)
    if model is None:
        settings.erase("actions_model")
    else:
        settings.set("actions_model", model)
    sublime.save_settings(PACKAGE_SETTINGS)
