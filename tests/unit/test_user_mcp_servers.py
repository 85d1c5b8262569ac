"""The chat_mcp_servers setting read and mapped to ACP's McpServer entries,
and what MCP Servers… takes of an agent's answers (bounded and cleaned)."""

from __future__ import annotations

from typing import Any

import pytest

from qwencompanion_src.core.chat.agent.mcp_status import (
    MAX_ITEMS,
    configured_servers,
    qwen_servers,
    restart_server,
    session_rows,
    tool_names,
)
from qwencompanion_src.core.chat.agent.user_mcp_servers import acp_entry, left_out_by_agent, user_servers


def test_a_stdio_server_maps_to_acps_stdio_entry() -> None:
    raw = {"command": "uvx", "args": ["docs-mcp", "--port", "0"], "env": {"A": "1", "B": "two"}}
    assert acp_entry("docs", raw) == {"name": "docs", "command": "uvx", "args": ["docs-mcp", "--port", "0"],
                                      "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "two"}]}
    assert acp_entry("bare", {"command": "x"}) == {"name": "bare", "command": "x", "args": [], "env": []}


def test_http_url_is_acps_http_and_url_is_sse_as_in_qwen() -> None:
    assert acp_entry("h", {"httpUrl": "https://a/mcp", "headers": {"X-Key": "k"}}) == {
        "type": "http", "name": "h", "url": "https://a/mcp", "headers": [{"name": "X-Key", "value": "k"}]}
    assert acp_entry("s", {"url": "http://b/sse"}) == {"type": "sse", "name": "s", "url": "http://b/sse", "headers": []}


@pytest.mark.parametrize(("raw", "problem"), [
    ("uvx", "must be an object"),
    ({}, "needs exactly one of"),
    ({"command": "x", "httpUrl": "https://a"}, "needs exactly one of"),
    ({"command": "  "}, "needs a \"command\" that is a non-empty string"),
    ({"command": "x", "args": "--a"}, "needs \"args\" that is a list of strings"),
    ({"command": "x", "args": ["a", 1]}, "needs \"args\" that is a list of strings"),
    ({"command": "x", "env": {"A": 1}}, "needs an \"env\" that maps names to strings"),
    ({"command": "x", "cwd": 3}, "needs a \"cwd\" that is a string"),
    ({"command": "x", "headers": {}}, "only an HTTP server takes"),
    ({"httpUrl": "file:///etc/passwd"}, "starts with http:// or https://"),
    ({"url": "https://a", "headers": ["a"]}, "needs \"headers\" that maps names to strings"),
    ({"url": "https://a", "env": {}}, "only a stdio server takes"),
])
def test_a_bad_entry_is_named_and_left_out_the_others_stay(raw: Any, problem: str) -> None:
    read = user_servers({"good": {"command": "ok"}, "bad": raw})
    assert [entry["name"] for entry in read.entries] == ["good"]
    [message] = read.problems
    assert message.startswith("The MCP server “bad” of chat_mcp_servers ") and problem in message
    assert message.endswith("it is left out.")


def test_names_with_control_characters_and_the_ide_tools_name_are_refused() -> None:
    read = user_servers({"ok\u202e": {"command": "x"}, "sublime-ide-tools": {"command": "x"}, "": {"command": "x"}})
    assert read.entries == []
    assert len(read.problems) == 3
    assert all("\u202e" not in problem for problem in read.problems)


def test_keys_acp_cannot_carry_are_named_not_refused() -> None:
    read = user_servers({"docs": {"command": "x", "cwd": "/srv", "timeout": 5, "trust": True}})
    assert read.entries == [{"name": "docs", "command": "x", "args": [], "env": []}]
    assert read.not_passed == [("The MCP server “docs” gets no cwd (it starts in the agent's working directory), "
                                "timeout, trust: ACP has no place for them.")]


def test_a_setting_that_is_no_object_passes_nothing() -> None:
    assert user_servers(None).entries == [] and user_servers(None).problems == []
    assert user_servers(["x"]).entries == [] and "must be an object" in user_servers(["x"]).problems[0]


def test_the_servers_an_agent_does_not_take_are_named() -> None:
    stdio, http = {"name": "a", "command": "x"}, {"type": "http", "name": "b", "url": "https://b"}
    assert left_out_by_agent("plain", [stdio], [stdio, http]) == \
        "plain takes no HTTP or SSE MCP servers of this kind (its mcpCapabilities): b not passed."
    assert left_out_by_agent("qwen", [stdio, http], [stdio, http]) is None


def test_qwens_session_report_is_bounded_and_cleaned() -> None:
    answer = {"mcp": {"servers": [
        {"name": "ti\u202eny\x1b[31m", "status": "error", "mcpStatus": "disconnected", "errorKind": "x" * 100_000},
        *({"name": f"s{i}", "status": "ok"} for i in range(MAX_ITEMS + 50)),
    ]}}
    rows = session_rows(answer)
    assert len(rows) == MAX_ITEMS
    assert rows[0].name == "tiny[31m" and rows[0].status == "error · disconnected"
    assert len(rows[0].problem) <= 64 * 1024
    assert session_rows("nonsense") == [] and session_rows({"mcp": {"servers": [{"status": "ok"}, 3]}}) == []


def test_tools_are_named_and_unknown_when_qwen_knows_the_server_only_in_the_session() -> None:
    assert tool_names({"tools": [{"name": "echo\u200b"}, {"name": ""}, "x"]}) == ["echo"]
    assert tool_names({"tools": [], "errors": [{"error": "MCP server not configured: tiny"}]}) is None


def test_qwen_servers_asks_the_session_then_each_servers_tools() -> None:
    calls: list[tuple[str, dict[str, Any]]] = []

    def call(method: str, params: dict[str, Any]) -> Any:
        calls.append((method, params))
        if method == "qwen/status/session/resources":
            return {"mcp": {"servers": [{"name": "tiny", "status": "ok", "mcpStatus": "connected"}]}}
        return {"tools": [{"name": "echo_marker"}]}

    [row] = qwen_servers(call, "s1")
    assert row.json() == {"name": "tiny", "status": "ok · connected", "tools": ["echo_marker"]}
    assert calls == [("qwen/status/session/resources", {"sessionId": "s1"}),
                     ("qwen/status/workspace/mcp/tools", {"serverName": "tiny"})]


def test_restart_says_when_qwen_knows_the_server_only_in_the_session() -> None:
    def refuses(method: str, params: dict[str, Any]) -> Any:
        raise RuntimeError('qwen/control/workspace/mcp/restart: MCP server not configured: "tiny"')

    assert restart_server(refuses, "tiny") is False
    assert restart_server(lambda method, params: {"restarted": True}, "tiny") is True
    assert configured_servers(["a\x07"])[0].json() == {"name": "a", "status": "configured", "tools": []}
