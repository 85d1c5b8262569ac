"""Renaming and deleting a saved conversation: qwen's own session methods
over ACP (extension methods of `qwen --acp`, sent by their bare names;
checked against qwen 0.24.4):

- `renameSession {sessionId, title}` -> `{success: bool}`; qwen also sends
  `qwen/notify/session/title-update {v, sessionId, title, titleSource: "manual"}`.
- `deleteSession {sessionId}` -> `{success: bool}` (false when there was no
  such session file); a session still open keeps working, and its next
  prompt writes it again, so a chat is closed before its session is deleted.

Other agents do not have them: `is_qwen` is the one place that decides.
An agent that announces ACP's `sessionCapabilities.delete` is sent ACP's
`session/delete {sessionId}` instead (answered `{}`); qwen 0.24.4 announces
none, so it keeps its own."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from acp.schema import InitializeResponse

from ..agent.agent_connection import AgentConnection
from ..agent.agents import TITLE_MAX_CHARS, can_delete, speaks_qwen

RENAME_METHOD = "renameSession"
DELETE_METHOD = "deleteSession"
ACP_DELETE_METHOD = "session/delete"


def is_qwen(initialized: InitializeResponse | None) -> bool:
    return speaks_qwen(initialized.agent_info if initialized is not None else None)


def deletes_sessions(initialized: InitializeResponse | None) -> bool:
    """qwen's own deleteSession, or ACP's session/delete where announced."""
    return is_qwen(initialized) or can_delete(initialized.agent_capabilities if initialized is not None else None)


def _succeeded(answer: Future[Any], acp_result: bool = False) -> Future[bool]:
    """True when the agent answered `{success: true}`, or with `acp_result`
    any object (ACP's empty answer); anything else is False."""
    result: Future[bool] = Future()

    def done(asked: Future[Any]) -> None:
        error = asked.exception()
        if error is not None:
            result.set_exception(error)
            return
        value = asked.result()
        result.set_result(isinstance(value, dict) and (acp_result or value.get("success") is True))

    answer.add_done_callback(done)
    return result


def rename_session(connection: AgentConnection, session_id: str, title: str) -> Future[bool]:
    return _succeeded(connection.call(RENAME_METHOD, {"sessionId": session_id, "title": title[:TITLE_MAX_CHARS]}))


def delete_session(connection: AgentConnection, session_id: str) -> Future[bool]:
    if is_qwen(connection.initialized):
        return _succeeded(connection.call(DELETE_METHOD, {"sessionId": session_id}))
    return _succeeded(connection.call(ACP_DELETE_METHOD, {"sessionId": session_id}), acp_result=True)
