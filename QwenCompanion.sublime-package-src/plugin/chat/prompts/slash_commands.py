"""The composer's slash commands: /clear, /help and /status answered here
without the agent, and the completions a `/` opens (ours and the agent's)."""

from __future__ import annotations

import re
from concurrent.futures import Future

import sublime

from ....core.chat.agent.session_options import Choice
from ....core.chat.history.rewind import is_qwen
from ....core.chat.offers.session_status import supported_commands
from ..transcript.chat_views import uptime
from ..window_chats import WindowChat

COMMAND_NAME = re.compile(r"[\w.:-]{1,64}")
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


def slash_completions(agents: list[Choice]) -> list[sublime.CompletionValue]:
    """Our commands and the agent's (`agents`), each with its description;
    an agent's name that is not one plain word is left out (it is inserted as typed)."""
    commands = dict(LOCAL_COMMANDS)
    commands.update({c.name: c.description for c in agents if COMMAND_NAME.fullmatch(c.name)})
    return [
        sublime.CompletionItem(name, annotation=description[:60], completion=name,
                               kind=(sublime.KindId.KEYWORD, "/", "command"))
        for name, description in sorted(commands.items())
    ]


def slash_completion_list(chat: WindowChat | None, flags: sublime.AutoCompleteFlags) -> sublime.CompletionList:
    """The completions a `/` opens: the commands the agent advertised
    (`available_commands_update`); for a qwen chat that has none yet, those
    qwen's `supported_commands` lists, filled in once it answers."""
    known = chat.state.commands if chat is not None else []
    if chat is None or known or not is_qwen(chat.state):
        return sublime.CompletionList(slash_completions(known), flags)
    later = sublime.CompletionList()

    def listed(done: Future[list[Choice]]) -> None:  # any thread may set them (API reference)
        later.set_completions(slash_completions(done.result() if done.exception() is None else []), flags)

    chat.ask_qwen("Slash commands", supported_commands).add_done_callback(listed)
    return later
