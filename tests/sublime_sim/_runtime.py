"""The one running application that the fake modules talk to.

``sublime`` and ``sublime_plugin`` are process-wide modules, like in the real
plugin_host; each ``SimulatedHost`` installs its own application here and
removes it when closed, so hosts can follow each other in one process.
"""

from __future__ import annotations

import sys
import threading
import traceback
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._app import App

_current: App | None = None


def app() -> App:
    if _current is None:
        raise RuntimeError("sublime API used with no SimulatedHost running")
    # A plugin thread left over from a closed host must not reach the new one.
    owner = getattr(threading.current_thread(), "sim_app", None)
    if owner is not None and owner is not _current:
        raise RuntimeError("this plugin thread belongs to a SimulatedHost that was closed")
    return _current


def maybe_app() -> App | None:
    return _current


def install(new: App | None) -> None:
    global _current
    _current = new


def report_exception(where: str, exc: BaseException) -> None:
    """Record an exception the way Sublime prints it to the console."""
    if _current is not None:
        _current.report_error(where, exc)
    else:
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
