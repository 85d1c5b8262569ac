"""The composer's slash commands: /clear, /help and /status answered here
without the agent, and the completions a `/` opens (ours and the agent's)."""

from __future__ import annotations

import sublime

from ..transcript.chat_views import uptime
from ..window_chats import WindowChat

LOCAL_COMMANDS = {
    "clear": "start a new conversation",
    "help": "list the commands",
    "status": "the agent's state, session, mode, model, pid and uptime",
}


def run_local(chat: WindowChat, name: str) -> bool:
    """/clear, /help and /status work without the agent."""
    state = chat.state
    if name == "clear":
        chat.core.sessions.new_session()
    elif name == "help":
        lines = [f"/{n} — {d}" for n, d in LOCAL_COMMANDS.items()]
        lines += [f"/{c.name} — {c.description}" for c in state.commands]
        chat.note("Commands:\n>\n> " + "\n> ".join(lines))
    elif name == "status":
        mode = state.mode_name()
        chat.note("\n> ".join([
            f"Agent: {state.agent_text()}" + (f" ({state.agent_name})" if state.agent_name else ""),
            f"Session: {state.session_id or '—'}",
            f"Mode: {mode or '—'}",
            f"Model: {state.model_name() or '—'}",
            f"Pid: {chat.pid or '—'}",
            f"Uptime: {uptime(state.started_at) if chat.pid else '—'}",
        ]))
    else:
        return False
    return True


def slash_completions(chat: WindowChat | None) -> list[sublime.CompletionValue]:
    """Our commands and, with `chat`, its agent's."""
    commands = dict(LOCAL_COMMANDS)
    if chat is not None:
        commands.update({c.name: c.description for c in chat.state.commands})
    return [
        sublime.CompletionItem(name, annotation=description[:60], completion=name,
                               kind=(sublime.KindId.KEYWORD, "/", "command"))
        for name, description in sorted(commands.items())
    ]
