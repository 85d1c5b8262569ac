"""The simulated editor: what Sublime's C++ side does behind ``sublime_api``.

State lives here, guarded by one re-entrant lock that is never held while
plugin code runs. Operations are split over mixins: buffers and text
(``_app_buffers``), windows/sheets/panels (``_app_windows``) and command
dispatch (``_app_commands``).

Event threading: a blocking (``on_x``) event caused on the main thread runs
inline; caused on any other thread it is handed to the main thread and the
caller waits for it, as Sublime blocks the caller until the plugin host has
answered. ``on_x_async`` events are queued on the worker thread.
"""

from __future__ import annotations

import collections
import copy
import itertools
import os
import sys
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import _jsonc
from ._app_buffers import BufferOps
from ._app_commands import CommandOps
from ._app_windows import WindowOps
from ._focus_guard import FocusGuard
from ._records import CommandRecord, DialogAnswers, DialogRecord, ErrorRecord
from ._resources import ResourceIndex
from ._scheduler import Clock, Loop
from ._settings import SettingsState
from ._state import (
    BufferState,
    CommandInputRecord,
    InputPanelRecord,
    QuickPanelRecord,
    SheetState,
    ViewState,
    WindowState,
)
from ._symbol_index import SymbolIndex
from ._text import DEFAULT_WORD_SEPARATORS
from ._watchdog import Watchdog

# Built-in defaults under every Preferences file (Packages/Default ships more).
DEFAULT_PREFERENCES: dict[str, Any] = {
    "tab_size": 4,
    "translate_tabs_to_spaces": False,
    "default_line_ending": "system",
    "default_encoding": "UTF-8",
    "fallback_encoding": "Western (Windows 1252)",
    "word_separators": DEFAULT_WORD_SEPARATORS,
    "font_size": 10,
    "color_scheme": "Mariana.sublime-color-scheme",
    "theme": "auto",
    "ignored_packages": ["Vintage"],
    "hot_exit": "always",
    "auto_complete": True,
    # Sublime's defaults (Preferences.sublime-settings of build 4205).
    "auto_complete_selector": "meta.tag, source - comment - string.quoted.double.block - string.quoted.single.block - string.unquoted.heredoc",
    "auto_complete_triggers": [{"selector": "text.html, text.xml", "characters": "<"}],
    "auto_complete_commit_on_tab": False,
    "word_wrap": "auto",
    "line_numbers": True,
    "gutter": True,
    "rulers": [],
    "show_definitions": True,
    # What a save does to the buffer (see _save_rewrites).
    "trim_trailing_white_space_on_save": "none",
    "trim_only_modified_white_space": True,
    "ensure_newline_at_eof_on_save": False,
}

# Events that have an ``_async`` twin in sublime_plugin.
ASYNC_TWINS = frozenset(
    {
        "on_new", "on_clone", "on_load", "on_reload", "on_revert", "on_post_move",
        "on_pre_save", "on_post_save", "on_modified", "on_selection_modified",
        "on_activated", "on_deactivated", "on_new_window", "on_new_project",
        "on_load_project", "on_post_save_project", "on_associate_buffer",
        "on_new_buffer", "on_close_buffer", "on_text_changed",
    }
)


COMMAND_LOG_LENGTH = 10_000
RECORDED_TEXT_LIMIT = 65_536  # longer strings in command arguments are logged by length only


def recorded_args(args: Any) -> Any:
    """A copy of a command's arguments for the log, long texts replaced by their length."""
    if isinstance(args, str):
        return args if len(args) <= RECORDED_TEXT_LIMIT else f"<{len(args)} characters>"
    if isinstance(args, dict):
        return {key: recorded_args(value) for key, value in args.items()}
    if isinstance(args, (list, tuple)):
        return type(args)(recorded_args(value) for value in args)
    return copy.deepcopy(args)


class App(BufferOps, WindowOps, CommandOps):
    def __init__(
        self,
        packages_dir: Path,
        installed_packages_dir: Path,
        cache_dir: Path,
        platform: str,
        arch: str,
        channel: str,
        watchdog: Watchdog,
    ) -> None:
        self.lock = threading.RLock()
        self.cond = threading.Condition()
        self.clock = Clock()
        self.watchdog = watchdog
        self.main = Loop("main", self.cond, self.clock, self.report_error, self, watchdog)
        self.worker = Loop("worker", self.cond, self.clock, self.report_error, self, watchdog)
        self.focus_guard = FocusGuard(lambda: self.main.is_current() or self.worker.is_current(), self.keys_still_there)
        self.packages_dir = packages_dir
        self.resources = ResourceIndex(packages_dir, self.package_names)
        self.installed_packages_dir = installed_packages_dir
        self.cache_dir = cache_dir
        self.platform = platform
        self.arch = arch
        self.channel = channel
        self._counters = {k: itertools.count(1) for k in ("window", "view", "buffer", "sheet", "settings", "edit", "phantom")}
        self.windows: dict[int, WindowState] = {}
        self.window_order: list[int] = []
        self.views: dict[int, ViewState] = {}
        self.buffers: dict[int, BufferState] = {}
        self.sheets: dict[int, SheetState] = {}
        self.symbol_index = SymbolIndex()
        self.settings: dict[int, SettingsState] = {}
        self.named_settings: dict[str, int] = {}
        self.active_window_id = 0
        self.app_focused = True  # Sublime has the keys, not another application
        self.clipboard = ""
        self.file_history: list[str] = []
        self.api_shut_down = False
        self.log_flags: dict[str, bool] = {}
        # records for tests
        self.errors: list[ErrorRecord] = []
        self.console: list[str] = []
        self.dialogs: list[DialogRecord] = []
        self.answers = DialogAnswers()
        # The simulator's own log for tests, bounded like a terminal's scrollback so a
        # long run (the bench, the headless driver) does not grow without end.
        self.commands: collections.deque[CommandRecord] = collections.deque(maxlen=COMMAND_LOG_LENGTH)
        self.status_messages: list[tuple[int, str]] = []
        self.quick_panels: list[QuickPanelRecord] = []
        self.command_inputs: list[CommandInputRecord] = []
        self.palettes: dict[int, int] = {}  # window id -> the input of its open command palette (a widget view)
        self.input_panels: list[InputPanelRecord] = []
        self.opened_urls: list[str] = []
        self.preferences_id = self.load_settings("Preferences.sublime-settings")

    # ----------------------------------------------------------------- basics
    def new_id(self, kind: str) -> int:
        return next(self._counters[kind])

    def view(self, vid: int) -> ViewState | None:
        st = self.views.get(vid)
        return st if st is not None and st.valid else None

    def window(self, wid: int) -> WindowState | None:
        st = self.windows.get(wid)
        return st if st is not None and st.valid else None

    def sheet(self, sid: int) -> SheetState | None:
        st = self.sheets.get(sid)
        return st if st is not None and st.valid else None

    def report_error(self, where: str, exc: BaseException) -> None:
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        record = ErrorRecord(where, exc, text, threading.current_thread().name)
        with self.lock:
            self.errors.append(record)
            self.console.append(text)
        print(f"[sublime_sim] {where}\n{text}", file=sys.stderr, end="")

    def log(self, line: str) -> None:
        with self.lock:
            self.console.append(line)

    def record_dialog(self, kind: str, message: str, answer: Any = None, **details: Any) -> None:
        with self.lock:
            self.dialogs.append(DialogRecord(kind, message, answer, details))

    # ----------------------------------------------------------------- threads
    def start(self) -> None:
        self.main.start()
        self.worker.start()

    def stop(self) -> None:
        self.main.stop()
        self.worker.stop()

    def set_timeout(self, fn: Callable[[], object], delay: float, loop: Loop) -> None:
        if not self.api_shut_down:
            if self.focus_guard.in_user_action():
                fn = self.focus_guard.as_continuation(fn)  # the user's command goes on
            loop.post(fn, delay)

    def on_main(self, fn: Callable[[], Any]) -> Any:
        """Run a blocking notification on the main thread and wait for it."""
        if self.main.is_current() or self.api_shut_down:
            return fn()
        if not self.main.thread.is_alive():
            return None
        if self.focus_guard.on_driver():
            fn = self.focus_guard.as_user(fn)  # the test runs it as the user would
        return self.main.call_and_wait(fn)

    def emit(self, kind: str, name: str, target: int, *args: Any, el_only: bool = False, blocking: bool = True) -> None:
        """Fire ``name`` (and its ``_async`` twin) at listeners of a view/window/buffer."""
        from . import sublime_plugin as sp

        if blocking:
            self.on_main(lambda: sp.dispatch(kind, name, target, *args, el_only=el_only))
        if name in ASYNC_TWINS:
            self.set_timeout(
                lambda: sp.dispatch(kind, name + "_async", target, *args, el_only=el_only), 0, self.worker
            )

    # ---------------------------------------------------------------- settings
    def new_settings(self, layers: list[dict[str, Any]] | None = None, parent: int | None = None, base_name: str | None = None) -> int:
        with self.lock:
            sid = self.new_id("settings")
            self.settings[sid] = SettingsState(sid, layers, self.settings.get(parent) if parent else None, base_name)
            return sid

    def settings_write(self, sid: int, changes: dict[str, Any], erase: list[str], layers: list[dict[str, Any]] | None = None) -> None:
        """Apply changes to a settings top layer (and replace its read-only
        ``layers`` if given) and run on_change callbacks."""
        with self.lock:
            st = self.settings.get(sid)
            if st is None or not st.valid:
                return
            affected = [s for s in self.settings.values() if s.valid and s.depends_on(st)]
            before = {s.id: s.effective() for s in affected}
            if layers is not None:
                st.layers = layers
            st.user.update(copy.deepcopy(changes))
            for key in erase:
                st.user.pop(key, None)
            calls = [cb for s in affected if s.effective() != before[s.id] for cbs in list(s.callbacks.values()) for cb in list(cbs)]
        for cb in calls:
            try:
                cb()
            except Exception as exc:
                self.report_error(f"settings on_change callback {getattr(cb, '__qualname__', cb)!r}", exc)

    def settings_files(self, base_name: str) -> list[tuple[str, Path]]:
        """Package files contributing to ``base_name``, lowest precedence first."""
        stem, ext = os.path.splitext(base_name)
        platform_name = f"{stem} ({self.platform_label()}){ext}"
        out = []
        for pkg in self.package_names():
            for name in (base_name, platform_name):
                path = self.packages_dir / pkg / name
                if path.is_file():
                    out.append((pkg, path))
        return out

    def syntax_settings_layers(self, syntax_path: str) -> list[dict[str, Any]]:
        """Syntax-specific settings: every ``<syntax file name>.sublime-settings``
        anywhere in a package, in package order (User's last), as Sublime
        layers them between Preferences and a view's own settings."""
        base = os.path.splitext(syntax_path.rsplit("/", 1)[-1])[0] + ".sublime-settings"
        layers = []
        for resource in self.find_resources(base):
            try:
                data = _jsonc.decode_file_text(self.resource_file(resource).read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                self.log(f"Error trying to parse settings: {resource}: {exc}")
                continue
            if isinstance(data, dict):
                layers.append(data)
        return layers

    def set_view_syntax(self, sid: int, syntax_path: str) -> None:
        """A view's ``syntax`` setting and the syntax-specific settings under it."""
        self.settings_write(sid, {"syntax": syntax_path}, [], self.syntax_settings_layers(syntax_path))

    def _read_layers(self, base_name: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        layers: list[dict[str, Any]] = [dict(DEFAULT_PREFERENCES)] if base_name == "Preferences.sublime-settings" else []
        user: dict[str, Any] = {}
        for pkg, path in self.settings_files(base_name):
            try:
                data = _jsonc.decode_file_text(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                self.log(f"Error trying to parse settings: {path}: {exc}")
                continue
            if not isinstance(data, dict):
                continue
            if pkg == "User":
                user.update(data)
            else:
                layers.append(data)
        return layers, user

    def load_settings(self, base_name: str) -> int:
        with self.lock:
            if base_name in self.named_settings:
                return self.named_settings[base_name]
            layers, user = self._read_layers(base_name)
            sid = self.new_settings(layers, None, base_name)
            self.settings[sid].user = user
            self.named_settings[base_name] = sid
            return sid

    def save_settings(self, base_name: str) -> None:
        with self.lock:
            sid = self.named_settings.get(base_name)
            if sid is None:
                return
            data = copy.deepcopy(self.settings[sid].user)
        path = self.packages_dir / "User" / base_name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_jsonc.encode_value(data, pretty=True) + "\n", encoding="utf-8")

    def reload_settings(self, base_name: str) -> None:
        """Re-read a settings file changed on disk and run on_change callbacks."""
        with self.lock:
            sid = self.named_settings.get(base_name)
            if sid is None:
                return
            st = self.settings[sid]
            layers, user = self._read_layers(base_name)
            st.layers = layers
            replace = dict(user)
            erase = [k for k in st.user if k not in user]
        self.settings_write(sid, replace, erase)

    # --------------------------------------------------------------- resources
    def platform_label(self) -> str:
        return {"osx": "OSX", "linux": "Linux", "windows": "Windows"}[self.platform]

    def package_names(self) -> list[str]:
        """Package folders in Sublime's load order: Default, the rest, User."""
        try:
            names = [p.name for p in self.packages_dir.iterdir() if p.is_dir() and not p.name.startswith(".")]
        except OSError:
            return []
        rest = sorted((n for n in names if n not in ("Default", "User")), key=str.lower)
        return (["Default"] if "Default" in names else []) + rest + (["User"] if "User" in names else [])

    def find_resources(self, pattern: str) -> list[str]:
        return self.resources.find(pattern)

    def resource_file(self, name: str) -> Path:
        if not name.startswith("Packages/"):
            raise FileNotFoundError(f"resource not found: {name}")
        path = self.packages_dir / name[len("Packages/") :]
        if not path.is_file():
            raise FileNotFoundError(f"resource not found: {name}")
        return path

    # --------------------------------------------------------------- records
    def record_command(self, target: str, target_id: int, name: str, args: Any, handled: bool, handler: str) -> None:
        with self.lock:
            self.commands.append(CommandRecord(target, target_id, name, CommandRecord.pack(recorded_args(args)),
                                               handled, handler))
        if self.log_flags.get("commands"):
            self.log(f"command: {name} {args}")

    def active_window_state(self) -> WindowState | None:
        return self.window(self.active_window_id)

    def all_view_ids(self) -> list[int]:
        return [vid for vid, st in self.views.items() if st.valid]
