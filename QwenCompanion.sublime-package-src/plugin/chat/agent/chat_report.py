"""The chat's part of Diagnose Connection: the agents configured, and the
window's chat (agent, pid, session, mode, model, the agent log's last lines)."""

from __future__ import annotations

import sublime

from ..transcript.chat_views import uptime
from ..window_chats import chats
from .agents import agent_rows
from .serve_daemon import DAEMONS_HEADING, all_daemons_rows, serve_report_rows


def chat_report(window: sublime.Window) -> str:
    """The chat's part of Diagnose Connection (in the report's layout)."""

    def row(label: str, value: str) -> str:
        return f"  {label + ':' if label else '':<16}{value}"

    chat = chats.get(window)
    lines = ["", "Chat agents (the chat_agents setting)"] + [row(name, text) for name, text in agent_rows(window)]
    serve_rows = serve_report_rows(window)  # blocks: the report is made on a thread of ours
    if serve_rows:
        lines += ["", "qwen serve (the chat_transport setting)"] + [row(name, text) for name, text in serve_rows]
    daemons = all_daemons_rows()  # blocks too: every record, and each pid's start
    if daemons:
        lines += ["", f"{DAEMONS_HEADING} (each running one has a Stop link)"]
        lines += [f"  {key}  {text}" for key, text in daemons]  # the key: what its Stop link names
    lines += ["", f"Chat ({chat.agent})" if chat is not None else "Chat"]
    if chat is None:
        return "\n".join([*lines, row("agent", "not started (Qwen Code: Chat starts it)"), ""])
    state, pid = chat.state, chat.pid
    lines.append(row("agent", state.agent_status + (f" ({state.agent_name})" if state.agent_name else "")))
    if pid:
        lines.append(row("pid", f"{pid}, up {uptime(state.started_at)}"))
    lines.append(row("session", state.session_id or "(none)"))
    count = len(chats.of_window(window))
    if count > 1:
        lines.append(row("chats", f"{count} in this window (the session above is the active chat's), one agent"))
    lines.append(row("mode", state.mode_id or "(unknown)"))
    lines.append(row("model", state.model_name() or "(unknown)"))
    tail = [line for line in chat.stderr_lines()[-5:] if line.strip()]
    if tail:
        lines.append(row("agent log", "last lines (Qwen Code: Show Agent Log has all)"))
        lines += [row("", line[:200]) for line in tail]
    return "\n".join([*lines, ""])
