"""Can the runtime libraries be imported? One plain sentence if not.

pydantic and pydantic-core come from Package Control's library channel and
refuse to import when their versions do not match (SystemError); a user
should see what to do, not a traceback.
"""

from __future__ import annotations

import importlib

FIX = (
    "Run 'Package Control: Satisfy Libraries' from the command palette, "
    "then restart Sublime Text."
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
