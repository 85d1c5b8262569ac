"""Where the IDE tools reach the agent: each window's companion answers them
from Sublime's knowledge, chat sessions get the endpoint in `mcpServers`,
and the terminal's qwen gets it through `--mcp-config` (see
`plugin/companion/terminal.py`). `plugin/wiring.py` registers both hooks."""

from __future__ import annotations

from typing import TYPE_CHECKING

import sublime

from ..companion.companions import companions
from .knowledge import SublimeCodeKnowledge

if TYPE_CHECKING:
    from ...core.companion.runtime import Companion
    from ...core.json_types import JsonObject


def install_code_knowledge(window: sublime.Window, companion: Companion) -> None:
    companion.code_knowledge = SublimeCodeKnowledge(window)


def chat_server(window: sublime.Window) -> JsonObject | None:
    from ...core.companion.ide_tools_mcp import acp_server

    companion = companions.get(window)
    url = companion.ide_tools_url if companion is not None else None
    if companion is None or url is None or companion.ide_tools_token is None:
        return None
    return acp_server(url, companion.ide_tools_token)
