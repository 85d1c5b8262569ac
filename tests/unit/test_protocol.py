"""protocol.py: the JSON-RPC / MCP wire rules without I/O."""

from __future__ import annotations

import json
from typing import Any

import pydantic
import pydantic_core
import pytest
from mcp_types import CallToolResult, TextContent
from mcp_types.jsonrpc import JSONRPCRequest, jsonrpc_message_adapter

from qwencompanion_src.core.companion import protocol
from qwencompanion_src.core.companion.ide_messages import CONTEXT_UPDATE, IdeContext, empty_context
from qwencompanion_src.core.companion.protocol import ProtocolError

from .conftest import initialize_body


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
def test_negotiate_keeps_a_supported_version(version: str) -> None:
    assert version in protocol.SUPPORTED_VERSIONS
    assert protocol.negotiate_version(version) == version


@pytest.mark.parametrize("version", ["", "2025-01-01", "2026-07-28", "2025-11-25 "])
def test_negotiate_answers_an_unknown_version_with_the_latest_handshake_version(version: str) -> None:
    assert protocol.negotiate_version(version) == "2025-11-25"


def test_parse_envelope_accepts_the_four_message_kinds() -> None:
    assert protocol.parse_envelope({"jsonrpc": "2.0", "id": 1, "method": "ping"}) == protocol.Call(1, "ping")
    notification = protocol.parse_envelope({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert type(notification).__name__ == "JSONRPCNotification"
    assert type(protocol.parse_envelope({"jsonrpc": "2.0", "id": 1, "result": {}})).__name__ == "JSONRPCResponse"
    error = {"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": "x"}}
    assert type(protocol.parse_envelope(error)).__name__ == "JSONRPCError"


@pytest.mark.parametrize(
    "payload",
    [{}, {"jsonrpc": "2.0"}, {"jsonrpc": "2.1", "id": 1, "method": "ping"}, {"jsonrpc": "2.0", "id": 1, "method": 5}, "x", 1, None],
)
def test_parse_envelope_rejects_what_is_not_json_rpc(payload: Any) -> None:
    with pytest.raises(ProtocolError) as caught:
        protocol.parse_envelope(payload)
    assert caught.value.code == protocol.INVALID_REQUEST


@pytest.mark.parametrize(
    "payload",
    [
        {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "openDiff"}},
        {"jsonrpc": "2.0", "id": "a-1", "method": "ping"},
        {"jsonrpc": "2.0", "id": 2**70, "method": "ping", "params": {}},
        {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": None},
        {"jsonrpc": "2.0", "id": 1, "method": "ping", "extra": 1},
    ],
)
def test_a_request_is_read_as_the_model_reads_it(payload: dict[str, Any]) -> None:
    model = JSONRPCRequest.model_validate(payload)
    assert protocol.parse_envelope(payload) == protocol.Call(model.id, model.method, model.params)


@pytest.mark.parametrize(
    "payload",
    [
        {"jsonrpc": "2.0", "id": True, "method": "ping"},
        {"jsonrpc": "2.0", "id": 1.0, "method": "ping"},
        {"jsonrpc": "2.0", "id": None, "method": "ping"},
        {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": []},
    ],
)
def test_what_is_not_a_plain_request_is_judged_by_the_model(payload: dict[str, Any]) -> None:
    try:
        expected: Any = jsonrpc_message_adapter.validate_python(payload)
    except pydantic.ValidationError:
        with pytest.raises(ProtocolError):
            protocol.parse_envelope(payload)
        return
    assert not isinstance(expected, JSONRPCRequest)
    assert protocol.parse_envelope(payload) == expected


def test_parse_envelope_rejects_batches() -> None:
    with pytest.raises(ProtocolError, match="batch") as caught:
        protocol.parse_envelope([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
    assert caught.value.code == protocol.INVALID_REQUEST


def test_parse_initialize() -> None:
    params = protocol.parse_initialize(initialize_body("2025-06-18")["params"])
    assert params.protocol_version == "2025-06-18"
    assert params.client_info.name == "unit-test"


@pytest.mark.parametrize("params", [None, {}, {"protocolVersion": "2025-11-25"}, {"protocolVersion": 5, "capabilities": {}}])
def test_parse_initialize_rejects_bad_params(params: Any) -> None:
    with pytest.raises(ProtocolError) as caught:
        protocol.parse_initialize(params)
    assert caught.value.code == protocol.INVALID_PARAMS


def test_parse_call_tool() -> None:
    params = protocol.parse_call_tool("2025-11-25", {"name": "openDiff", "arguments": {"a": 1}})
    assert params == protocol.ToolCall("openDiff", {"a": 1})
    assert protocol.parse_call_tool("2025-06-18", {"name": "x"}) == protocol.ToolCall("x", {})
    assert protocol.parse_call_tool("2025-06-18", {"name": "x", "arguments": None}) == protocol.ToolCall("x", {})
    meta = {"name": "x", "arguments": {"b": 2}, "_meta": {"progressToken": 1}}
    assert protocol.parse_call_tool("2025-06-18", meta) == protocol.ToolCall("x", {"b": 2})
    with pytest.raises(ProtocolError) as caught:
        protocol.parse_call_tool("2025-11-25", {"arguments": {}})
    assert caught.value.code == protocol.INVALID_PARAMS


def test_initialize_result_shape() -> None:
    result = protocol.initialize_result("2025-03-26")
    assert result["protocolVersion"] == "2025-03-26"
    assert result["serverInfo"] == {"name": protocol.SERVER_NAME, "version": protocol.SERVER_VERSION}
    assert result["capabilities"]["tools"] == {"listChanged": False}


def test_error_response_always_carries_an_id_even_null() -> None:
    assert protocol.error_response(None, -32700, "Parse error") == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Parse error"},
    }
    assert protocol.error_response("x", -32601, "nope")["id"] == "x"


def test_response_and_notification_envelopes() -> None:
    assert protocol.response(3, {}) == {"jsonrpc": "2.0", "id": 3, "result": {}}
    message = protocol.notification(CONTEXT_UPDATE, empty_context().params())
    assert message == {"jsonrpc": "2.0", "method": CONTEXT_UPDATE, "params": {"workspaceState": {"openFiles": []}}}


@pytest.mark.parametrize("version", sorted(protocol.SUPPORTED_VERSIONS))
@pytest.mark.parametrize(
    "answer",
    [protocol.ToolAnswer(), protocol.text_result("why", is_error=True), protocol.ToolAnswer(("a", "café ✓"))],
)
def test_a_tool_answer_is_the_result_the_model_would_dump(version: str, answer: protocol.ToolAnswer) -> None:
    model = CallToolResult(content=[TextContent(type="text", text=text) for text in answer.texts], is_error=answer.is_error)
    assert answer.result() == protocol.server_result("tools/call", version, model)


QUOTED = ["", "plain", 'quote " back \\ slash', "tab\tnl\ncr\r\x00\x1f\x7f", "café \u2028 \U0001f600 \ud800 lone", "é" * 1000]


@pytest.mark.parametrize("value", QUOTED)
@pytest.mark.parametrize("slice_chars", [1, 7, 4096])
def test_an_answer_in_pieces_is_the_answer_whole(value: str, slice_chars: int) -> None:
    quoted = protocol.QuotedText('{"content": ', value, "}")
    answer = protocol.ToolAnswer(("first ü", quoted), is_error=True)
    pieces = list(protocol.answer_pieces("id \u0000", answer, slice_chars))
    streamed = json.loads(b"".join(pieces))
    whole = json.loads(pydantic_core.to_json(protocol.response("id \u0000", answer.result())))
    for message in (streamed, whole):  # the same JSON in the text, escaped alike or not
        message["result"]["content"][1]["text"] = json.loads(message["result"]["content"][1]["text"])
    assert streamed == whole
    assert streamed["result"]["content"][1]["text"] == {"content": value}
    assert max(map(len, pieces[1:-1]), default=0) <= 14 * slice_chars  # an emoji: 14 bytes, escaped twice


def test_a_quoted_text_reads_as_json_dumps_writes() -> None:
    assert str(protocol.QuotedText("[", 'a"é', "]")) == json.dumps(['a"é'])
    assert protocol.ToolAnswer((protocol.QuotedText("", "abc", ""),)).quoted_size() == 3
    assert protocol.ToolAnswer(("abc",)).quoted_size() == 0


def test_text_result() -> None:
    assert protocol.text_result("why", is_error=True).result() == {"content": [{"type": "text", "text": "why"}], "isError": True}
    assert protocol.text_result("ok").result()["isError"] is False


def test_context_params_leave_out_unset_fields() -> None:
    assert IdeContext().params() == {}
