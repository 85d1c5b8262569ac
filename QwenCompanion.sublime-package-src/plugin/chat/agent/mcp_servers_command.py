"""Qwen Code: MCP Servers… — the servers the chat's agent sees, each with its
status and tools, and Restart (`core/chat/agent/mcp_status.py` says what qwen
0.24.4 answers). qwen's methods go only to an agent that speaks qwen."""

from __future__ import annotations

from typing import TYPE_CHECKING

import sublime

from ....core.chat.agent.agents import speaks_qwen
from ....core.chat.agent.mcp_status import McpServerRow, configured_servers, qwen_servers, restart_server
from ...background import in_background
from ...quick_panel_items import panel_item
from ..command_bases import ActiveChatCommand

if TYPE_CHECKING:
    from ..window_chats import WindowChat

WAIT_S = 60.0  # for the agent's answers, on a thread of our own
PANEL_TOOLS = 20  # tools named in a row's details


def _asks_qwen(chat: WindowChat) -> bool:
    initialized = chat.connection.initialized
    return speaks_qwen(initialized.agent_info if initialized is not None else None) and not chat.user_mcp.on_serve


def listed_servers(chat: WindowChat) -> list[McpServerRow]:
    """The servers of the chat's session, its session opened first if need be (waits: not on Sublime's threads)."""
    if chat.session_id is None:
        chat.start().result(timeout=WAIT_S)
    session_id = chat.session_id
    if _asks_qwen(chat) and session_id:
        return qwen_servers(lambda method, params: chat.connection.call(method, params).result(WAIT_S),
                            session_id)
    return configured_servers(chat.user_mcp.given)


def restart(chat: WindowChat, key: str, name: str) -> None:
    """Restart the server qwen calls `key`, shown as `name` (waits): through
    qwen, or with the chat's agent for a server qwen knows only in the session."""
    if restart_server(lambda method, params: chat.connection.call(method, params).result(WAIT_S), key):
        chat.note(f"qwen restarted the MCP server “{name}”.")
        return
    chat.note(f"qwen restarts the session's MCP server “{name}” only with its agent: restarting the agent.")
    chat.restart().result(timeout=WAIT_S)


def _item(row: McpServerRow) -> sublime.QuickPanelItem:
    tools = ", ".join(row.tools[:PANEL_TOOLS]) + (f" and {len(row.tools) - PANEL_TOOLS} more"
                                                   if len(row.tools) > PANEL_TOOLS else "")
    details = [f"tools: {tools}" if row.tools else "tools: none reported"]
    details += [row.problem] if row.problem else []
    return panel_item(row.name, [line[:500] for line in details], annotation=row.status[:60])


class QwenChatMcpServersCommand(ActiveChatCommand):
    """The chat's MCP servers in a quick panel; with qwen, Enter restarts one."""

    def run(self, chat: int | None = None) -> None:
        found = self.active_chat(chat)
        if found is None:
            return
        window_chat = found

        def fetch() -> None:
            try:
                rows = listed_servers(window_chat)
            except Exception as error:
                message = f"Qwen Code: the MCP servers could not be listed ({error})"
                sublime.set_timeout(lambda: sublime.status_message(message))
                return
            sublime.set_timeout(lambda: self._show(window_chat, rows))

        in_background(fetch, "mcp servers")

    def _show(self, chat: WindowChat, rows: list[McpServerRow]) -> None:
        if not rows:
            sublime.status_message("Qwen Code: the chat's agent has no MCP servers")
            return
        restarts = _asks_qwen(chat)

        def picked(index: int) -> None:
            if index >= 0 and restarts:
                row = rows[index]
                in_background(lambda: restart(chat, row.key, row.name), "mcp restart")

        placeholder = "MCP servers of the chat's agent" + (" (Enter restarts one)" if restarts else "")
        self.window.show_quick_panel([_item(row) for row in rows], picked, placeholder=placeholder)
