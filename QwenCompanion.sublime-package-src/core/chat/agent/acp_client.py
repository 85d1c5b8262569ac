"""The editor as the agent's ACP client: the SDK's public `acp.Client`
interface, whose methods the SDK's router calls with each message's fields
once it has validated them (`acp.connect_to_agent`).

File reads and writes, permissions, forms (`elicitation/create`) and vendor
requests go to the chat's `AgentRequestHandler`; notifications go to the agent
connection. The editor offers no terminals (`initialize` declares the file
system and forms): an agent asking for them is answered "method not found",
as for any method it does not know. Runs on the chat's asyncio thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from acp import RequestError
from acp.interfaces import Agent
from acp.schema import (
    CreateElicitationResponse,
    CreateTerminalResponse,
    ElicitationMode,
    EnvVariable,
    KillTerminalResponse,
    PermissionOption,
    ReadTextFileRequest,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SessionNotification,
    TerminalOutputResponse,
    ToolCallUpdate,
    WaitForTerminalExitResponse,
    WriteTextFileRequest,
    WriteTextFileResponse,
)

from ...json_types import JsonObject
from ..requests.request_handler import AgentRequestHandler

METHOD_NOT_FOUND = -32601
ELICITATION_CREATE = "elicitation/create"
WarnOnce = Callable[..., None]  # (key, message, *args): logged the first time `key` is seen


class AgentNotifications(Protocol):
    """Where the agent's notifications go; called on the chat's asyncio thread."""

    def session_update(self, notification: SessionNotification) -> None: ...

    def ext_notification(self, method: str, params: JsonObject) -> None: ...


class EditorClient:
    """The `acp.Client` one agent process talks to. Vendor methods keep the
    names the agent sends (qwen's own have no "_" prefix; see acp_lines.py)."""

    def __init__(self, requests: Callable[[], AgentRequestHandler], notifications: AgentNotifications,
                 warn_once: WarnOnce) -> None:
        self._requests = requests  # the current chat's (the editor swaps them once its layer is up)
        self._notifications = notifications
        self._warn_once = warn_once

    # --- what the editor answers ------------------------------------------

    async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
                             **kwargs: Any) -> ReadTextFileResponse:
        return await self._requests().read_text_file(ReadTextFileRequest(
            session_id=session_id, path=path, line=line, limit=limit, field_meta=kwargs or None))

    async def write_text_file(self, session_id: str, path: str, content: str,
                              **kwargs: Any) -> WriteTextFileResponse | None:
        return await self._requests().write_text_file(WriteTextFileRequest(
            session_id=session_id, path=path, content=content, field_meta=kwargs or None))

    async def request_permission(self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption],
                                 **kwargs: Any) -> RequestPermissionResponse:
        return await self._requests().request_permission(RequestPermissionRequest(
            session_id=session_id, tool_call=tool_call, options=options, field_meta=kwargs or None))

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == ELICITATION_CREATE and "sessionId" not in params:
            # A form tied to a request (its requestId) has no chat to be asked in.
            raise RequestError(-32602, "Refused: this editor asks forms within a chat's session only",
                               {"reason": "no sessionId"})
        try:
            return await self._requests().ext_method(method, params)
        except RequestError as error:
            if error.code == METHOD_NOT_FOUND:
                self._not_offered(method)
            raise

    # --- what the agent tells ---------------------------------------------
    # The SDK's route for notifications. acp_lines.py takes them first, as they
    # are read, to the same `AgentNotifications`; these two complete the interface.

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self._notifications.session_update(SessionNotification(session_id=session_id, update=update,
                                                               field_meta=kwargs or None))

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        self._notifications.ext_notification(method, params)

    # --- what the editor does not offer -----------------------------------

    async def create_terminal(self, session_id: str, command: str, args: list[str] | None = None,
                              env: list[EnvVariable] | None = None, cwd: str | None = None,
                              output_byte_limit: int | None = None, **kwargs: Any) -> CreateTerminalResponse:
        raise self._not_offered("terminal/create")

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> TerminalOutputResponse:
        raise self._not_offered("terminal/output")

    async def release_terminal(self, session_id: str, terminal_id: str,
                               **kwargs: Any) -> ReleaseTerminalResponse | None:
        raise self._not_offered("terminal/release")

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str,
                                     **kwargs: Any) -> WaitForTerminalExitResponse:
        raise self._not_offered("terminal/wait_for_exit")

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> KillTerminalResponse | None:
        raise self._not_offered("terminal/kill")

    # Elicitation is the protocol's unstable part, which the connection does
    # not enable: the SDK would answer those requests itself, so acp_lines.py
    # hands them to ext_method, where the chat's handler asks the form. These
    # two complete the interface.
    async def create_elicitation(self, message: str, mode: ElicitationMode,
                                 **kwargs: Any) -> CreateElicitationResponse:
        raise self._not_offered("elicitation/create")

    async def complete_elicitation(self, elicitation_id: str, **kwargs: Any) -> None:
        self._not_offered("elicitation/complete")

    def on_connect(self, conn: Agent) -> None:
        """Nothing to keep: the bridge holds the connection `connect_to_agent` returns."""

    def _not_offered(self, method: str) -> RequestError:
        self._warn_once(f"method:{method}", "the agent asked for %s, which this editor does not offer", method)
        return RequestError.method_not_found(method)
