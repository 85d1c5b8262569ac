"""The package's log: every module logs under the `QwenCompanion` logger, to
Sublime's console and to the "Qwen Companion Log" output panel.

The level follows the `log_level` setting, live.
"""

from __future__ import annotations

import logging
import threading
from collections import deque

import sublime

ROOT_LOGGER = __name__.split(".", 1)[0]
SETTINGS_FILE = "QwenCompanion.sublime-settings"
PANEL_NAME = "Qwen Companion Log"
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
DEFAULT_LEVEL = "INFO"
_CONSOLE_FORMAT = "Qwen Companion [%(levelname)s] %(message)s"
_PANEL_FORMAT = "%(asctime)s %(levelname)-7s %(message)s"
_ON_CHANGE_TAG = "QwenCompanion.log"
HISTORY_LINES = 2000


def _append(panel: sublime.View, text: str) -> None:
    panel.run_command("append", {"characters": text, "force": True, "scroll_to_end": True})


class PanelHandler(logging.Handler):
    """Keeps the last lines and appends new ones, on the main thread, to the
    log panel of every window that has opened it."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter(_PANEL_FORMAT, "%H:%M:%S"))
        self._guard = threading.Lock()
        self._history: deque[str] = deque(maxlen=HISTORY_LINES)
        self._pending: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record) + "\n"
        except Exception:
            self.handleError(record)
            return
        with self._guard:
            self._history.append(line)
            self._pending.append(line)
            first = len(self._pending) == 1
        if first:  # one main-thread hop per burst of records
            sublime.set_timeout(self._flush)

    def _flush(self) -> None:
        with self._guard:
            text = "".join(self._pending)
            self._pending.clear()
        if not text:
            return
        for window in sublime.windows():
            panel = window.find_output_panel(PANEL_NAME)
            if panel is not None:
                _append(panel, text)

    def show(self, window: sublime.Window) -> None:
        """Open the log panel in `window`, filled with the history (main thread)."""
        if window.find_output_panel(PANEL_NAME) is None:
            panel = window.create_output_panel(PANEL_NAME)
            panel.settings().update({"word_wrap": False, "gutter": False, "scroll_past_end": False})
            panel.set_read_only(True)
            with self._guard:
                # Pending lines reach every open panel with the next flush.
                shown = list(self._history)[: len(self._history) - len(self._pending)]
            _append(panel, "".join(shown))
        window.run_command("show_panel", {"panel": f"output.{PANEL_NAME}"})


_panel_handler: PanelHandler | None = None


def level_name(value: object) -> str:
    name = value.upper() if isinstance(value, str) else ""
    return name if name in LEVELS else DEFAULT_LEVEL


def _apply_level() -> None:
    value = sublime.load_settings(SETTINGS_FILE).get("log_level", DEFAULT_LEVEL)
    name = level_name(value)
    logger = logging.getLogger(ROOT_LOGGER)
    logger.setLevel(name)
    if not isinstance(value, str) or value.upper() != name:
        logger.warning("log_level must be one of %s, not %r; using %s", ", ".join(LEVELS), value, DEFAULT_LEVEL)


def install() -> logging.Handler:
    """Log to the console (stderr) and the log panel at the `log_level`
    setting; returns the handler to pass to `uninstall`."""
    global _panel_handler
    console = logging.StreamHandler()
    console.setFormatter(logging.Formatter(_CONSOLE_FORMAT))
    _panel_handler = PanelHandler()
    logger = logging.getLogger(ROOT_LOGGER)
    logger.addHandler(console)
    logger.addHandler(_panel_handler)
    logger.propagate = False
    settings = sublime.load_settings(SETTINGS_FILE)
    settings.clear_on_change(_ON_CHANGE_TAG)
    settings.add_on_change(_ON_CHANGE_TAG, _apply_level)
    _apply_level()
    return console


def uninstall(handler: logging.Handler) -> None:
    global _panel_handler
    logger = logging.getLogger(ROOT_LOGGER)
    logger.removeHandler(handler)
    if _panel_handler is not None:
        logger.removeHandler(_panel_handler)
        _panel_handler = None
    sublime.load_settings(SETTINGS_FILE).clear_on_change(_ON_CHANGE_TAG)


def show_panel(window: sublime.Window) -> None:
    (_panel_handler or PanelHandler()).show(window)
