"""The MCP endpoint over HTTP (spec sections 1 and 6), driven with aiohttp's
test client and, where raw bytes matter, a started server on loopback."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import pytest

from qwencompanion_src.core.companion import diff_tools, protocol
from qwencompanion_src.core.companion.server import CompanionServer, ServerOptions

from .conftest import LATEST, TOKEN, Mcp, auth, initialize_body, raw_http, raw_request, request_body

SUPPORTED = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]


# --- initialize and the handshake -------------------------------------------


async def test_initialize_creates_a_session_and_answers_with_server_info(mcp: Mcp, server: CompanionServer) -> None:
    response = await mcp.post(initialize_body())
    assert response.status == 200
    assert response.headers["Content-Type"].startswith("application/json")
    session_id = response.headers["Mcp-Session-Id"]
    assert len(session_id) >= 32 and session_id.isascii() and session_id.isprintable()
    body = await response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] == 1
    result = body["result"]
    assert result["protocolVersion"] == LATEST
    assert result["serverInfo"]["name"] == protocol.SERVER_NAME
    assert "tools" in result["capabilities"]
    assert server.sessions.get(session_id) is not None


async def test_each_initialize_gets_its_own_session(mcp: Mcp, server: CompanionServer) -> None:
    first = await mcp.initialize()
    second = await mcp.initialize()
    assert first != second
    assert len(server.sessions) == 2


@pytest.mark.parametrize("version", SUPPORTED)
async def test_a_supported_protocol_version_is_echoed(mcp: Mcp, server: CompanionServer, version: str) -> None:
    response = await mcp.post(initialize_body(version))
    assert response.status == 200
    assert (await response.json())["result"]["protocolVersion"] == version
    session = server.sessions.get(response.headers["Mcp-Session-Id"])
    assert session is not None and session.protocol_version == version


@pytest.mark.parametrize("version", ["1999-01-01", "2026-07-28", "latest", ""])
async def test_an_unknown_protocol_version_gets_the_latest_handshake_version(mcp: Mcp, version: str) -> None:
    response = await mcp.post(initialize_body(version))
    assert response.status == 200
    assert (await response.json())["result"]["protocolVersion"] == LATEST


async def test_initialize_with_invalid_params_is_refused(mcp: Mcp) -> None:
    body = initialize_body()
    del body["params"]["clientInfo"]
    response = await mcp.post(body)
    assert response.status == 400
    assert "Mcp-Session-Id" not in response.headers
    error = (await response.json())["error"]
    assert error["code"] == -32602
    session = await mcp.initialize()
    await mcp.ping_ok(session)


async def test_initialized_notification_is_accepted_with_202(mcp: Mcp) -> None:
    response = await mcp.post(initialize_body())
    session = response.headers["Mcp-Session-Id"]
    response = await mcp.post(
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        session=session,
        headers={"Mcp-Protocol-Version": LATEST},
    )
    assert response.status == 202
    assert await response.read() == b""


async def test_a_client_response_message_is_accepted_with_202(mcp: Mcp) -> None:
    session = await mcp.initialize()
    response = await mcp.post({"jsonrpc": "2.0", "id": 99, "result": {}}, session=session)
    assert response.status == 202
    await mcp.ping_ok(session)


async def test_ping(mcp: Mcp) -> None:
    session = await mcp.initialize()
    body = await mcp.rpc(session, "ping")
    assert body == {"jsonrpc": "2.0", "id": 7, "result": {}}


async def test_string_request_ids_are_echoed(mcp: Mcp) -> None:
    session = await mcp.initialize()
    response = await mcp.post({"jsonrpc": "2.0", "id": "abc", "method": "ping"}, session=session)
    assert (await response.json()) == {"jsonrpc": "2.0", "id": "abc", "result": {}}


# --- tools ---------------------------------------------------------------------


@pytest.mark.parametrize("version", SUPPORTED)
async def test_tools_list_names_both_tools_with_schemas(mcp: Mcp, version: str) -> None:
    session = await mcp.initialize(version)
    result = (await mcp.rpc(session, "tools/list"))["result"]
    tools = {tool["name"]: tool for tool in result["tools"]}
    assert set(tools) == {"openDiff", "closeDiff"}
    open_schema = tools["openDiff"]["inputSchema"]
    close_schema = tools["closeDiff"]["inputSchema"]
    assert open_schema["type"] == "object" and close_schema["type"] == "object"
    assert sorted(open_schema["required"]) == ["filePath", "newContent"]
    assert open_schema["properties"]["filePath"]["type"] == "string"
    assert open_schema["properties"]["newContent"]["type"] == "string"
    assert close_schema["required"] == ["filePath"]
    assert close_schema["properties"]["suppressNotification"]["type"] == "boolean"
    for tool in tools.values():
        assert tool["description"]


@pytest.mark.parametrize("version", SUPPORTED)
async def test_tools_list_is_the_same_answer_to_every_request_but_its_id(mcp: Mcp, version: str) -> None:
    session = await mcp.initialize(version)
    expected = protocol.tools_list_result(version, [diff_tools.OPEN_DIFF, diff_tools.CLOSE_DIFF])
    for request_id in (1, "two", 1):
        response = await mcp.post({"jsonrpc": "2.0", "id": request_id, "method": "tools/list"}, session=session)
        assert (await response.json()) == {"jsonrpc": "2.0", "id": request_id, "result": expected}


async def test_open_and_close_diff_say_they_are_not_available_yet(mcp: Mcp, tmp_path: Any) -> None:
    session = await mcp.initialize()
    path = str(tmp_path / "file.txt")
    opened = await mcp.call_tool(session, "openDiff", {"filePath": path, "newContent": "new\n"})
    assert opened["isError"] is True
    assert opened["content"][0]["type"] == "text"
    assert "not available yet" in opened["content"][0]["text"]
    closed = await mcp.call_tool(session, "closeDiff", {"filePath": path, "suppressNotification": True})
    assert closed["isError"] is True
    assert "not available yet" in closed["content"][0]["text"]


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("openDiff", {"filePath": "relative/file.txt", "newContent": "x"}, ["filePath", "absolute"]),
        ("openDiff", {"filePath": "ABSOLUTE", "newContent": 42}, ["newContent", "string"]),
        ("openDiff", {"filePath": "ABSOLUTE", "newContent": None}, ["newContent", "string"]),
        ("openDiff", {"filePath": "ABSOLUTE"}, ["newContent", "required"]),
        ("openDiff", {"newContent": "x"}, ["filePath", "required"]),
        ("openDiff", {}, ["filePath", "newContent"]),
        ("openDiff", {"filePath": 5, "newContent": "x"}, ["filePath", "string"]),
        ("closeDiff", {}, ["filePath", "required"]),
        ("closeDiff", {"filePath": "relative.txt"}, ["filePath", "absolute"]),
        ("closeDiff", {"filePath": "ABSOLUTE", "suppressNotification": "yes"}, ["suppressNotification", "boolean"]),
    ],
)
async def test_bad_tool_arguments_give_an_error_result_naming_the_problem(
    mcp: Mcp, tmp_path: Any, tool: str, arguments: dict[str, Any], expected: list[str]
) -> None:
    session = await mcp.initialize()
    arguments = {k: (str(tmp_path / "f.txt") if v == "ABSOLUTE" else v) for k, v in arguments.items()}
    result = await mcp.call_tool(session, tool, arguments)
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert text.startswith(f"Invalid {tool} arguments")
    for word in expected:
        assert word.lower() in text.lower(), text
    assert "not available yet" not in text
    await mcp.ping_ok(session)


async def test_tools_call_without_arguments_reports_the_missing_fields(mcp: Mcp) -> None:
    session = await mcp.initialize()
    body = await mcp.rpc(session, "tools/call", {"name": "openDiff"})
    result = body["result"]
    assert result["isError"] is True
    assert "filePath" in result["content"][0]["text"]


async def test_a_failing_tool_handler_gives_an_error_result_not_a_crash(
    mcp_factory: Callable[..., Any], holder: Any, tmp_path: Any
) -> None:
    from qwencompanion_src.core.companion.diff_tools import OPEN_DIFF
    from qwencompanion_src.core.companion.server import RegisteredTool

    async def broken(session_id: str, arguments: dict[str, Any]) -> Any:
        raise RuntimeError("secret internals")

    server = CompanionServer(token=TOKEN, tools=[RegisteredTool(OPEN_DIFF, broken)], context=holder)
    mcp = await mcp_factory(server)
    session = await mcp.initialize()
    result = await mcp.call_tool(session, "openDiff", {"filePath": str(tmp_path), "newContent": ""})
    assert result["isError"] is True
    assert "openDiff failed" in result["content"][0]["text"]
    assert "secret internals" not in result["content"][0]["text"]
    await mcp.ping_ok(session)


async def test_work_a_tool_defers_runs_once_its_answer_is_written(
    mcp_factory: Callable[..., Any], holder: Any, tmp_path: Any
) -> None:
    from qwencompanion_src.core.companion.diff_tools import CLOSE_DIFF
    from qwencompanion_src.core.companion.protocol import text_result
    from qwencompanion_src.core.companion.server import RegisteredTool, after_response

    events: list[str] = []

    async def closing(session_id: str, arguments: dict[str, Any]) -> Any:
        after_response(lambda: events.append("deferred"))
        events.append("answered")
        return text_result("x" * 3_000_000)  # more than one write of the socket

    server = CompanionServer(token=TOKEN, tools=[RegisteredTool(CLOSE_DIFF, closing)], context=holder)
    mcp = await mcp_factory(server)
    session = await mcp.initialize()
    result = await mcp.call_tool(session, "closeDiff", {"filePath": str(tmp_path / "a")})
    assert len(result["content"][0]["text"]) == 3_000_000
    assert events == ["answered", "deferred"]


async def test_an_answer_quoting_a_long_text_is_streamed_and_complete(
    mcp_factory: Callable[..., Any], holder: Any, tmp_path: Any
) -> None:
    from qwencompanion_src.core.companion.diff_tools import CLOSE_DIFF
    from qwencompanion_src.core.companion.protocol import QuotedText, text_result
    from qwencompanion_src.core.companion.server import STREAMED_TEXT_CHARS, RegisteredTool, after_response

    text = ("line \"é\" \\ \U0001f600\n" * (STREAMED_TEXT_CHARS // 5))[: 3 * STREAMED_TEXT_CHARS + 7]
    events: list[str] = []

    async def closing(session_id: str, arguments: dict[str, Any]) -> Any:
        after_response(lambda: events.append("deferred"))
        return text_result(QuotedText('{"content": ', text, "}"))

    server = CompanionServer(token=TOKEN, tools=[RegisteredTool(CLOSE_DIFF, closing)], context=holder)
    mcp = await mcp_factory(server)
    session = await mcp.initialize()
    response = await mcp.post(
        {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "closeDiff", "arguments": {}}},
        session=session,
    )
    assert response.headers["Transfer-Encoding"] == "chunked"
    body = await response.json()
    assert json.loads(body["result"]["content"][0]["text"]) == {"content": text}
    assert body["id"] == 9 and body["result"]["isError"] is False
    assert events == ["deferred"]
    await mcp.ping_ok(session)


def test_work_deferred_outside_a_request_runs_at_once() -> None:
    from qwencompanion_src.core.companion.server import after_response

    events: list[str] = []
    after_response(lambda: events.append("ran"))
    assert events == ["ran"]


async def test_an_unknown_tool_is_a_json_rpc_error(mcp: Mcp) -> None:
    session = await mcp.initialize()
    body = await mcp.rpc(session, "tools/call", {"name": "deleteEverything", "arguments": {}})
    assert "result" not in body
    assert body["id"] == 7
    assert body["error"]["code"] == -32602
    assert "deleteEverything" in body["error"]["message"]
    await mcp.ping_ok(session)


# --- JSON-RPC errors -------------------------------------------------------------


async def test_an_unknown_method_is_method_not_found(mcp: Mcp) -> None:
    session = await mcp.initialize()
    body = await mcp.rpc(session, "resources/list")
    assert body["id"] == 7
    assert body["error"]["code"] == -32601
    assert "resources/list" in body["error"]["message"]
    await mcp.ping_ok(session)


@pytest.mark.parametrize(
    "params", [{}, {"name": 5}, {"name": "openDiff", "arguments": "not an object"}, {"name": "openDiff", "arguments": [1]}]
)
async def test_bad_tools_call_params_are_invalid_params(mcp: Mcp, params: dict[str, Any]) -> None:
    session = await mcp.initialize()
    body = await mcp.rpc(session, "tools/call", params)
    assert body["error"]["code"] == -32602
    await mcp.ping_ok(session)


@pytest.mark.parametrize("raw", [b"{not json", b"", b"\xff\xfe", b'{"jsonrpc": "2.0", "id": 1, "method": '])
async def test_malformed_json_is_a_400_parse_error(mcp: Mcp, raw: bytes) -> None:
    session = await mcp.initialize()
    response = await mcp.post(None, session=session, raw=raw)
    assert response.status == 400
    body = await response.json()
    assert body["error"]["code"] == -32700
    assert body["id"] is None
    await mcp.ping_ok(session)


@pytest.mark.parametrize(
    "payload",
    [
        {"hello": "world"},
        {"jsonrpc": "1.0", "id": 1, "method": "ping"},
        {"id": 1, "method": "ping"},
        "ping",
        42,
        None,
        [request_body("ping")],
        [],
    ],
)
async def test_a_non_json_rpc_body_or_a_batch_is_a_400_invalid_request(mcp: Mcp, payload: Any) -> None:
    session = await mcp.initialize()
    response = await mcp.post(None, session=session, raw=json.dumps(payload).encode())
    assert response.status == 400
    body = await response.json()
    assert body["error"]["code"] == -32600
    await mcp.ping_ok(session)


async def test_a_batch_error_names_batches(mcp: Mcp) -> None:
    session = await mcp.initialize()
    response = await mcp.post([request_body("ping")], session=session)
    assert response.status == 400
    assert "batch" in (await response.json())["error"]["message"].lower()


# --- sessions over HTTP -------------------------------------------------------------


async def test_a_request_without_a_session_header_is_400(mcp: Mcp) -> None:
    session = await mcp.initialize()
    response = await mcp.post(request_body("ping"))
    assert response.status == 400
    body = await response.json()
    assert body["id"] == 7
    assert "Mcp-Session-Id" in body["error"]["message"]
    await mcp.ping_ok(session)


async def test_an_unknown_session_is_404_with_a_json_rpc_error(mcp: Mcp) -> None:
    session = await mcp.initialize()
    response = await mcp.post(request_body("ping"), session="f" * 32)
    assert response.status == 404
    body = await response.json()
    assert body["id"] == 7
    assert body["error"]["code"] == -32001
    await mcp.ping_ok(session)


@pytest.mark.parametrize("version", ["1999-01-01", "2026-07-28", "garbage"])
async def test_an_unsupported_protocol_version_header_is_400(mcp: Mcp, version: str) -> None:
    session = await mcp.initialize()
    response = await mcp.post(request_body("ping"), session=session, headers={"Mcp-Protocol-Version": version})
    assert response.status == 400
    assert (await response.json())["error"]["code"] == -32600
    await mcp.ping_ok(session)


@pytest.mark.parametrize("version", SUPPORTED)
async def test_a_supported_protocol_version_header_is_accepted(mcp: Mcp, version: str) -> None:
    session = await mcp.initialize()
    response = await mcp.post(request_body("ping"), session=session, headers={"Mcp-Protocol-Version": version})
    assert response.status == 200


async def test_initialize_carrying_a_session_header_is_400(mcp: Mcp, server: CompanionServer) -> None:
    session = await mcp.initialize()
    response = await mcp.post(initialize_body(), session=session)
    assert response.status == 400
    assert (await response.json())["error"]["code"] == -32600
    assert "Mcp-Session-Id" not in response.headers
    assert len(server.sessions) == 1
    await mcp.ping_ok(session)


async def test_get_without_event_stream_accept_is_406(mcp: Mcp) -> None:
    session = await mcp.initialize()
    for accept in ("application/json", "*/*", ""):
        response = await mcp.client.get(
            "/mcp", headers={**auth(), "Accept": accept, "Mcp-Session-Id": session}
        )
        assert response.status == 406, accept
    await mcp.ping_ok(session)


async def test_get_without_a_session_is_400_and_with_an_unknown_one_404(mcp: Mcp) -> None:
    session = await mcp.initialize()
    response = await mcp.client.get("/mcp", headers={**auth(), "Accept": "text/event-stream"})
    assert response.status == 400
    response = await mcp.client.get(
        "/mcp", headers={**auth(), "Accept": "text/event-stream", "Mcp-Session-Id": "0" * 32}
    )
    assert response.status == 404
    await mcp.ping_ok(session)


async def test_a_second_stream_on_the_same_session_is_409(mcp: Mcp) -> None:
    session = await mcp.initialize()
    stream = await mcp.open_stream(session)
    await stream.next_message()  # the stream is live
    response = await mcp.client.get(
        "/mcp", headers={**auth(), "Accept": "text/event-stream", "Mcp-Session-Id": session}
    )
    assert response.status == 409
    await mcp.ping_ok(session)


async def test_delete_ends_the_session(mcp: Mcp, server: CompanionServer) -> None:
    session = await mcp.initialize()
    other = await mcp.initialize()
    response = await mcp.client.delete("/mcp", headers={**auth(), "Mcp-Session-Id": session})
    assert response.status == 200
    assert server.sessions.get(session) is None
    response = await mcp.post(request_body("ping"), session=session)
    assert response.status == 404
    response = await mcp.client.get(
        "/mcp", headers={**auth(), "Accept": "text/event-stream", "Mcp-Session-Id": session}
    )
    assert response.status == 404
    response = await mcp.client.delete("/mcp", headers={**auth(), "Mcp-Session-Id": session})
    assert response.status == 404
    response = await mcp.client.delete("/mcp", headers=auth())
    assert response.status == 400
    await mcp.ping_ok(other)


async def test_delete_closes_the_sessions_open_stream(mcp: Mcp) -> None:
    session = await mcp.initialize()
    stream = await mcp.open_stream(session)
    await stream.next_message()
    response = await mcp.client.delete("/mcp", headers={**auth(), "Mcp-Session-Id": session})
    assert response.status == 200
    with pytest.raises(EOFError):
        while True:
            await stream.next()


# --- body size -----------------------------------------------------------------------


async def test_a_20_mb_new_content_is_accepted(mcp: Mcp, tmp_path: Any) -> None:
    session = await mcp.initialize()
    content = ('line with "quotes" and \\ backslashes\n' * 600_000)[: 20 * 1024 * 1024]
    body = request_body("tools/call", {"name": "openDiff", "arguments": {"filePath": str(tmp_path / "big.txt"), "newContent": content}})
    raw = json.dumps(body).encode()
    assert len(raw) > 20 * 1024 * 1024
    response = await mcp.post(None, session=session, raw=io.BytesIO(raw))
    assert response.status == 200
    result = (await response.json())["result"]
    # Reached the tool (not refused for size or arguments).
    assert "not available yet" in result["content"][0]["text"]


@pytest.fixture
async def live(live_factory: Callable[..., Any], server_factory: Callable[..., CompanionServer]) -> CompanionServer:
    server: CompanionServer = await live_factory(server_factory())
    return server


async def _live_session(port: int) -> str:
    body = json.dumps(initialize_body()).encode()
    status, headers, _ = await raw_http(
        port,
        raw_request("POST", port, {**auth(), "Content-Type": "application/json", "Content-Length": str(len(body))}, body),
    )
    assert status == 200
    return headers["mcp-session-id"]


async def _live_post(port: int, session: str, framing: dict[str, str], body: bytes = b"") -> tuple[int, dict[str, str], bytes]:
    """A JSON POST in `session`, framed by `framing` (Content-Length or Transfer-Encoding)."""
    headers = {**auth(), "Content-Type": "application/json", **framing, "Mcp-Session-Id": session}
    return await raw_http(port, raw_request("POST", port, headers, body))


async def _live_ping(port: int, session: str) -> None:
    body = json.dumps(request_body("ping")).encode()
    status, _, answer = await _live_post(port, session, {"Content-Length": str(len(body))}, body)
    assert status == 200
    assert json.loads(answer)["result"] == {}


async def test_a_body_over_the_limit_by_content_length_is_413_before_it_is_sent(live: CompanionServer) -> None:
    session = await _live_session(live.port)
    too_big = live.options.max_body_bytes + 1
    # Only the headers are sent: the server must answer without waiting for the body.
    status, _, body = await _live_post(live.port, session, {"Content-Length": str(too_big)})
    assert status == 413
    error = json.loads(body)["error"]
    assert "too large" in error["message"]
    assert "32 MiB" in error["message"]
    await _live_ping(live.port, session)


def _chunked(data: bytes, size: int = 8192) -> bytes:
    out = b""
    for start in range(0, len(data), size):
        chunk = data[start : start + size]
        out += f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
    return out + b"0\r\n\r\n"


@pytest.mark.parametrize("limit", [64 * 1024, 100_000, 2 * 1024 * 1024])
async def test_a_chunked_body_over_the_limit_is_413(
    live_factory: Callable[..., Any], server_factory: Callable[..., CompanionServer], limit: int
) -> None:
    live = await live_factory(server_factory(ServerOptions(max_body_bytes=limit)))
    session = await _live_session(live.port)
    payload = json.dumps(request_body("tools/call", {"name": "openDiff", "arguments": {"filePath": "/x", "newContent": "a" * (limit + 10)}})).encode()
    status, _, body = await _live_post(live.port, session, {"Transfer-Encoding": "chunked"}, _chunked(payload))
    assert status == 413
    message = json.loads(body)["error"]["message"]
    assert "too large" in message
    # The limit is stated, and stated truthfully.
    assert " 0 MiB" not in message
    assert any(str(n) in message for n in (limit, limit // 1024, limit // (1024 * 1024)) if n)
    await _live_ping(live.port, session)


async def test_a_content_length_body_over_a_small_limit_is_413(
    live_factory: Callable[..., Any], server_factory: Callable[..., CompanionServer]
) -> None:
    live = await live_factory(server_factory(ServerOptions(max_body_bytes=4096)))
    session = await _live_session(live.port)
    payload = json.dumps(request_body("ping", {"padding": "a" * 5000})).encode()
    status, _, body = await _live_post(live.port, session, {"Content-Length": str(len(payload))}, payload)
    assert status == 413
    assert "too large" in json.loads(body)["error"]["message"]
    await _live_ping(live.port, session)


async def test_a_chunked_body_under_the_limit_is_accepted(live: CompanionServer) -> None:
    session = await _live_session(live.port)
    payload = json.dumps(request_body("ping")).encode()
    status, _, body = await _live_post(live.port, session, {"Transfer-Encoding": "chunked"}, _chunked(payload, 7))
    assert status == 200
    assert json.loads(body)["result"] == {}


async def test_other_methods_and_paths_are_refused_without_crashing(mcp: Mcp) -> None:
    session = await mcp.initialize()
    response = await mcp.client.put("/mcp", headers=auth(), data=b"{}")
    assert response.status == 405
    response = await mcp.client.post("/other", headers=auth(), json=request_body("ping"))
    assert response.status == 404
    await mcp.ping_ok(session)


async def test_on_sessions_changed_reports_connected_streams(
    mcp_factory: Callable[..., Any], server_factory: Callable[..., CompanionServer]
) -> None:
    counts: list[int] = []
    server = server_factory(on_sessions_changed=counts.append)
    mcp = await mcp_factory(server)
    session = await mcp.initialize()
    assert counts and counts[-1] == 0
    stream = await mcp.open_stream(session)
    await stream.next_message()
    assert counts[-1] == 1
    assert server.sessions.connected_count() == 1
    response = await mcp.client.delete("/mcp", headers={**auth(), "Mcp-Session-Id": session})
    assert response.status == 200
    assert counts[-1] == 0

