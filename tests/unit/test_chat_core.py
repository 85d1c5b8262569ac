"""The chat's bridge, session router and block streamer against the scripted
ACP agent (tests/rig/fake_acp_agent.py): streaming, stalls and cancel,
malformed and 10 MB lines, unknown methods, crashes and restarts."""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from qwencompanion_src.core import threads
from qwencompanion_src.core.chat.agent import agent_connection, chat_thread
from qwencompanion_src.core.chat.agent.acp_lines import redact
from qwencompanion_src.core.chat.agent.chat_thread import ChatThread
from qwencompanion_src.core.chat.agent.stdio_bridge import StdioBridge
from qwencompanion_src.core.chat.agent.transport import PROMPT_STEERED, AgentCommand, AgentGone, AgentTransport
from qwencompanion_src.core.chat.chat_core import ChatCore, ChatCoreSetup
from qwencompanion_src.core.chat.history.store import SessionStore, project_key
from qwencompanion_src.core.chat.requests.request_handler import DiskRequestHandler
from qwencompanion_src.core.chat.transcript.render import PlainRenderer
from qwencompanion_src.core.chat.transcript.streamer import BlockStreamer
from qwencompanion_src.core.chat.transcript.transcript import Edit, Transcript, queue_edit
from qwencompanion_src.core.files.text_positions import slice_lines
from tests.support.processes import alive

ROOT = Path(__file__).resolve().parents[2]
WAIT = 15.0


def wait_gone(thread_name: str, timeout: float = WAIT) -> bool:
    deadline = time.monotonic() + timeout
    while any(t.name == thread_name for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.01)
    return not any(t.name == thread_name for t in threading.enumerate())


def wait_for(predicate: Callable[[], Any], timeout: float = WAIT) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError("condition not met in time")


class Events:
    def __init__(self) -> None:
        self.ended: list[str] = []
        self.errors: list[str] = []
        self.cancel_timeouts = 0
        self.steers: list[tuple[str, bool]] = []
        self.given_back: list[Any] = []  # the prompts not sent

    def state_changed(self) -> None:
        pass

    def turn_ended(self, stop_reason: str) -> None:
        self.ended.append(stop_reason)

    def error(self, message: str) -> None:
        self.errors.append(message)

    def cancel_timed_out(self) -> None:
        self.cancel_timeouts += 1

    def steered(self, text: str, late: bool) -> None:
        self.steers.append((text, late))

    def not_sent(self, prompts: list[Any]) -> None:
        self.given_back.extend(prompts)


class View:
    """Applies edits the way the editor layer does, and counts the batches."""

    def __init__(self) -> None:
        self.text = ""
        self.batches = 0
        self.lock = threading.Lock()

    def __call__(self, edits: list[Edit]) -> None:
        with self.lock:
            self.batches += 1
            for edit in edits:
                self.text = self.text[: edit.offset] + edit.text + self.text[edit.offset + edit.erase :]


class Rig:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.folder = tmp / "project"
        self.folder.mkdir()
        self.state = tmp / "agent-state"
        self.log = tmp / "agent-log.jsonl"
        self.store = SessionStore(tmp / "cache")
        self.thread = ChatThread()
        self.thread.start()
        self.chats: list[ChatCore] = []

    def chat(self, turns: list[list[dict[str, Any]]] | None = None, folders: tuple[str, ...] = (),
             cwd: str | None = None, **script: Any) -> tuple[ChatCore, View, Events]:
        path = self.tmp / f"script-{len(self.chats)}.json"
        path.write_text(json.dumps({"turns": turns or [], "state": str(self.state), "log": str(self.log), **script}))
        view, events, renderer = View(), Events(), PlainRenderer()
        setup = ChatCoreSetup(
            command=lambda: AgentCommand([sys.executable, "-m", "tests.rig.fake_acp_agent", str(path)], str(self.folder),
                                         {"PYTHONPATH": str(ROOT)}, folders=folders),
            mcp_servers=list,
            request_handler=lambda: DiskRequestHandler(lambda: [str(self.folder)]),
            renderer=lambda: renderer,
            store=self.store,
            key=project_key(None, [str(self.folder)]),
            cwd=cwd,
        )
        chat = ChatCore(self.thread, setup, BlockStreamer(Transcript(), view), events)
        self.chats.append(chat)
        return chat, view, events

    def received(self, method: str) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        lines = [json.loads(line) for line in self.log.read_text().splitlines()]
        return [m for m in lines if m.get("method") == method]

    def turns_taken(self) -> int:
        """Prompts the scripted agent has begun (across its restarts): a chat is
        "busy" as soon as it sends, before the agent has read the prompt."""
        counter = self.state / "turns-used"
        text = counter.read_text() if counter.exists() else ""
        return int(text) if text else 0  # "" while the agent rewrites it

    def answers(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [m for m in map(json.loads, self.log.read_text().splitlines()) if "answer_to" in m]

    def close(self) -> None:
        for chat in self.chats:
            chat.close()
        self.thread.stop()


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    rig = Rig(tmp_path)
    yield rig
    rig.close()


def test_a_streamed_answer_reaches_the_view_in_few_batches(rig: Rig) -> None:
    chat, view, events = rig.chat([[{"stream": 2000, "size": 10}]])
    chat.send("hello")
    wait_for(lambda: events.ended)
    wait_for(lambda: "x" * 9 in view.text and view.text.count("x") == 2000 * 9)
    assert events.ended == ["end_turn"]
    assert view.text.startswith("## You\n\nhello\n\n## Qwen\n\n")
    assert view.text == chat.streamer.transcript.text()
    assert view.batches < 400  # batched, not one edit per chunk
    assert chat.state.session_id and chat.state.agent_status == "ready"


def test_prompt_sends_text_then_context_blocks(rig: Rig) -> None:
    chat, view, events = rig.chat()
    link = {"type": "resource_link", "uri": "file:///p/a.py", "name": "a.py"}
    chat.send("explain", [link])
    wait_for(lambda: events.ended)
    prompt = rig.received("session/prompt")[0]["params"]["prompt"]
    assert prompt == [{"type": "text", "text": "explain"}, link]
    assert "*Attached: a.py*" in view.text


def test_initialize_declares_file_system_and_new_session_gets_the_folder(rig: Rig) -> None:
    chat, _, _ = rig.chat()
    chat.start().result(WAIT)
    init = rig.received("initialize")[0]["params"]
    assert init["clientCapabilities"]["fs"] == {"readTextFile": True, "writeTextFile": True}
    assert init["clientCapabilities"]["elicitation"] == {"form": {}, "url": {}}  # forms and links are asked
    assert init["clientCapabilities"]["session"] == {"configOptions": {"boolean": {}}}  # Session Options sets switches
    assert rig.received("session/new")[0]["params"] == {"cwd": str(rig.folder), "mcpServers": []}
    assert [m.id for m in chat.state.modes] == ["plan", "default", "yolo"]
    assert chat.state.model_id == "$runtime|openai|fake-model(openai)"
    assert chat.state.context_size == 1000
    wait_for(lambda: [c.id for c in chat.state.commands] == ["compress", "memory"])


def test_prompts_sent_while_busy_are_queued_in_order(rig: Rig) -> None:
    chat, view, events = rig.chat([[{"stall": 0.5}, {"chunks": ["first"]}], [{"chunks": ["second"]}]])
    chat.send("one")
    chat.send("two")
    wait_for(lambda: len(events.ended) == 2)
    texts = [p["params"]["prompt"][0]["text"] for p in rig.received("session/prompt")]
    assert texts == ["one", "two"]
    assert view.text.index("first") < view.text.index("## You\n\ntwo") < view.text.index("second")


def test_cancel_ends_a_stalled_turn_as_cancelled(rig: Rig) -> None:
    chat, view, events = rig.chat([[{"chunks": ["partial "]}, {"stall": 30}]])
    chat.send("go")
    wait_for(lambda: "partial" in view.text)
    chat.cancel()
    wait_for(lambda: events.ended)
    assert events.ended == ["cancelled"]
    assert rig.received("session/cancel")
    wait_for(lambda: "> cancelled" in view.text)
    assert chat.state.agent_status == "ready"


def test_malformed_huge_and_unknown_messages_do_not_stop_the_chat(rig: Rig) -> None:
    big = 10 * 1024 * 1024
    chat, view, events = rig.chat([[
        {"raw": "{not json"},
        {"update": {"sessionUpdate": "no_such_kind", "x": 1}},
        {"notify": "vendor/unknown", "params": {"a": 1}},
        {"request": "craft/drainMidTurnQueue", "params": {}},
        {"big": big},
        {"chunks": ["after"]},
    ]])
    chat.send("go")
    wait_for(lambda: events.ended, timeout=60)
    assert events.ended == ["end_turn"]
    wait_for(lambda: "after" in view.text)
    assert view.text.count("y") >= big
    answer = rig.answers()[0]
    assert answer["answer_to"] == "craft/drainMidTurnQueue" and answer["answer"]["code"] == -32601


def test_terminals_elicitation_and_vendor_methods_are_answered_method_not_found(rig: Rig) -> None:
    """The editor offers none of them: each is a JSON-RPC error naming the
    method as the agent sent it (not the SDK's null for a terminal)."""
    asked = ["terminal/create", "terminal/kill", "elicitation/create", "_vendor/thing", "vendor/thing"]
    chat, view, events = rig.chat([[*({"request": method, "params": {"sessionId": "", "terminalId": "t",
                                                                     "command": "ls"}} for method in asked),
                                    {"chunks": ["after"]}]])
    chat.send("go")
    wait_for(lambda: events.ended)
    wait_for(lambda: "after" in view.text)
    answers = {answer["answer_to"]: answer["answer"] for answer in rig.answers()}
    assert {method: (answers[method].get("code"), (answers[method].get("data") or {}).get("method"))
            for method in asked} == {method: (-32601, method) for method in asked}


def test_file_requests_are_answered_inside_the_folders_only(rig: Rig) -> None:
    inside = rig.folder / "a.txt"
    inside.write_text("one\ntwo\nthree\n")
    outside = rig.tmp / "secret.txt"
    outside.write_text("no")
    chat, _, events = rig.chat([[
        {"request": "fs/read_text_file", "params": {"sessionId": "", "path": str(inside), "line": 2, "limit": 1}},
        {"request": "fs/read_text_file", "params": {"sessionId": "", "path": str(outside)}},
        {"request": "fs/write_text_file", "params": {"sessionId": "", "path": str(rig.folder / "new" / "b.txt"), "content": "hi"}},
        {"request": "session/request_permission", "params": {"sessionId": "", "toolCall": {"toolCallId": "t1"}, "options": [
            {"optionId": "proceed_once", "kind": "allow_once", "name": "Allow"}]}},
    ]])
    chat.send("go")
    wait_for(lambda: events.ended)
    read, refused, written, permission = [a["answer"] for a in rig.answers()]
    assert read == {"content": "two\n"}
    assert refused["code"] == -32602
    assert written is None and (rig.folder / "new" / "b.txt").read_text() == "hi"
    assert permission == {"outcome": {"outcome": "cancelled"}}


def test_tool_calls_render_one_line_updated_in_place(rig: Rig) -> None:
    chat, view, events = rig.chat([[
        {"chunks": ["Looking.\n\n"]},
        {"update": {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Read a.py", "status": "pending", "kind": "read"}},
        {"update": {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed"}},
        {"chunks": ["Done."]},
    ]])
    chat.send("go")
    wait_for(lambda: events.ended)
    wait_for(lambda: "Done." in view.text)
    assert view.text.count("Read a.py") == 1
    assert "- `Read a.py` — completed" in view.text
    assert view.text.index("Looking.") < view.text.index("Read a.py") < view.text.index("Done.")


def test_a_crash_mid_turn_is_reported_and_the_next_prompt_restarts_and_reloads(rig: Rig) -> None:
    chat, view, events = rig.chat([[{"chunks": ["before crash"]}, {"crash": 3}], [{"chunks": ["back again"]}]])
    chat.send("one")
    wait_for(lambda: events.ended)
    first_pid = rig.received("initialize") and chat.connection.bridge.pid  # type: ignore[union-attr]
    wait_for(lambda: chat.state.agent_status == "exited")
    assert any("exited (code 3)" in e for e in events.errors)
    session = chat.state.session_id
    chat.send("two")
    wait_for(lambda: len(events.ended) == 2)
    assert events.ended[-1] == "end_turn"
    assert rig.received("session/load")[0]["params"]["sessionId"] == session
    assert chat.connection.bridge is not None and chat.connection.bridge.pid != first_pid
    wait_for(lambda: "back again" in view.text)
    assert "## You\n\none" in view.text  # the reload replayed the history


def test_an_agent_that_will_not_start_is_not_restarted_in_a_loop(rig: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    # The back-off is measured from the failed start; on a loaded machine the
    # second prompt could come after it ran out. The connection's clock stands
    # still here, so the back-off is always ahead (its sleep is real, 1 s).
    monkeypatch.setattr(agent_connection, "time", SimpleNamespace(monotonic=lambda: 1000.0))
    chat, _, events = rig.chat(exit_on_start=1)
    chat.send("one")
    wait_for(lambda: events.ended)
    chat.send("two")
    wait_for(lambda: len(events.ended) == 2)
    assert len(rig.received("initialize")) == 0
    # The note reaches the transcript with the streamer's next flush, which may
    # come after the turn's end was told: waited for, not read at once.
    wait_for(lambda: "Restarting the agent in" in chat.streamer.transcript.text())


def test_an_agent_that_failed_to_start_is_not_taken_for_a_running_one(rig: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its pipe closes before its exit is reaped: for a moment it still looks
    running. The next prompt waited for no back-off and sent session/new to
    the dead agent (one run in eight of the test above, under load). Here the
    exit is never reaped."""
    monkeypatch.setattr(agent_connection, "time", SimpleNamespace(monotonic=lambda: 1000.0))
    monkeypatch.setattr(StdioBridge, "running", property(lambda self: self._process is not None))
    chat, _, events = rig.chat(exit_on_start=1)
    chat.send("one")
    wait_for(lambda: events.ended)
    chat.send("two")
    wait_for(lambda: len(events.ended) == 2)
    wait_for(lambda: "Restarting the agent in" in chat.streamer.transcript.text())
    assert not any("session/new" in error for error in events.errors)


def test_prompts_queued_behind_a_start_that_fails_all_come_back_once(rig: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agent_connection, "START_TIMEOUT", 1.0)
    chat, view, events = rig.chat(start_gate=str(rig.tmp / "never"))  # initialize is never answered
    image = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    chat.send("one")
    chat.send("two @shot", [image], attached={"@shot": image})
    chat.send("three")
    wait_for(lambda: events.ended)
    assert [(p.text, p.attached) for p in events.given_back] == [("one", {}), ("two @shot", {"@shot": image}), ("three", {})]
    assert events.ended == ["error"] and len(chat.queue) == 0 and not rig.received("session/prompt")
    [error] = events.errors
    assert "did not answer within 1 s" in error
    assert (chat.state.agent_status, chat.state.stopped_why) == ("stopped", "could not start")
    wait_for(lambda: "Not sent: your prompt is back in the composer." in view.text)
    assert view.text.count(error) == 1


def test_the_session_is_remembered_and_reloaded_by_a_new_chat(rig: Rig) -> None:
    chat, _, events = rig.chat([[{"chunks": ["remembered answer"]}]])
    chat.send("remember me")
    wait_for(lambda: events.ended)
    session = chat.state.session_id
    chat.close()
    again, view, _ = rig.chat()
    assert again.state.session_id == session
    again.start().result(WAIT)
    wait_for(lambda: "remembered answer" in view.text)
    assert "## You\n\nremember me" in view.text


def test_list_load_and_new_sessions(rig: Rig) -> None:
    chat, view, events = rig.chat([[{"chunks": ["A"]}], [{"chunks": ["B"]}]])
    chat.send("first chat")
    wait_for(lambda: len(events.ended) == 1)
    first = chat.state.session_id
    chat.sessions.new_session().result(WAIT)
    assert chat.state.session_id != first and view.text == ""
    chat.send("second chat")
    wait_for(lambda: len(events.ended) == 2)
    sessions = chat.sessions.list_history([]).result(WAIT)
    assert [s.session_id for s in sessions] == [chat.state.session_id, first]  # newest first
    chat.sessions.load_session(first or "").result(WAIT)
    wait_for(lambda: "first chat" in view.text)
    assert "second chat" not in view.text and chat.state.session_id == first


def test_mode_and_model_changes(rig: Rig) -> None:
    chat, _, _ = rig.chat()
    chat.start().result(WAIT)
    chat.option_setter.set_mode("plan").result(WAIT)
    assert chat.state.mode_id == "plan"
    chat.option_setter.set_model("$runtime|openai|other-model(openai)").result(WAIT)
    assert chat.state.model_id == "$runtime|openai|other-model(openai)"
    chat.option_setter.set_model("other-model").result(WAIT)  # refused by the agent: reported, unchanged
    assert chat.state.model_id == "$runtime|openai|other-model(openai)"


def test_mode_notifications_from_the_agent_are_reflected(rig: Rig) -> None:
    chat, _, events = rig.chat([[{"update": {"sessionUpdate": "current_mode_update", "currentModeId": "yolo"}}]])
    chat.send("go")
    wait_for(lambda: events.ended)
    assert chat.state.mode_id == "yolo"
    chat.ext_notification("qwen/notify/session/mode-update", {"v": 1, "sessionId": chat.state.session_id, "currentModeId": "plan"})
    assert chat.state.mode_id == "plan"


def test_authentication_is_done_when_the_agent_requires_it(rig: Rig) -> None:
    chat, _, events = rig.chat(auth_required=True, agent_name="qwen-code")  # qwen: signed in with its first method
    chat.send("hi")
    wait_for(lambda: events.ended)
    assert events.ended == ["end_turn"]
    assert rig.received("authenticate")[0]["params"] == {"methodId": "openai"}


def test_close_ends_the_agent_process(rig: Rig) -> None:
    chat, _, _ = rig.chat([[{"stall": 30}]])
    chat.send("go")
    pid = wait_for(lambda: chat.pid)
    wait_for(lambda: chat.state.agent_status == "busy")
    chat.close()
    wait_for(lambda: not alive(pid))


class AgentStarts:
    """Records, for each agent start, whether the closing had begun by then."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.closing = threading.Event()
        self.while_closing: list[bool] = []
        new_bridge = agent_connection.AgentConnection._new_bridge

        def recording_new_bridge(connection: agent_connection.AgentConnection, *args: Any) -> AgentTransport:
            self.while_closing.append(self.closing.is_set())
            return new_bridge(connection, *args)

        monkeypatch.setattr(agent_connection.AgentConnection, "_new_bridge", recording_new_bridge)


def test_unloading_with_prompts_queued_behind_a_stalled_turn_starts_no_agent_and_leaves_no_task(
        rig: Rig, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    # Unloading kills the agent, which ends the stalled turn: the queue must not send the next
    # prompt, whose agent start (cancelled mid-spawn) held the chat thread for DRAIN_SECONDS.
    chat, _, events = rig.chat([[{"stall": 30}], [{"chunks": ["never sent"]}]])
    starts = AgentStarts(monkeypatch)
    chat.send("stalls")
    chat.send("queued one")
    chat.send("queued two")
    pid = wait_for(lambda: chat.pid)
    wait_for(lambda: rig.turns_taken() == 1 and chat.state.agent_status == "busy")
    caplog.set_level(logging.WARNING, logger=chat_thread.__name__)
    starts.closing.set()
    chat.close()  # as the package's unload does: every chat, then the thread
    wait_for(lambda: events.ended)  # the kill ended the stalled turn before the thread stops
    rig.thread.stop_soon()
    assert wait_gone(threads.CHAT_LOOP)
    assert starts.while_closing == [False]
    assert not [r for r in caplog.records if "did not end" in r.getMessage()]  # the drain found no task left
    assert not alive(pid)
    assert len(rig.received("session/prompt")) == 1
    assert len(chat.queue) == 2  # left unsent


def test_a_chat_thread_that_stops_under_a_stalled_turn_sends_no_queued_prompt(
        rig: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    chat, _, events = rig.chat([[{"stall": 30}], [{"chunks": ["never sent"]}]])
    starts = AgentStarts(monkeypatch)
    chat.send("stalls")
    chat.send("queued")
    wait_for(lambda: rig.turns_taken() == 1 and chat.state.agent_status == "busy")
    starts.closing.set()
    rig.thread.stop_soon()  # the chat is not closed first
    assert wait_gone(threads.CHAT_LOOP)
    assert starts.while_closing == [False]
    assert len(rig.received("session/prompt")) == 1
    assert len(events.ended) == 1  # the queued prompt is left, not failed for want of an agent


def test_no_agent_starts_on_a_chat_thread_that_is_stopping(rig: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    starts = AgentStarts(monkeypatch)
    connection = agent_connection.AgentConnection(rig.thread, lambda: AgentCommand([sys.executable, "-c", ""], "."))
    rig.thread.closing = True  # as `stop` and `stop_soon` set it first
    with pytest.raises(AgentGone):
        connection.call("initialize", {}).result(WAIT)
    assert starts.while_closing == []


def test_a_closed_chat_starts_no_agent(rig: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    chat, _, events = rig.chat()
    starts = AgentStarts(monkeypatch)
    chat.start().result(WAIT)
    starts.closing.set()
    chat.close()
    chat.start().result(WAIT)
    assert starts.while_closing == [False]
    assert events.errors == ["the chat is closed"]


def test_cancel_without_an_answer_offers_a_restart(rig: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    from qwencompanion_src.core.chat import chat_core as chat_module

    monkeypatch.setattr(chat_module, "CANCEL_TIMEOUT", 0.2)
    chat, _, events = rig.chat([[{"request": "vendor/block", "params": {}}, {"stall": 30}]])
    # The fake agent only notices cancel between actions: a request to a
    # client that answers slowly keeps it deaf. Simulate a deaf agent by
    # swallowing the cancel notification.
    chat.send("go")
    wait_for(lambda: chat.state.agent_status == "busy")
    bridge = chat.connection.bridge
    assert bridge is not None

    async def deaf(session_id: str) -> None:
        return None

    bridge.cancel = deaf  # type: ignore[method-assign]
    chat.cancel()
    wait_for(lambda: events.cancel_timeouts == 1)
    chat.sessions.restart().result(WAIT)
    wait_for(lambda: len(rig.received("session/load")) == 1)


# --- pure parts ---------------------------------------------------------------


def test_transcript_upsert_replaces_a_block_in_the_middle() -> None:
    transcript, view = Transcript(), View()
    view([transcript.append("a", "first\n")])
    view([transcript.upsert("tool", "- running\n")])
    view([transcript.append("b", "last\n")])
    view([transcript.upsert("tool", "- done, 3 files\n")])
    assert view.text == transcript.text() == "first\n- done, 3 files\nlast\n"
    view([transcript.clear()])
    assert view.text == ""


def test_queued_edits_keep_only_a_blocks_newest_state_and_apply_like_all_of_them() -> None:
    """A block upserted again before the view applied the last edit costs the
    view one edit; appends, edits of other blocks in between, and a block
    written where the last edit's text starts, stay apart."""
    transcript, every_edit, queued = Transcript(), View(), View()
    pending: list[Edit] = []
    for block_id, text in [("a", "first\n"), ("plan", "- [ ] one\n"), ("plan", "- [~] one\n- [ ] two\n"),
                           ("plan", "- [x] one\n"), ("tool", "- running\n"), ("plan", "- [x] one\n- [x] two\n"),
                           ("tool", "- done\n"), ("tool", "- done, 3 files\n"),
                           ("gap", ""), ("after_gap", "- queued\n"), ("gap", "- note\n")]:
        edit = transcript.upsert(block_id, text)
        every_edit([edit])
        queue_edit(pending, edit)
    for text in ["more ", "text\n"]:
        edit = transcript.append("b", text)
        every_edit([edit])
        queue_edit(pending, edit)
    queued(pending)
    assert queued.text == every_edit.text == transcript.text()
    assert [edit.text for edit in pending] == [
        "first\n", "- [x] one\n", "- running\n", "- [x] one\n- [x] two\n", "- done, 3 files\n", "- queued\n", "- note\n", "more ",
        "text\n"]


def test_streamer_flushes_at_paragraph_ends_and_on_its_interval() -> None:
    transcript, view = Transcript(), View()
    streamer = BlockStreamer(transcript, view, interval=0.05)
    try:
        streamer.append("a", "one ")
        streamer.append("a", "two\n\n")
        wait_for(lambda: view.text == "one two\n\n")
        assert view.batches == 1
        streamer.append("a", "three")
        wait_for(lambda: view.text.endswith("three"))
    finally:
        streamer.close()


def test_slice_lines_and_redaction() -> None:
    assert slice_lines("a\nb\nc\n", 2, None) == "b\nc\n"
    assert slice_lines("a\nb\nc\n", None, 1) == "a\n"
    assert slice_lines("a\nb", None, None) == "a\nb"
    message = {"params": {"content": "secret file", "path": "/p", "prompt": [{"type": "text", "text": "hi"}], "env": {"K": "v"}}}
    assert redact(message) == {"params": {"content": "<11 chars>", "path": "/p", "prompt": [{"type": "text", "text": "<2 chars>"}], "env": "<hidden>"}}


def test_store_keeps_a_session_per_project(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    a, b = project_key(None, ["/x"]), project_key("/p/x.sublime-project", ["/x"])
    assert a and b and a != b
    assert project_key(None, []) is None
    store.put(a, "s1")
    store.put(b, "s2")
    assert SessionStore(tmp_path).get(a) == "s1" and store.get(b) == "s2"
    store.put(a, None)
    assert store.get(a) is None
    (tmp_path / "chat-sessions.json").write_text("{broken")
    assert store.get(b) is None
    store.put(b, "s3")
    assert store.get(b) == "s3"


def test_lines_that_are_not_json_are_logged_once(rig: Rig, caplog: pytest.LogCaptureFixture) -> None:
    chat, view, events = rig.chat([[{"raw": "{not json"}, {"raw": "[1, 2]"}, {"raw": "plain words"},
                                    {"chunks": ["still streaming"]}]])
    with caplog.at_level("WARNING"):
        chat.send("go")
        wait_for(lambda: events.ended)
    assert events.ended == ["end_turn"]
    wait_for(lambda: "still streaming" in view.text)
    skipped = [r for r in caplog.records if "not a JSON-RPC message" in r.getMessage()]
    assert len(skipped) == 1 and "{not json" in skipped[0].getMessage()
    assert not [r for r in caplog.records if r.name == "root"]


def test_modes_and_models_offered_as_config_options_are_set_that_way(rig: Rig) -> None:
    chat, _, _ = rig.chat(config_only=True)
    chat.start().result(WAIT)
    assert [m.id for m in chat.state.modes] == ["plan", "default", "yolo"] and chat.state.mode_id == "default"
    assert chat.state.model_id == "$runtime|openai|fake-model(openai)" and len(chat.state.models) == 2
    chat.option_setter.set_mode("yolo").result(WAIT)
    chat.option_setter.set_model("$runtime|openai|other-model(openai)").result(WAIT)
    sent = [m["params"] for m in rig.received("session/set_config_option")]
    assert [(p["configId"], p["value"]) for p in sent] == [("mode", "yolo"), ("model", "$runtime|openai|other-model(openai)")]
    assert not rig.received("session/set_mode") and not rig.received("session/set_model")
    assert chat.state.mode_id == "yolo" and chat.state.model_id == "$runtime|openai|other-model(openai)"


def test_transcript_offsets_stay_right_in_a_long_chat() -> None:
    transcript, view = Transcript(), View()
    for turn in range(300):
        view([transcript.append(f"t{turn}.user", f"## You\n\nq{turn}\n\n")])
        view([transcript.upsert(f"tool.{turn}", "- pending\n\n")])
        for piece in ("a", "b", "c"):
            view([transcript.append(f"t{turn}.agent", piece)])
        if turn % 7 == 0:  # a tool line far back changes
            view([transcript.upsert(f"tool.{turn // 2}", f"- done {turn}\n\n")])
    assert view.text == transcript.text()
    view([transcript.clear()])
    view([transcript.append("x", "fresh")])
    assert view.text == transcript.text() == "fresh"


def test_the_work_of_a_transcript_update_does_not_grow_with_the_number_of_blocks() -> None:
    """A tool call's line updated in place among n others: the lines of
    Python run per update stay (nearly) the same from 100 to 10,000 blocks."""
    import sys

    from qwencompanion_src.core.chat.transcript.transcript import Transcript

    def lines_run_by_an_update(blocks: int) -> int:
        transcript = Transcript()
        for number in range(blocks):
            transcript.upsert(f"tool.c{number}", "○ read `f.py` — pending\n\n")
        count = 0

        def trace(frame: object, event: str, arg: object) -> object:
            nonlocal count
            count += event == "line"
            return trace

        sys.settrace(trace)
        try:
            edit = transcript.upsert(f"tool.c{blocks // 2}", "✓ read `f.py` — completed\n\n")
        finally:
            sys.settrace(None)
        assert edit.offset == (blocks // 2) * len("○ read `f.py` — pending\n\n")
        return count

    assert lines_run_by_an_update(10_000) < 2 * lines_run_by_an_update(100)


def test_the_model_is_named_as_people_call_it_never_by_qwens_internal_id() -> None:
    from qwencompanion_src.core.chat.chat_state import ChatState, Choice, readable_model

    listed = ChatState(models=[Choice("$runtime|openai|fake-model(openai)", "fake-model")],
                       model_id="$runtime|openai|fake-model(openai)")
    assert listed.model_name() == "fake-model"
    unlisted = ChatState(models=[Choice("qwen3-coder-plus(openai)", "qwen3-coder-plus")],
                         model_id="$runtime|openai|glm-4.6(openai)")  # e.g. after /model, before a new list
    assert unlisted.model_name() == "glm-4.6"
    assert readable_model("qwen3-coder-plus(qwen-oauth)") == "qwen3-coder-plus"
    assert readable_model("$runtime|openai|org/model|v2") == "org/model|v2"
    assert readable_model("qwen-route:v1:abcdef") == "qwen-route:v1:abcdef"
    assert ChatState().model_name() is None


def test_clear_starts_the_new_session_with_no_context_fullness(rig: Rig) -> None:
    """Defect guarded: after /clear (a new session) the status bar kept the
    old session's context fullness: the chat did not start its usage anew."""
    usage = {"inputTokens": 7000, "outputTokens": 500, "totalTokens": 7500}
    chat, _, events = rig.chat([[{"update": {"sessionUpdate": "agent_message_chunk", "_meta": {"usage": usage},
                                             "content": {"type": "text", "text": "counted"}}}]])
    chat.send("hello")
    wait_for(lambda: events.ended)
    first = chat.state.session_id
    assert chat.state.usage.context_used == 7500
    chat.sessions.new_session().result(timeout=15)
    assert chat.state.session_id != first and chat.state.usage.context_used is None


def test_an_agent_over_stdio_cannot_show_a_prompt_as_steered(rig: Rig) -> None:
    """Steered prompts come from a bridge that steers (`qwen serve`); the same
    notification sent by an agent over stdio shows nothing of the user's."""
    chat, view, events = rig.chat([[
        {"notify": PROMPT_STEERED, "params": {"sessionId": "", "messageId": "m1", "text": "FAKED STEER", "late": False}},
        {"chunks": ["answered"]},
    ]])
    chat.send("hello")
    wait_for(lambda: events.ended)
    wait_for(lambda: "answered" in view.text)
    assert "FAKED STEER" not in view.text and "Steered" not in view.text and events.steers == []
