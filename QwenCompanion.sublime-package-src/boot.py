"""Sublime Text loads this module: it holds the package's commands, listeners
and the plugin_loaded / plugin_unloaded hooks."""

from __future__ import annotations

import logging

import sublime

from .plugin import log
from .plugin.companions import companions
from .plugin.diff_commands import (
    QwenAcceptDiffCommand,
    QwenRejectDiffCommand,
    QwenReviewFillCommand,
    QwenReviewListener,
)
from .plugin.listeners import CompanionWindowListener
from .plugin.context_listener import ContextListener
from .plugin.commands import QwenRestartServerCommand, QwenShowLogCommand
from .plugin.diagnose_command import QwenDiagnoseConnectionCommand, QwenReplaceReportCommand
from .plugin.status import QwenStatusListener
from .plugin.terminal import QwenCopyConnectCommandCommand, QwenOpenTerminalCommand

__all__ = [
    "CompanionWindowListener",
    "QwenAcceptDiffCommand",
    "QwenRejectDiffCommand",
    "QwenReviewFillCommand",
    "QwenReviewListener",
    "plugin_loaded",
    "plugin_unloaded",
]
__all__ += ["ContextListener"]
__all__ += [
    "QwenCopyConnectCommandCommand",
    "QwenDiagnoseConnectionCommand",
    "QwenOpenTerminalCommand",
    "QwenReplaceReportCommand",
    "QwenRestartServerCommand",
    "QwenShowLogCommand",
    "QwenStatusListener",
]

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
