"""MCP messages in and out, parsed and built with the `mcp-types` models.

Nothing here does I/O: the server hands in decoded JSON and gets back the
JSON-RPC envelope to send, so every rule of the wire format is testable alone.

The messages of every openDiff / closeDiff (a plain request, a tool call, a
result of text blocks) are checked and built without a model: the models
would accept them as they are and dump them the same, and a request to a
server just woken from idle pays ~0.2 ms for their validation code.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii
from typing import Any

import pydantic
import pydantic_core
from mcp_types import (
    CallToolRequestParams,
    Implementation,
    InitializeRequestParams,
    InitializeResult,
    ListToolsResult,
    ServerCapabilities,
    Tool,
    ToolsCapability,
)
from mcp_types.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
    jsonrpc_message_adapter,
)
from mcp_types.methods import parse_client_request, serialize_server_result
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

from ..version import VERSION

SERVER_NAME = "qwen-code-sublime-companion"
SERVER_VERSION = VERSION
# The 2026 revision drops the initialize handshake this server is built on.
SUPPORTED_VERSIONS = HANDSHAKE_PROTOCOL_VERSIONS


@dataclass(frozen=True, slots=True)
class Call:
    """A JSON-RPC request: what answering it needs."""

    id: RequestId
    method: str
    params: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class QuotedText:
    """A text that quotes a long string as JSON: `head`, then `value` as a JSON
    string, then `tail`. Whole (str()), it is what json.dumps writes (ASCII);
    written out a slice of `value` at a time (answer_pieces), the same JSON in
    UTF-8 never exists whole: a 10 MB closeDiff answer would otherwise be
    built, then escaped again, 10 MB at a time."""

    head: str
    value: str
    tail: str

    def __str__(self) -> str:
        return "".join((self.head, encode_basestring_ascii(self.value), self.tail))


@dataclass(frozen=True, slots=True)
class ToolAnswer:
    """A tool's result: text blocks (every tool here answers with text)."""

    texts: tuple[str | QuotedText, ...] = ()
    is_error: bool = False

    def result(self) -> dict[str, Any]:
        """The `tools/call` result, as every protocol version's CallToolResult dumps it."""
        return {"content": [{"type": "text", "text": str(text)} for text in self.texts], "isError": self.is_error}

    def quoted_size(self) -> int:
        """Characters of the value its last text quotes (0 when it quotes none)."""
        last = self.texts[-1] if self.texts else None
        return len(last.value) if isinstance(last, QuotedText) else 0


_LAST_TEXT = "\x00"  # stands for the quoted text while the rest of the answer is written


def answer_pieces(request_id: RequestId, answer: ToolAnswer, slice_chars: int = 256 * 1024) -> Iterator[bytes]:
    """The JSON-RPC response carrying `answer` (its last text a QuotedText), in
    pieces that join to the JSON of `response(request_id, answer.result())`:
    each slice of the quoted value is escaped twice (as the text's JSON string,
    then inside the answer's), so no piece holds much. The slices are new
    strings: the UTF-8 that pydantic-core leaves cached in a string it encodes
    goes with them, not into the proposal's text."""
    last = answer.texts[-1]
    assert isinstance(last, QuotedText)
    rest = ToolAnswer((*answer.texts[:-1], _LAST_TEXT), answer.is_error)
    # The text is the envelope's last string: its last occurrence is the one.
    before, _, after = pydantic_core.to_json(response(request_id, rest.result())).rpartition(
        pydantic_core.to_json(_LAST_TEXT)
    )
    yield before + b'"' + _json_string_body(last.head + '"')
    value = last.value
    for start in range(0, len(value), slice_chars):
        quoted = _json_string_body(value[start : start + slice_chars])
        # Inside a JSON string, that JSON needs only its quotes and backslashes escaped.
        yield quoted.replace(b"\\", b"\\\\").replace(b'"', b'\\"')
    yield _json_string_body('"' + last.tail) + b'"' + after


def _json_string_body(text: str) -> bytes:
    """`text` as written inside a JSON string, without the quotes: UTF-8, or
    ASCII escapes for what UTF-8 cannot hold (a lone surrogate)."""
    try:
        return pydantic_core.to_json(text)[1:-1]
    except pydantic_core.PydanticSerializationError:
        return encode_basestring_ascii(text)[1:-1].encode("ascii")


ToolHandler = Callable[[str, dict[str, Any]], Awaitable[ToolAnswer]]
"""A tool's implementation: (session id, arguments) -> result."""


class ProtocolError(Exception):
    """A request that gets a JSON-RPC error answer."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def negotiate_version(requested: str) -> str:
    """The client's version when we speak it, else our newest (MCP lifecycle rules)."""
    return requested if requested in SUPPORTED_VERSIONS else LATEST_HANDSHAKE_VERSION


_REQUEST_KEYS = frozenset({"jsonrpc", "id", "method", "params"})


def parse_envelope(payload: Any) -> Call | JSONRPCNotification | JSONRPCResponse | JSONRPCError:
    """Validate one decoded JSON-RPC message; raises ProtocolError(INVALID_REQUEST)."""
    if type(payload) is dict and _is_plain_request(payload):
        return Call(payload["id"], payload["method"], payload.get("params"))
    if isinstance(payload, list):
        raise ProtocolError(INVALID_REQUEST, "JSON-RPC batches are not supported")
    try:
        message = jsonrpc_message_adapter.validate_python(payload)
    except pydantic.ValidationError:
        raise ProtocolError(INVALID_REQUEST, "not a JSON-RPC 2.0 message") from None
    if isinstance(message, JSONRPCRequest):
        return Call(message.id, message.method, message.params)
    return message


def _is_plain_request(payload: dict[str, Any]) -> bool:
    """A request exactly as JSONRPCRequest takes it (no extra key, no coercion)."""
    return (
        payload.keys() <= _REQUEST_KEYS
        and payload.get("jsonrpc") == "2.0"
        and type(payload.get("id")) in (int, str)
        and type(payload.get("method")) is str
        and type(payload.get("params", {})) is dict
    )


def parse_initialize(params: dict[str, Any] | None) -> InitializeRequestParams:
    try:
        requested = (params or {}).get("protocolVersion")
        version = negotiate_version(requested if isinstance(requested, str) else "")
        request = parse_client_request("initialize", version, params)
    except (pydantic.ValidationError, KeyError, ValueError):
        raise ProtocolError(INVALID_PARAMS, "invalid initialize params") from None
    assert isinstance(request.params, InitializeRequestParams)
    return request.params


def parse_call_tool(version: str, params: dict[str, Any] | None) -> ToolCall:
    if (
        type(params) is dict
        and params.keys() <= {"name", "arguments"}
        and type(params.get("name")) is str
        and type(params.get("arguments", {})) is dict
        and version in SUPPORTED_VERSIONS
    ):
        return ToolCall(params["name"], params.get("arguments") or {})
    try:
        request = parse_client_request("tools/call", version, params)
    except (pydantic.ValidationError, KeyError, ValueError):
        raise ProtocolError(INVALID_PARAMS, "invalid tools/call params: need a tool name and an arguments object") from None
    assert isinstance(request.params, CallToolRequestParams)
    return ToolCall(request.params.name, request.params.arguments or {})


def initialize_result(version: str) -> dict[str, Any]:
    result = InitializeResult(
        protocol_version=version,
        capabilities=ServerCapabilities(tools=ToolsCapability(list_changed=False)),
        server_info=Implementation(name=SERVER_NAME, version=SERVER_VERSION),
    )
    return server_result("initialize", version, result)


def tools_list_result(version: str, tools: list[Tool]) -> dict[str, Any]:
    return server_result("tools/list", version, ListToolsResult(tools=tools))


def server_result(method: str, version: str, result: pydantic.BaseModel) -> dict[str, Any]:
    """Dump a result model in the shape of the negotiated version's schema."""
    data = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return serialize_server_result(method, version, data)


def text_result(text: str | QuotedText, *, is_error: bool = False) -> ToolAnswer:
    return ToolAnswer((text,), is_error)


def response(request_id: RequestId, result: dict[str, Any]) -> dict[str, Any]:
    # Both parts are valid already (the id passed parse_envelope, the result is
    # a model's dump): a model here would only copy a tools/list result again.
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_response(request_id: RequestId | None, code: int, message: str) -> dict[str, Any]:
    error = JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))
    return error.model_dump(mode="json", exclude_none=True) | {"id": request_id}


def notification(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return JSONRPCNotification(jsonrpc="2.0", method=method, params=params).model_dump(mode="json")


__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "ProtocolError",
    "ToolHandler",
]
