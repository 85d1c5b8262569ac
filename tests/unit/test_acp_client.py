"""The editor's ACP client: a form tied to a request rather than a session
(ACP's request-scoped elicitation) has no chat to be asked in and is refused
with the reason; a session's form goes to the chat's handler."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from acp import RequestError

from qwencompanion_src.core.chat.agent.acp_client import EditorClient


class Handler:
    def __init__(self) -> None:
        self.asked: list[tuple[str, dict[str, Any]]] = []

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.asked.append((method, params))
        return {"action": "cancel"}


class Notifications:
    def session_update(self, notification: Any) -> None: ...

    def ext_notification(self, method: str, params: Any) -> None: ...


def client(handler: Handler) -> EditorClient:
    return EditorClient(lambda: handler, Notifications(), lambda *args: None)  # type: ignore[arg-type, return-value]


def test_a_form_tied_to_a_request_is_refused_with_the_reason() -> None:
    handler = Handler()
    params = {"requestId": 3, "mode": "form", "message": "m", "requestedSchema": {"properties": {}}}
    with pytest.raises(RequestError) as refused:
        asyncio.run(client(handler).ext_method("elicitation/create", params))
    assert refused.value.code == -32602 and "within a chat's session only" in str(refused.value)
    assert handler.asked == []


def test_a_sessions_form_goes_to_the_chats_handler() -> None:
    handler = Handler()
    params = {"sessionId": "s1", "mode": "form", "message": "m", "requestedSchema": {"properties": {}}}
    assert asyncio.run(client(handler).ext_method("elicitation/create", params)) == {"action": "cancel"}
    assert handler.asked == [("elicitation/create", params)]
