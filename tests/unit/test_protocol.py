"""protocol.py: the JSON-RPC / MCP wire rules without I/O."""

from __future__ import annotations

from typing import Any

import pytest

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
    assert isinstance(protocol.parse_envelope({"jsonrpc": "2.0", "id": 1, "method": "ping"}), protocol.JSONRPCRequest)
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
    assert params.name == "openDiff" and params.arguments == {"a": 1}
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


def test_text_result() -> None:
    dumped = protocol.server_result("tools/call", "2025-11-25", protocol.text_result("why", is_error=True))
    assert dumped["isError"] is True
    assert dumped["content"] == [{"type": "text", "text": "why"}]
    assert protocol.server_result("tools/call", "2025-11-25", protocol.text_result("ok"))["isError"] is False


def test_context_params_leave_out_unset_fields() -> None:
    assert IdeContext().params() == {}
