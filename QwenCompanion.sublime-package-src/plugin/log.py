"""The package's log: every module logs under the `QwenCompanion` logger."""

from __future__ import annotations

import logging

ROOT_LOGGER = __name__.split(".", 1)[0]
_FORMAT = "Qwen Companion [%(levelname)s] %(message)s"


def install(level: str = "INFO") -> logging.Handler:
    """Log to Sublime's console (stderr); returns the handler to remove on unload."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter(_FORMAT))
    logger = logging.getLogger(ROOT_LOGGER)
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    return handler


def uninstall(handler: logging.Handler) -> None:
    logging.getLogger(ROOT_LOGGER).removeHandler(handler)
