"""The type of a decoded JSON object, as the agents, the CLIs and the tools
exchange them (its values are checked where they are read)."""

from __future__ import annotations

from typing import Any

JsonObject = dict[str, Any]
