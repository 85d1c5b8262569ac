"""The official MCP Python SDK client against a started Companion."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import mcp.client
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
from pydantic import BaseModel, ConfigDict

from qwencompanion_src.core.companion.companion import Companion

from .conftest import WAIT, context_with


class ContextParams(BaseModel):
    model_config = ConfigDict(extra="allow")


@asynccontextmanager
async def connect(companion: Companion, token: str | None = None,
                  path: str = "/mcp") -> AsyncIterator[tuple[ClientSession, asyncio.Queue[dict[str, Any]]]]:
    received: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def on_context(params: ContextParams) -> None:
        await received.put(params.model_dump())

    binding = mcp.client.NotificationBinding(method="ide/contextUpdate", params_type=ContextParams, handler=on_context)
    url = f"http://127.0.0.1:{companion.port}{path}"
    headers = {"Authorization": f"Bearer {token or companion.token}"}
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(url, http_client=http) as streams,
        ClientSession(streams[0], streams[1], notification_bindings=[binding]) as session,
    ):
        yield session, received


async def _next(queue: asyncio.Queue[dict[str, Any]]) -> dict[str, Any]:
    return await asyncio.wait_for(queue.get(), WAIT)


async def test_initialize_list_tools_and_call_tool(companion: Companion, tmp_path: Any) -> None:
    async with connect(companion) as (session, _):
        result = await session.initialize()
        assert result.protocol_version == "2025-11-25"
        assert result.server_info.name == "qwen-code-sublime-companion"
        assert result.capabilities.tools is not None

        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert set(tools) == {"openDiff", "closeDiff"}
        assert set(tools["openDiff"].input_schema["required"]) == {"filePath", "newContent"}
        assert tools["closeDiff"].input_schema["required"] == ["filePath"]

        called = await session.call_tool("openDiff", {"filePath": str(tmp_path / "x.py"), "newContent": "x"})
        assert called.is_error is True
        assert "not available yet" in called.content[0].text  # type: ignore[union-attr]

        bad = await session.call_tool("openDiff", {"filePath": "x.py", "newContent": "x"})
        assert bad.is_error is True
        assert "absolute" in bad.content[0].text  # type: ignore[union-attr]

        await session.send_ping()


async def test_an_unknown_tool_raises_in_the_client(companion: Companion) -> None:
    async with connect(companion) as (session, _):
        await session.initialize()
        with pytest.raises(Exception, match="Unknown tool"):
            await session.call_tool("noSuchTool", {})
        await session.send_ping()


async def test_the_context_arrives_through_a_notification_binding(companion: Companion, tmp_path: Any) -> None:
    first = context_with(str(tmp_path / "first.py"), line=4)
    companion.publish_context(first)
    async with connect(companion) as (session, received):
        await session.initialize()
        assert await _next(received) == first.params()  # pushed when the stream opened
        later = context_with(str(tmp_path / "later.py"), line=8)
        companion.publish_context(later)
        assert await _next(received) == later.params()


async def test_two_clients_at_once_both_receive_a_published_context(companion: Companion, tmp_path: Any) -> None:
    async with connect(companion) as (one, got_one), connect(companion) as (two, got_two):
        await one.initialize()
        await two.initialize()
        await _next(got_one)
        await _next(got_two)  # both streams are open
        assert len(companion.sessions()) == 2
        context = context_with(str(tmp_path / "shared.py"), line=2)
        assert companion.publish_context(context)
        assert await _next(got_one) == context.params()
        assert await _next(got_two) == context.params()


async def test_closing_the_client_ends_its_session(companion: Companion) -> None:
    async with connect(companion) as (session, received):
        await session.initialize()
        await _next(received)
        assert len(companion.sessions()) == 1

    async def ended() -> None:
        while companion.sessions():
            await asyncio.sleep(0.02)

    await asyncio.wait_for(ended(), WAIT)


async def test_a_client_with_the_wrong_token_cannot_connect(companion_factory: Callable[..., Companion]) -> None:
    companion = companion_factory()
    with pytest.raises(BaseException, match="error"):  # the SDK wraps the 401 in an ExceptionGroup
        async with connect(companion, token="0" * 64) as (session, _):
            await asyncio.wait_for(session.initialize(), WAIT)
    assert companion.sessions() == []
    assert companion.auth_failures()[-1].reason == "wrong-token"


async def test_the_ide_tools_endpoint_lists_and_answers_to_the_sdk(
    companion_factory: Callable[..., Companion], tmp_path: Any
) -> None:
    companion = companion_factory(mcp_config_directory=tmp_path / "ide-tools")
    async with connect(companion, companion.ide_tools_token, "/ide-tools/mcp") as (session, _):
        await session.initialize()
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert {"search_project", "find_references", "get_hover", "get_open_editors", "get_workspace_folders",
                "open_file", "get_build_output", "get_document_symbols"} <= set(tools)
        assert tools["search_project"].input_schema["properties"]["max_results"]["maximum"] == 1000
        called = await session.call_tool("search_project", {"query": "needle"})
        assert called.is_error is True and "not available" in called.content[0].text  # type: ignore[union-attr]
        bad = await session.call_tool("search_project", {"query": ""})
        assert bad.is_error is True
