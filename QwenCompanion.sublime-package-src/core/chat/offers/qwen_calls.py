"""qwen's own session methods the chat offers, as qwen 0.24.4 answers them
over ACP (read in its bundle and probed against the CLI):

- `qwen/control/session/btw {sessionId, question}` -> `{sessionId, answer: str | null}`:
  a side question answered by a fork of the session that sees its history
  (its last 40 entries) and no tools; the session's history is not changed.
  The question is at most 4,096 characters; a fork runs at most 55 s.
- `qwen/control/session/recap {sessionId}` -> `{sessionId, recap: str | null}`:
  null while the conversation has fewer than two messages.
- a slash command whose answer is a message (a status: /stats, /about,
  /tools, /memory show, …) comes as `agent_message_chunk`s marked
  `_meta.source: "slash_command"`; one that submits a prompt is answered by
  the model as usual.
- `qwen/notify/session/prompt-suggestion {v, sessionId, suggestion, promptId}`:
  sent after a turn that ended `end_turn` once the session holds two
  answers, unless the user's settings say `ui.enableFollowupSuggestions: false`
  or the session is in plan mode.

Only qwen has them: `offered` is the gate, `agents.speaks_qwen`'s rule (the
agent said it is qwen-code in `agentInfo`), as for branch and rewind. Every
answer is bounded when it is adopted: strings at most `MAX_TEXT_CHARS`,
lists at most `MAX_ITEMS` entries."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ...display_text import display_text
from ...json_types import JsonObject
from ..history.rewind import is_qwen

if TYPE_CHECKING:
    from ..chat_state import ChatState

ASIDE_METHOD = "qwen/control/session/btw"
RECAP_METHOD = "qwen/control/session/recap"
SUGGESTION_NOTIFICATION = "qwen/notify/session/prompt-suggestion"
MAX_TEXT_CHARS = 64 * 1024  # an agent's string, when adopted
MAX_ITEMS = 1000  # an agent's list, when adopted
MAX_QUESTION_CHARS = 4096  # qwen's own limit on a side question
SUGGESTION_CHARS = 500  # a suggestion as the composer shows it: one line


class NotOffered(Exception):
    """The chat's agent does not offer this (it is not qwen), or not now."""


class BadAnswer(Exception):
    """The agent's answer is not of the shape qwen gives."""


def offered(state: ChatState, what: str) -> None:
    """Raise `NotOffered` unless `what` may be asked of the chat's agent now."""
    if not is_qwen(state):
        raise NotOffered(f"{what} is not offered by this agent ({state.agent_name or 'not started'}; only qwen offers it)")
    if state.session_id is None:
        raise NotOffered("the chat has no conversation yet")


def bounded_text(value: object, limit: int = MAX_TEXT_CHARS) -> str | None:
    """A string of the agent's, cut to `limit` characters; None for anything else."""
    return value[:limit] if isinstance(value, str) else None


def shown_text(text: str, line_chars: int = MAX_TEXT_CHARS) -> str:
    """Text for a tab or the transcript: each line stripped of control and
    bidi characters (`display_text.display_text`), the line breaks kept."""
    return "\n".join(display_text(line, line_chars) if line.strip() else "" for line in text.splitlines()).strip()


def _field(answer: object, key: str, what: str) -> str | None:
    if not isinstance(answer, dict) or key not in answer:
        raise BadAnswer(f"the agent's {what} has no {key!r}: {str(answer)[:200]}")
    value = answer[key]
    if value is not None and not isinstance(value, str):
        raise BadAnswer(f"the agent's {what} is not text: {str(value)[:200]}")
    text = bounded_text(value)
    return shown_text(text) if text is not None and text.strip() else None


def aside_answer(answer: object) -> str:
    """The side question's answer; qwen's null answer said in words."""
    text = _field(answer, "answer", "aside answer")
    return text if text is not None else "(qwen gave no answer: its model could not be asked)"


def recap_text(answer: object) -> str | None:
    """The recap, None when qwen had none to give (too short a conversation)."""
    return _field(answer, "recap", "recap")


def is_command_output(meta: object) -> bool:
    """An agent_message_chunk that is a slash command's answer (qwen 0.24.4
    marks those `_meta.source: "slash_command"`: /stats, /about, /tools, …),
    a status rather than the model's words."""
    return isinstance(meta, dict) and meta.get("source") == "slash_command"


def suggestion_of(params: object) -> str | None:
    """A prompt suggestion's text: one line of at most `SUGGESTION_CHARS`; None when it holds none."""
    value = params.get("suggestion") if isinstance(params, dict) else None
    text = bounded_text(value)
    line = display_text(text, SUGGESTION_CHARS) if text is not None else ""
    return line or None


# One of qwen's own methods on a chat's session: (method, params) -> its answer, `sessionId` added (chat.py).
Request = Callable[[str, JsonObject], Awaitable[Any]]


async def ask_aside(request: Request, question: str) -> str:
    return aside_answer(await request(ASIDE_METHOD, {"question": question[:MAX_QUESTION_CHARS]}))


async def recap(request: Request) -> str:
    """The conversation's recap; `NotOffered` when qwen has none to give yet."""
    text = recap_text(await request(RECAP_METHOD, {}))
    if text is None:
        raise NotOffered("qwen has no summary to give yet (the conversation needs a question and its answer)")
    return text
