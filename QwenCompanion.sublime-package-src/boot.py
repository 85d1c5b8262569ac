"""Sublime Text loads this module: it holds the package's commands, listeners
and the plugin_loaded / plugin_unloaded hooks."""

from __future__ import annotations

import logging

import sublime

from .plugin import log
from .plugin.companions import companions
from .plugin.listeners import CompanionWindowListener

__all__ = ["CompanionWindowListener", "plugin_loaded", "plugin_unloaded"]

_log_handler: logging.Handler | None = None


def plugin_loaded() -> None:
    global _log_handler
    _log_handler = log.install()
    # Imports and socket set-up happen on the worker thread, not here.
    sublime.set_timeout_async(companions.start)


def plugin_unloaded() -> None:
    companions.stop_all()
    if _log_handler is not None:
        log.uninstall(_log_handler)
