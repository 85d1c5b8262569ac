"""MCP messages in and out, parsed and built with the `mcp-types` models.

Nothing here does I/O: the server hands in decoded JSON and gets back the
JSON-RPC envelope to send, so every rule of the wire format is testable alone.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pydantic
from mcp_types import (
    CallToolRequestParams,
    CallToolResult,
    Implementation,
    InitializeRequestParams,
    InitializeResult,
    ListToolsResult,
    ServerCapabilities,
    TextContent,
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

SERVER_NAME = "qwen-code-sublime-companion"
SERVER_VERSION = "0.1.0"
# The 2026 revision drops the initialize handshake this server is built on.
SUPPORTED_VERSIONS = HANDSHAKE_PROTOCOL_VERSIONS

ToolHandler = Callable[[str, dict[str, Any]], Awaitable[CallToolResult]]
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


def parse_envelope(payload: Any) -> JSONRPCRequest | JSONRPCNotification | JSONRPCResponse | JSONRPCError:
    """Validate one decoded JSON-RPC message; raises ProtocolError(INVALID_REQUEST)."""
    if isinstance(payload, list):
        raise ProtocolError(INVALID_REQUEST, "JSON-RPC batches are not supported")
    try:
        return jsonrpc_message_adapter.validate_python(payload)
    except pydantic.ValidationError:
        raise ProtocolError(INVALID_REQUEST, "not a JSON-RPC 2.0 message") from None


def parse_initialize(params: dict[str, Any] | None) -> InitializeRequestParams:
    try:
        requested = (params or {}).get("protocolVersion")
        version = negotiate_version(requested if isinstance(requested, str) else "")
        request = parse_client_request("initialize", version, params)
    except (pydantic.ValidationError, KeyError, ValueError):
        raise ProtocolError(INVALID_PARAMS, "invalid initialize params") from None
    assert isinstance(request.params, InitializeRequestParams)
    return request.params


def parse_call_tool(version: str, params: dict[str, Any] | None) -> CallToolRequestParams:
    try:
        request = parse_client_request("tools/call", version, params)
    except (pydantic.ValidationError, KeyError, ValueError):
        raise ProtocolError(INVALID_PARAMS, "invalid tools/call params: need a tool name and an arguments object") from None
    assert isinstance(request.params, CallToolRequestParams)
    return request.params


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


def text_result(text: str, *, is_error: bool = False) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=is_error)


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
    "JSONRPCRequest",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "ProtocolError",
    "ToolHandler",
]
