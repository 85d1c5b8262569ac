"""Several chats on one agent process (`AgentConnection`) against the scripted
ACP agent: one process, each session's updates and requests routed to its own
chat, hostile session ids refused, the last chat to close ends the process."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from acp.schema import ReadTextFileRequest, ReadTextFileResponse, SessionNotification

from qwencompanion_src.core.chat.agent.agent_connection import AgentConnection
from qwencompanion_src.core.chat.agent.transport import AgentCommand
from qwencompanion_src.core.chat.chat_core import ChatCore, ChatCoreSetup
from qwencompanion_src.core.chat.requests.request_handler import DiskRequestHandler
from qwencompanion_src.core.chat.transcript.render import PlainRenderer
from qwencompanion_src.core.chat.transcript.streamer import BlockStreamer
from qwencompanion_src.core.chat.transcript.transcript import Transcript
from tests.support.processes import alive
from tests.unit.test_chat_core import ROOT, Events, Rig, View, wait_for


class CountingRequests(DiskRequestHandler):
    """Disk requests that remember which files they were asked to read."""

    def __init__(self, folder: Path) -> None:
        super().__init__(lambda: [str(folder)])
        self.read: list[str] = []
        self.cancelled = 0

    def cancel_pending(self) -> None:
        self.cancelled += 1

    async def read_text_file(self, request: ReadTextFileRequest) -> ReadTextFileResponse:
        self.read.append(Path(request.path).name)
        return await super().read_text_file(request)


class SharedRig:
    def __init__(self, rig: Rig, turns: list[list[dict[str, Any]]], **extra: Any) -> None:
        self.rig = rig
        script = rig.tmp / "script.json"
        script.write_text(json.dumps({"turns": turns, "state": str(rig.state), "log": str(rig.log), **extra}))
        self.connection = AgentConnection(rig.thread, lambda: AgentCommand(
            [sys.executable, "-m", "tests.rig.fake_acp_agent", str(script)], str(rig.folder), {"PYTHONPATH": str(ROOT)}))
        self.requests: list[CountingRequests] = []

    def chat(self) -> tuple[ChatCore, View, Events]:
        view, events, renderer = View(), Events(), PlainRenderer()
        requests = CountingRequests(self.rig.folder)
        self.requests.append(requests)
        setup = ChatCoreSetup(command=lambda: AgentCommand([], ""), mcp_servers=list, request_handler=lambda: requests,
                          renderer=lambda: renderer, store=self.rig.store, key=None, connection=self.connection)
        chat = ChatCore(self.rig.thread, setup, BlockStreamer(Transcript(), view), events)
        self.rig.chats.append(chat)
        return chat, view, events


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    rig = Rig(tmp_path)
    yield rig
    rig.close()


def test_two_chats_share_one_process_and_each_gets_only_its_own_answers(rig: Rig) -> None:
    gate = rig.tmp / "first-turn-may-end"  # the first turn runs until the test opens it, however slow the machine
    shared = SharedRig(rig, [[{"gate": str(gate)}, {"echo": "first: "}], [{"echo": "second: "}]])
    first, first_view, first_events = shared.chat()
    second, second_view, second_events = shared.chat()
    first.send("alpha")
    wait_for(lambda: first.state.agent_status == "busy")
    second.send("beta")  # answered while the first chat's turn still runs
    wait_for(lambda: second_events.ended)
    assert first_events.ended == []  # the second turn did not wait for the first
    gate.touch()
    wait_for(lambda: first_events.ended)
    wait_for(lambda: "first: alpha" in first_view.text and "second: beta" in second_view.text)
    assert "beta" not in first_view.text and "alpha" not in second_view.text
    assert first.pid == second.pid and len(rig.received("initialize")) == 1
    assert len(rig.received("session/new")) == 2 and first.state.session_id != second.state.session_id


def test_requests_and_updates_go_to_the_chat_whose_session_they_name(rig: Rig) -> None:
    (rig.folder / "mine.txt").write_text("mine\n")
    shared = SharedRig(rig, [[
        {"request": "fs/read_text_file", "params": {"sessionId": "", "path": str(rig.folder / "mine.txt")}},
    ]])
    first, _, _ = shared.chat()
    second, second_view, second_events = shared.chat()
    first.start().result(timeout=15)
    second.send("read it")
    wait_for(lambda: second_events.ended)
    assert shared.requests[1].read == ["mine.txt"] and shared.requests[0].read == []
    # An update of the first chat's session, however it comes, lands in the first chat only.
    stray = SessionNotification.model_validate({"sessionId": first.state.session_id, "update": {
        "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "for-the-first"}}})
    rig.thread.run(_call(lambda: shared.connection.session_update(stray)))
    first.streamer.flush()
    assert "for-the-first" not in second_view.text
    assert "for-the-first" in first.streamer.transcript.text()


async def _call(function: Any) -> None:
    function()


def test_a_request_or_update_for_an_unknown_session_is_refused_and_nothing_breaks(rig: Rig) -> None:
    (rig.folder / "a.txt").write_text("a\n")
    shared = SharedRig(rig, [[
        {"request": "fs/read_text_file", "params": {"sessionId": "not-a-session", "path": str(rig.folder / "a.txt")}},
        {"request": "session/request_permission", "params": {"sessionId": "x" * 10_000, "toolCall": {"toolCallId": "t"},
                                                              "options": []}},
        {"update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "never"}}},
        {"chunks": ["still here"]},
    ]])
    chat, view, events = shared.chat()
    chat.send("go")
    wait_for(lambda: events.ended)
    answers = [a["answer"] for a in rig.answers()]
    assert len(answers) == 2 and all(a.get("code") == -32602 and "no chat" in a["message"] for a in answers)
    assert shared.requests[0].read == []
    wait_for(lambda: "still here" in view.text)
    assert events.ended == ["end_turn"] and events.errors == []


def test_the_process_lives_while_a_chat_holds_it_and_ends_with_the_last(rig: Rig) -> None:
    shared = SharedRig(rig, [])
    first, _, _ = shared.chat()
    second, _, second_events = shared.chat()
    first.start().result(timeout=15)
    second.start().result(timeout=15)
    pid = first.pid
    assert pid is not None
    first.close()
    second.send("still served")
    wait_for(lambda: second_events.ended)
    assert second_events.ended == ["end_turn"] and second.pid == pid and alive(pid)
    second.close()
    wait_for(lambda: not alive(pid))


def test_a_crash_is_reported_in_every_chat_with_a_session_and_a_prompt_restarts_it(rig: Rig) -> None:
    shared = SharedRig(rig, [[{"crash": 3}]])
    first, _, first_events = shared.chat()
    second, _, second_events = shared.chat()
    second.start().result(timeout=15)
    first.send("crash")
    wait_for(lambda: first_events.errors and second_events.errors)
    assert "exited (code 3)" in second_events.errors[0]
    second.send("again")
    wait_for(lambda: second_events.ended)
    assert second_events.ended == ["end_turn"] and len(rig.received("initialize")) == 2


def test_a_restart_from_one_chat_ends_the_others_turn_with_a_note_and_both_go_on(rig: Rig) -> None:
    shared = SharedRig(rig, [[{"stall": 30}]])
    first, _, first_events = shared.chat()
    second, _, second_events = shared.chat()
    second.start().result(timeout=15)
    first.send("long one")
    # The agent must have taken the stalling turn, or the restart kills it
    # first and "again" below gets the stall instead.
    wait_for(lambda: rig.turns_taken() == 1)
    pid = first.pid
    second.sessions.restart().result(timeout=15)  # e.g. its cancel was not answered
    wait_for(lambda: first_events.ended)
    assert first_events.ended == ["error"] and first_events.errors == [] and second_events.errors == []
    wait_for(lambda: "restarted from another chat" in first.streamer.transcript.text())
    assert second.pid != pid and second.state.agent_status == "ready"
    first.send("again")
    wait_for(lambda: len(first_events.ended) == 2)
    assert first_events.ended[-1] == "end_turn" and first.pid == second.pid


def test_cancelling_or_closing_one_chat_answers_only_its_own_pending_requests(rig: Rig) -> None:
    """Defect guarded: Cancel (or Close) in one chat cancelled the connection's
    shared request table, answering the other chats' pending permissions
    "cancelled" too."""
    shared = SharedRig(rig, [[{"stall": 30}], [{"stall": 30}]])
    first, _, first_events = shared.chat()
    second, _, _ = shared.chat()
    first.send("long one")
    wait_for(lambda: first.state.agent_status == "busy")
    second.send("long two")
    wait_for(lambda: second.state.agent_status == "busy")
    first.cancel()
    wait_for(lambda: first_events.ended)
    assert shared.requests[0].cancelled >= 1 and shared.requests[1].cancelled == 0
    first.close()
    assert shared.requests[1].cancelled == 0


def test_a_closed_chats_session_is_no_longer_routed_to_it(rig: Rig) -> None:
    """Defect guarded: a closed chat's session stayed routed, so the shared
    agent could still read and write files and ask permissions through a chat
    the user closed."""
    shared = SharedRig(rig, [])
    first, _, _ = shared.chat()
    second, _, _ = shared.chat()
    first.start().result(timeout=15)
    second.start().result(timeout=15)
    closed = first.state.session_id
    assert closed is not None and shared.connection.owner_of(closed) is first
    first.close()
    assert shared.connection.owner_of(closed) is None
    assert shared.connection.owner_of(second.state.session_id) is second
    assert shared.connection.owners() == [second]
