"""The package's log: every module logs under the `QwenCompanion` logger, to
Sublime's console and to the "Qwen Companion Log" output panel.

The level follows the `log_level` setting, live.
"""

from __future__ import annotations

import logging
import threading
from collections import deque

import sublime

from ..core import threads
from .settings import userprefs

ROOT_LOGGER = __name__.split(".", 1)[0]
PANEL_NAME = "Qwen Companion Log"
_CONSOLE_FORMAT = "Qwen Companion [%(levelname)s] %(message)s"
_PANEL_FORMAT = "%(asctime)s %(levelname)-7s %(message)s"
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

    @threads.on_main
    def show(self, window: sublime.Window) -> None:
        """Open the log panel in `window`, filled with the history."""
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


def apply_level() -> None:
    """Log at the `log_level` setting (at install and at every change of the settings)."""
    logging.getLogger(ROOT_LOGGER).setLevel(userprefs().log_level)


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
    apply_level()
    return console


def uninstall(handler: logging.Handler) -> None:
    global _panel_handler
    logger = logging.getLogger(ROOT_LOGGER)
    logger.removeHandler(handler)
    if _panel_handler is not None:
        logger.removeHandler(_panel_handler)
        _panel_handler = None


def show_panel(window: sublime.Window) -> None:
    (_panel_handler or PanelHandler()).show(window)
