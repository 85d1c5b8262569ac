"""The IDE-specific messages on top of MCP: context, diff tools and their answers.

The real CLI validates every notification with a schema and disconnects for
good on one that fails it, so each outgoing message is built through these
models (spec sections 4-6).
"""

from __future__ import annotations

from os.path import isabs
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

MAX_OPEN_FILES = 10

CONTEXT_UPDATE = "ide/contextUpdate"
DIFF_ACCEPTED = "ide/diffAccepted"
DIFF_REJECTED = "ide/diffRejected"


class Outgoing(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    def params(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


class Cursor(Outgoing):
    line: int = Field(ge=1)
    character: int = Field(ge=1)


class OpenFile(Outgoing):
    path: str = Field(min_length=1)
    timestamp: int = Field(ge=0)
    isActive: bool | None = None
    cursor: Cursor | None = None
    selectedText: str | None = None


class WorkspaceState(Outgoing):
    openFiles: list[OpenFile] | None = Field(default=None, max_length=MAX_OPEN_FILES)
    isTrusted: bool | None = None


class IdeContext(Outgoing):
    workspaceState: WorkspaceState | None = None


class DiffAccepted(Outgoing):
    filePath: str
    content: str


class DiffRejected(Outgoing):
    filePath: str


class _ToolArguments(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)

    @field_validator("filePath", check_fields=False)
    @classmethod
    def _absolute(cls, value: str) -> str:
        # A POSIX path is absolute on Windows too: a CLI in WSL or a container names files so.
        if not (isabs(value) or value.startswith("/")):
            raise ValueError("filePath must be an absolute path")
        return value


class OpenDiffArguments(_ToolArguments):
    filePath: str = Field(description="Absolute path of the file to change.")
    newContent: str = Field(description="The proposed full content of the file.")


class CloseDiffArguments(_ToolArguments):
    filePath: str = Field(description="Absolute path of the file whose diff view to close.")
    suppressNotification: bool = Field(
        default=False, description="Send no diffAccepted/diffRejected notification for this close."
    )


def empty_context() -> IdeContext:
    return IdeContext(workspaceState=WorkspaceState(openFiles=[]))
