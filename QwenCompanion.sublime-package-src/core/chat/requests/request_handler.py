"""What the agent asks of the editor: file reads and writes, permissions, and
vendor methods. The editor layer swaps the default (disk only, no
permission) for one that goes through the user's buffers and reviews."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, TypeVar

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

from ...files.agent_files import Refused, read_part, write_text
from .file_jobs import FileBusy, FileJobs

T = TypeVar("T")


@contextmanager
def read_errors_for_the_agent(shown: str) -> Iterator[None]:
    """A failed read as the agent is told of it: not found, or a refusal whose
    message says why (the CLI shows the agent only the message)."""
    try:
        yield
    except FileNotFoundError as error:
        raise RequestError.resource_not_found(shown) from error
    except (Refused, FileBusy) as refused:
        raise refusal(shown, str(refused)) from refused
    except OSError as error:
        raise refusal(shown, f"{shown}: {error.strerror or error}") from error


class AgentRequestHandler(Protocol):
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


def refusal(path: str, reason: str) -> RequestError:
    """An error whose message says why: the CLI shows the agent only the message."""
    return RequestError(-32602, f"Refused: {reason}", {"path": path, "reason": reason})


def confined_path(path: str, folders: list[str]) -> Path:
    """`path` resolved, if it lies inside one of `folders`; else a JSON-RPC error."""
    if not os.path.isabs(path):
        raise RequestError.invalid_params({"path": path, "reason": "not an absolute path"})
    resolved = Path(os.path.realpath(path))
    for folder in folders:
        if resolved.is_relative_to(os.path.realpath(folder)):
            return resolved
    raise RequestError.invalid_params({"path": path, "reason": "outside the window's folders"})


class DiskRequestHandler:
    """Reads and writes files on disk inside the window's folders, bounded as
    the editor's own requests are (regular files only, a size limit, parts of
    larger files, off the chat's loop with a time limit); permission requests
    are answered "cancelled" (nothing shows them yet); vendor methods are not
    known."""

    def __init__(self, folders: Callable[[], list[str]]) -> None:
        self._folders = folders
        self._jobs = FileJobs()

    async def read_text_file(self, request: ReadTextFileRequest) -> ReadTextFileResponse:
        path = str(confined_path(request.path, self._folders()))
        content, _ = await self._bounded(request.path, lambda: read_part(path, request.line, request.limit),
                                         f"reading {request.path}")
        return ReadTextFileResponse(content=content)

    async def write_text_file(self, request: WriteTextFileRequest) -> WriteTextFileResponse | None:
        path = str(confined_path(request.path, self._folders()))
        await self._bounded(request.path, lambda: write_text(path, request.content), f"writing {request.path}")
        return None

    async def _bounded(self, shown: str, work: Callable[[], T], what: str) -> T:
        with read_errors_for_the_agent(shown):
            return await self._jobs.run(work, what)

    async def request_permission(self, request: RequestPermissionRequest) -> RequestPermissionResponse:
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(method)

    def cancel_pending(self) -> None:
        pass  # nothing waits: permissions are answered at once
