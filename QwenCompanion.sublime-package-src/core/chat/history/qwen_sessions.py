"""qwen's own session methods over ACP (extension methods of `qwen --acp`,
sent by their bare names; checked against qwen 0.24.4):

- `renameSession {sessionId, title}` -> `{success: bool}`; qwen also sends
  `qwen/notify/session/title-update {v, sessionId, title, titleSource: "manual"}`.
- `deleteSession {sessionId}` -> `{success: bool}` (false when there was no
  such session file); a session still open keeps working, and its next
  prompt writes it again, so a chat is closed before its session is deleted.

Other agents do not have them: `is_qwen` is the one place that decides."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from acp.schema import InitializeResponse

from ..agent.agent_connection import AgentConnection
from ..agent.agents import TITLE_MAX_CHARS, speaks_qwen

RENAME_METHOD = "renameSession"
DELETE_METHOD = "deleteSession"


def is_qwen(initialized: InitializeResponse | None) -> bool:
    return speaks_qwen(initialized.agent_info if initialized is not None else None)


def _succeeded(answer: Future[Any]) -> Future[bool]:
    """True when the agent answered `{success: true}` (anything else is False)."""
    result: Future[bool] = Future()

    def done(asked: Future[Any]) -> None:
        error = asked.exception()
        if error is not None:
            result.set_exception(error)
            return
        value = asked.result()
        result.set_result(isinstance(value, dict) and value.get("success") is True)

    answer.add_done_callback(done)
    return result


def rename_session(connection: AgentConnection, session_id: str, title: str) -> Future[bool]:
    return _succeeded(connection.call(RENAME_METHOD, {"sessionId": session_id, "title": title[:TITLE_MAX_CHARS]}))


def delete_session(connection: AgentConnection, session_id: str) -> Future[bool]:
    return _succeeded(connection.call(DELETE_METHOD, {"sessionId": session_id}))
