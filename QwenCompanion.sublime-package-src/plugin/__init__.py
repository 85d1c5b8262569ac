"""The thin Sublime layer: listeners, commands and views on top of `core`.

The import gate (the one place imports wait for a function to run): Sublime
imports `boot.py`, and with it every module of this layer, on its main thread
at start-up, where the runtime libraries (pydantic, aiohttp, acp, mcp_types,
from Package Control) may be missing, fail to import (a pydantic-core that
does not match) or cost most of a second of CPU. So a module here imports a
`core` module that needs them only inside the function that uses it, which
runs after the start thread checked the libraries (`core/dependencies.py`)
and imported them (`Companions.start`, `preload_chat`). Every other import is
at the top of its module; tests/unit/test_import_gate.py keeps it so.
"""
