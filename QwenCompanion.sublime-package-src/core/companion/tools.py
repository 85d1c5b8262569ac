"""The `openDiff` / `closeDiff` tools: definitions, argument checking, dispatch.

A `DiffBackend` does the real work (the diff issue plugs the editor in); the
default one answers with a clear error instead of pretending.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

import pydantic
from mcp_types import Tool

from .ide_messages import CloseDiffArguments, OpenDiffArguments
from .protocol import ToolAnswer, text_result
from .server import RegisteredTool

ArgumentsT = TypeVar("ArgumentsT", bound=pydantic.BaseModel)


class DiffBackend(Protocol):
    async def open_diff(self, session_id: str, arguments: OpenDiffArguments) -> ToolAnswer: ...

    async def close_diff(self, session_id: str, arguments: CloseDiffArguments) -> ToolAnswer: ...


class UnavailableDiffBackend:
    """Answers every diff call with an error until an editor backend exists."""

    async def open_diff(self, session_id: str, arguments: OpenDiffArguments) -> ToolAnswer:
        return text_result("openDiff is not available yet in this editor", is_error=True)

    async def close_diff(self, session_id: str, arguments: CloseDiffArguments) -> ToolAnswer:
        return text_result("closeDiff is not available yet in this editor", is_error=True)


OPEN_DIFF = Tool(
    name="openDiff",
    description="Open a diff view in Sublime Text comparing a file with proposed new content. "
    "The user's decision arrives later as ide/diffAccepted or ide/diffRejected.",
    input_schema=OpenDiffArguments.model_json_schema(),
)
CLOSE_DIFF = Tool(
    name="closeDiff",
    description="Close the diff view of a file and return the proposed side's current text.",
    input_schema=CloseDiffArguments.model_json_schema(),
)


def describe_errors(error: pydantic.ValidationError) -> str:
    parts = []
    for item in error.errors(include_url=False, include_input=False):
        where = ".".join(str(p) for p in item["loc"]) or "arguments"
        parts.append(f"{where}: {item['msg'].removeprefix('Value error, ')}")
    return "; ".join(parts)


def validated_tool[ArgumentsT: pydantic.BaseModel](
    definition: Tool,
    arguments_model: type[ArgumentsT],
    call: Callable[[str, ArgumentsT], Awaitable[ToolAnswer]],
) -> RegisteredTool:
    """A tool whose arguments are checked against a model before `call` runs;
    bad arguments get an isError result that says what is wrong."""

    async def handler(session_id: str, arguments: dict[str, Any]) -> ToolAnswer:
        try:
            parsed = arguments_model.model_validate(arguments)
        except pydantic.ValidationError as error:
            return text_result(f"Invalid {definition.name} arguments: {describe_errors(error)}", is_error=True)
        return await call(session_id, parsed)

    return RegisteredTool(definition, handler)


def diff_tools(backend: DiffBackend) -> list[RegisteredTool]:
    return [
        validated_tool(OPEN_DIFF, OpenDiffArguments, backend.open_diff),
        validated_tool(CLOSE_DIFF, CloseDiffArguments, backend.close_diff),
    ]
