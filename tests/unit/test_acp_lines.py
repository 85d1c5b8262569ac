"""The lines between the editor and an agent (core/chat/agent/acp_lines.py), the
ACP SDK's message transport: what it hands the SDK and the client, what it
lets go, and the names it maps between qwen's and the SDK's conventions."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine
from typing import Any, cast

from acp.schema import SessionNotification

from qwencompanion_src.core.chat.agent.acp_lines import MAX_MESSAGE_BYTES, AgentLines, answered_id


class Writer:
    """What the transport writes to the agent's stdin."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []

    def write(self, data: bytes) -> None:
        self.lines.extend(json.loads(line) for line in data.decode().splitlines())

    async def drain(self) -> None:
        pass


class Notifications:
    """Where the agent's notifications go, recorded."""

    def __init__(self) -> None:
        self.heard: list[tuple[str, Any]] = []

    def session_update(self, notification: SessionNotification) -> None:
        self.heard.append(("session/update", notification.update.session_update))

    def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        self.heard.append((method, params))


class Lines:
    def __init__(self) -> None:
        self.reader = asyncio.StreamReader()
        self.writer = Writer()
        self.notifications = Notifications()
        self.oversized: list[int] = []
        self.warnings: list[str] = []
        self.lines = AgentLines(self.reader, cast(asyncio.StreamWriter, self.writer),
                                self.notifications, self.oversized.append,
                                lambda key, *_: self.warnings.append(key))

    def agent_sends(self, *messages: dict[str, Any] | str) -> None:
        for message in messages:
            line = message if isinstance(message, str) else json.dumps(message)
            self.reader.feed_data(line.encode() + b"\n")


def run(work: Coroutine[Any, Any, Any]) -> Any:
    return asyncio.run(work)


def chunk(text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}}}


def test_notifications_are_handed_over_as_they_are_read_and_never_to_the_sdk() -> None:
    async def scenario() -> tuple[Lines, dict[str, Any] | None]:
        lines = Lines()
        lines.agent_sends(chunk("a"), {"jsonrpc": "2.0", "method": "qwen/notify/session/mode-update",
                                       "params": {"sessionId": "s", "currentModeId": "plan"}},
                          chunk("b"), {"jsonrpc": "2.0", "id": 7, "result": {}})
        return lines, await lines.lines.receive()

    lines, first = run(scenario())
    assert first == {"jsonrpc": "2.0", "id": 7, "result": {}}  # the SDK gets the answer only
    assert lines.notifications.heard == [("session/update", "agent_message_chunk"),
                                  ("qwen/notify/session/mode-update", {"sessionId": "s", "currentModeId": "plan"}),
                                  ("session/update", "agent_message_chunk")]


def test_a_malformed_update_is_warned_of_once_per_kind_and_the_stream_goes_on() -> None:
    async def scenario() -> Lines:
        lines = Lines()
        bad = {"jsonrpc": "2.0", "method": "session/update", "params": {"update": {"sessionUpdate": "nonsense"}}}
        lines.agent_sends(bad, bad, chunk("after"))
        lines.reader.feed_eof()
        assert await lines.lines.receive() is None
        return lines

    lines = run(scenario())
    assert lines.warnings == ["update:nonsense", "update:nonsense"]
    assert lines.notifications.heard == [("session/update", "agent_message_chunk")]


def test_methods_the_sdk_does_not_route_come_with_one_extension_prefix_and_go_out_without_it() -> None:
    async def scenario() -> tuple[Lines, list[dict[str, Any] | None]]:
        lines = Lines()
        lines.agent_sends(*({"jsonrpc": "2.0", "id": n, "method": method, "params": {}} for n, method in enumerate(
            ["fs/read_text_file", "terminal/create", "elicitation/create", "craft/drainMidTurnQueue", "_vendor/x", 5])))
        received = [await lines.lines.receive() for _ in range(6)]
        await lines.lines.send({"jsonrpc": "2.0", "id": 0, "method": "_rewindSession", "params": {}})
        await lines.lines.send({"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": {}})
        await lines.lines.send({"jsonrpc": "2.0", "method": "__vendor/y", "params": {}})
        return lines, received

    lines, received = run(scenario())
    assert [m["method"] for m in received if m is not None] == [
        "fs/read_text_file", "terminal/create", "_elicitation/create", "_craft/drainMidTurnQueue", "__vendor/x", "_5"]
    assert [m["method"] for m in lines.writer.lines] == ["rewindSession", "session/prompt", "_vendor/y"]


def test_a_request_is_let_go_once_answered_and_a_response_at_the_next_read() -> None:
    async def scenario() -> tuple[list[dict[str, Any] | None], list[dict[str, Any]]]:
        lines = Lines()
        write = {"jsonrpc": "2.0", "id": "w", "method": "fs/write_text_file",
                 "params": {"sessionId": "s", "path": "/p", "content": "x" * 1000}}
        lines.agent_sends(write, write, {"jsonrpc": "2.0", "id": 0, "result": {"sessions": []}}, chunk("idle"))
        first, second, answer = [await lines.lines.receive() for _ in range(3)]
        held_before = [dict(m) for m in (first, second, answer) if m is not None]
        await lines.lines.send({"jsonrpc": "2.0", "id": "w", "result": None})  # the first of the two "w"
        lines.reader.feed_eof()
        await lines.lines.receive()  # the next read: the answer's result was taken already
        return [first, second, answer], held_before

    (first, second, answer), held_before = run(scenario())
    assert all(held_before)
    assert first == {} and answer == {}
    assert second is not None and second["params"]["content"] == "x" * 1000  # still being answered


def test_a_line_longer_than_the_limit_is_dropped_and_reported() -> None:
    async def scenario() -> tuple[Lines, dict[str, Any] | None]:
        lines = Lines()
        lines.agent_sends("x" * (MAX_MESSAGE_BYTES + 10), "not json", "[1]", {"jsonrpc": "2.0", "id": 1, "result": 2})
        return lines, await lines.lines.receive()

    lines, message = run(scenario())
    assert message == {"jsonrpc": "2.0", "id": 1, "result": 2}
    assert lines.oversized == [MAX_MESSAGE_BYTES + 11]



def test_an_answer_longer_than_the_limit_answers_its_request_with_an_error_and_the_stream_goes_on() -> None:
    padding = "t" * (MAX_MESSAGE_BYTES + 10)

    async def scenario() -> tuple[Lines, list[dict[str, Any] | None]]:
        lines = Lines()
        lines.agent_sends({"jsonrpc": "2.0", "id": 7, "result": {"sessions": [{"title": padding}]}},
                          {"jsonrpc": "2.0", "id": 8, "method": "fs/write_text_file", "params": {"content": padding}},
                          {"jsonrpc": "2.0", "id": 9, "result": 2})
        answer = dict(await lines.lines.receive() or {})  # emptied at the next read, as the SDK took it
        return lines, [answer, await lines.lines.receive()]

    lines, (answer, following) = run(scenario())
    assert answer["id"] == 7 and "result" not in answer
    assert answer["error"]["message"] == "the agent's answer was 32 MB, more than the 32 MB the editor takes"
    assert following == {"jsonrpc": "2.0", "id": 9, "result": 2}  # the agent's own oversized request: only skipped
    assert len(lines.oversized) == 2


def test_whose_answer_a_skipped_line_was_is_read_only_when_its_start_says_so() -> None:
    assert answered_id(b'{"jsonrpc":"2.0","id":12,"result":{"sessions":[{"ti') == 12
    assert answered_id(b' { "id" : "a\\"b" ,\n "jsonrpc": "2.0", "error": {"code"') == 'a"b'
    assert answered_id(b'{"jsonrpc":"2.0","result":{"x":1},"id":12}') is None  # the id after the result
    assert answered_id(b'{"jsonrpc":"2.0","id":3,"method":"fs/write_text_file","params":{') is None  # a request
    assert answered_id(b'{"jsonrpc":"2.0","method":"session/update","params":{') is None  # a notification
    assert answered_id(b'{"jsonrpc":"2.0","id":3,"id":4,"result":') is None  # which one the SDK reads is a guess
    assert answered_id(b'{"jsonrpc":"2.0","id":true,"result":') is None  # no id JSON-RPC allows
    assert answered_id(b'{"jsonrpc":"2.0","id":{"n":1},"result":') is None
    assert answered_id(b'{"jsonrpc":"2.0","id":12') is None  # cut off before the result
    assert answered_id(b'{"jsonrpc":"2.0","params":"' + b"p" * 5000) is None
    assert answered_id(b'[{"id":1,"result":') is None
