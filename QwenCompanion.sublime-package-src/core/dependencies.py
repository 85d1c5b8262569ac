"""Can the runtime libraries be imported? One plain sentence if not.

pydantic and pydantic-core come from Package Control's library channel and
refuse to import when their versions do not match (SystemError); a user
should see what to do, not a traceback.
"""

from __future__ import annotations

import importlib
import sys

FIX = (
    "Run 'Package Control: Satisfy Libraries' from the command palette, "
    "then restart Sublime Text."
)


# Package Control serves pydantic and pydantic-core built for this host only.
REQUIRED_HOST = (3, 14)


def host_python_message(version: tuple[int, int] | None = None) -> str | None:
    """None on the 3.14 plugin host (Sublime Text 4205+), else a message for the user.

    Builds 4200-4204 run the package in Python 3.8 or 3.13, where the
    package's `.python-version` of 3.14 is not honoured.
    """
    running = version or (sys.version_info[0], sys.version_info[1])
    if running == REQUIRED_HOST:
        return None
    wanted = ".".join(map(str, REQUIRED_HOST))
    found = ".".join(map(str, running))
    return (
        f"Qwen Companion needs Sublime Text's Python {wanted} plugin host (build 4205 or later), "
        f"but it was loaded in Python {found}. Update Sublime Text, then restart it."
    )


def missing_dependency_message() -> str | None:
    """None when everything imports, else a message for the user."""
    try:
        importlib.import_module("pydantic")
    except SystemError as error:
        return f"Qwen Companion cannot start: pydantic and pydantic-core do not match ({error}). {FIX}"
    except ImportError as error:
        return f"Qwen Companion cannot start: the library '{error.name or 'pydantic'}' is missing. {FIX}"
    return None


def startup_problem(
    host_message: str | None = None, dependency_message: str | None = None
) -> str | None:
    """The one sentence to show when the package cannot start, or None.

    On the wrong host the libraries usually fail too (they are built for
    3.14); then the host, the likely cause, is named as well.
    """
    if dependency_message is None:
        return None
    return f"{dependency_message} {host_message}" if host_message else dependency_message
