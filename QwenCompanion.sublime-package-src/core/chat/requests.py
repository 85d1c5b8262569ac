"""What the agent asks of the editor: file reads and writes, permissions, and
vendor methods. The editor layer swaps the default (disk only, no
permission) for one that goes through the user's buffers and reviews."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from acp import RequestError
from acp.schema import (
    DeniedOutcome,
    ReadTextFileRequest,
    ReadTextFileResponse,
    RequestPermissionRequest,
    RequestPermissionResponse,
    WriteTextFileRequest,
    WriteTextFileResponse,
)


class AgentRequests(Protocol):
    """Answers the agent's requests; every method runs on the chat's asyncio
    thread and may await work elsewhere. Raise `acp.RequestError` to answer
    with a JSON-RPC error."""

    async def read_text_file(self, request: ReadTextFileRequest) -> ReadTextFileResponse: ...

    async def write_text_file(self, request: WriteTextFileRequest) -> WriteTextFileResponse | None: ...

    async def request_permission(self, request: RequestPermissionRequest) -> RequestPermissionResponse: ...

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]: ...

    def cancel_pending(self) -> None:
        """Answer every permission request still waiting "cancelled" (any thread):
        the turn was cancelled, or the chat or its agent is going away."""


def slice_lines(text: str, line: int | None, limit: int | None) -> str:
    """`limit` lines of `text` (newlines as "\\n") from 1-based `line`
    (ACP's fs/read_text_file), found without splitting the whole text."""
    if line is None and limit is None:
        return text
    start = 0
    for _ in range(max((line or 1) - 1, 0)):
        start = text.find("\n", start) + 1
        if start == 0:
            return ""
    if limit is None:
        return text[start:]
    end = start
    for _ in range(max(limit, 0)):
        end = text.find("\n", end) + 1
        if end == 0:
            return text[start:]
    return text[start:end]


def confined_path(path: str, folders: list[str]) -> Path:
    """`path` resolved, if it lies inside one of `folders`; else a JSON-RPC error."""
    if not os.path.isabs(path):
        raise RequestError.invalid_params({"path": path, "reason": "not an absolute path"})
    resolved = Path(os.path.realpath(path))
    for folder in folders:
        if resolved.is_relative_to(os.path.realpath(folder)):
            return resolved
    raise RequestError.invalid_params({"path": path, "reason": "outside the window's folders"})


class DiskRequests:
    """Reads and writes files on disk inside the window's folders; permission
    requests are answered "cancelled" (nothing shows them yet); vendor
    methods are not known."""

    def __init__(self, folders: Callable[[], list[str]]) -> None:
        self._folders = folders

    async def read_text_file(self, request: ReadTextFileRequest) -> ReadTextFileResponse:
        path = confined_path(request.path, self._folders())
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as error:
            raise RequestError.resource_not_found(str(request.path)) from error
        return ReadTextFileResponse(content=slice_lines(text, request.line, request.limit))

    async def write_text_file(self, request: WriteTextFileRequest) -> WriteTextFileResponse | None:
        path = confined_path(request.path, self._folders())
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(request.content, encoding="utf-8")
        except OSError as error:
            raise RequestError.internal_error({"path": request.path, "reason": str(error)}) from error
        return None

    async def request_permission(self, request: RequestPermissionRequest) -> RequestPermissionResponse:
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(method)

    def cancel_pending(self) -> None:
        pass  # nothing waits: permissions are answered at once
