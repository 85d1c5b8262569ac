"""Tool calls, plans and thoughts as transcript blocks updated in place."""

from __future__ import annotations

import gc
import time
import types
from typing import Any

from acp.schema import AgentPlanUpdate, AgentThoughtChunk, ToolCallProgress, ToolCallStart

from qwencompanion_src.core.chat.transcript.tool_calls import AgentWorkRenderer
from qwencompanion_src.core.chat.transcript.transcript import Transcript


class Out:
    def __init__(self) -> None:
        self.turn = 1
        self.transcript = Transcript()
        self.edits = 0

    def append(self, block_id: str, text: str) -> None:
        self.edits += 1
        self.transcript.append(block_id, text)

    def upsert(self, block_id: str, text: str) -> None:
        self.edits += 1
        self.transcript.upsert(block_id, text)


def start(**fields: Any) -> ToolCallStart:
    return ToolCallStart.model_validate({"sessionUpdate": "tool_call", **fields})


def progress(**fields: Any) -> ToolCallProgress:
    return ToolCallProgress.model_validate({"sessionUpdate": "tool_call_update", **fields})


def test_a_tool_call_is_one_line_updated_in_place() -> None:
    out, seen = Out(), []
    renderer = AgentWorkRenderer(on_tool_call=lambda line: seen.append(line.status))
    out.transcript.append("t1.agent1", "Before.\n\n")
    renderer.render(out, "s", start(toolCallId="c1", title="Read a.py", kind="read", status="pending",
                                   locations=[{"path": "/w/a.py", "line": 3}]))
    renderer.render(out, "s", progress(toolCallId="c1", status="in_progress"))
    out.transcript.append("t1.agent2", "After.\n\n")
    renderer.render(out, "s", progress(toolCallId="c1", status="completed",
                                       content=[{"type": "content", "content": {"type": "text", "text": "3 lines\nok"}}]))
    text = out.transcript.text()
    assert text == "Before.\n\n✓ read `Read a.py` /w/a.py:3 — completed\n    3 lines\n    ok\n\nAfter.\n\n"
    assert seen == ["pending", "in_progress", "completed"]


def test_a_failed_call_and_a_diff_summary() -> None:
    out = Out()
    renderer = AgentWorkRenderer()
    renderer.render(out, "s", start(toolCallId="e", title="Edit b.py", kind="edit", status="pending",
                                   content=[{"type": "diff", "path": "/w/b.py", "oldText": "a\n", "newText": "a\nb\n"}]))
    renderer.render(out, "s", progress(toolCallId="e", status="failed"))
    assert out.transcript.text() == "✗ edit `Edit b.py` — failed\n    /w/b.py: 2 line(s) proposed, 1 before\n\n"


def test_the_plan_is_one_checklist_with_its_progress() -> None:
    out, progress_seen = Out(), []
    renderer = AgentWorkRenderer(on_plan=lambda p: progress_seen.append(p.progress.label()))
    entries = [{"content": "one", "priority": "high", "status": "completed"},
               {"content": "two", "priority": "low", "status": "in_progress"},
               {"content": "three", "priority": "low", "status": "pending"}]
    renderer.render(out, "s", AgentPlanUpdate.model_validate({"sessionUpdate": "plan", "entries": entries}))
    entries[1]["status"] = "completed"
    renderer.render(out, "s", AgentPlanUpdate.model_validate({"sessionUpdate": "plan", "entries": entries}))
    assert out.transcript.text() == "**Plan 2/3**\n- [x] one\n- [x] two\n- [ ] three\n\n"
    assert progress_seen == ["Plan 1/3", "Plan 2/3"]


def test_thoughts_stream_into_one_thinking_block_that_stays_closed() -> None:
    out = Out()
    renderer = AgentWorkRenderer()
    for piece in ["Let me ", "think.\nMore."]:
        renderer.render(out, "s", AgentThoughtChunk.model_validate(
            {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": piece}}))
    out.transcript.append("t1.agent1", "Answer.")
    assert out.transcript.text() == "▸ Thinking\n> Let me think.\n> More.\n\nAnswer."


def test_500_updates_in_a_turn_touch_only_their_own_blocks() -> None:
    out = Out()
    renderer = AgentWorkRenderer()
    began = time.perf_counter()
    for i in range(100):
        renderer.render(out, "s", start(toolCallId=f"c{i}", title=f"call {i}", kind="execute", status="pending"))
        for status in ("in_progress", "in_progress", "in_progress", "completed"):
            renderer.render(out, "s", progress(toolCallId=f"c{i}", status=status))
    assert out.edits == 500
    assert out.transcript.text().count("— completed") == 100
    assert time.perf_counter() - began < 10  # a sanity bound, not a timing test: the work is linear


def test_the_chat_views_open_a_tool_calls_file_at_its_line_on_double_click() -> None:
    import json
    import re
    from pathlib import Path

    settings = Path(__file__).resolve().parents[2] / "QwenCompanion.sublime-package-src" / "syntaxes" / "QwenChat.sublime-settings"
    text = re.sub(r"^\s*//.*$", "", settings.read_text(encoding="utf-8"), flags=re.MULTILINE).replace(",\n}", "\n}")
    pattern = re.compile(json.loads(text)["result_file_regex"])
    out = Out()
    renderer = AgentWorkRenderer()
    renderer.render(out, "s", start(toolCallId="a", title="Read a.py", kind="read", status="completed",
                                   locations=[{"path": "/w/src/a.py", "line": 12}]))
    renderer.render(out, "s", start(toolCallId="b", title="Edit b.py", kind="edit", status="pending",
                                   locations=[{"path": "/w/b.py"}]))
    renderer.render(out, "s", start(toolCallId="c", title="ls", kind="execute", status="pending"))
    found = [m.groups() for line in out.transcript.text().splitlines() if (m := pattern.match(line))]
    assert found == [("/w/src/a.py", "12"), ("/w/b.py", None)]


def tracked_reachable(*roots: object) -> int:
    """How many gc-tracked objects the roots hold (classes, modules and functions
    left out: shared code, not per-call state)."""
    seen: set[int] = set()
    todo = list(roots)
    while todo:
        obj = todo.pop()
        if id(obj) in seen or not gc.is_tracked(obj) or isinstance(obj, type | types.ModuleType | types.FunctionType):
            continue
        seen.add(id(obj))
        todo.extend(gc.get_referents(obj))
    return len(seen)


def test_finished_tool_calls_leave_no_objects_for_the_garbage_collector() -> None:
    # A full collection walks every tracked object of the plugin host, which all
    # packages share: per-call containers (a dict, a list of locations, a list of
    # pieces per block) make 100,000 calls a pause of 100+ ms on the main thread.
    out, renderer = Out(), AgentWorkRenderer()

    def finish(calls: range) -> int:
        for number in calls:
            renderer.render(out, "s", start(toolCallId=f"c{number}", title=f"Read {number}", kind="read",
                                           status="pending", locations=[{"path": f"/w/{number}.py", "line": 1}]))
            renderer.render(out, "s", progress(toolCallId=f"c{number}", status="completed", content=[
                {"type": "content", "content": {"type": "text", "text": "ok"}}]))
        gc.collect()
        gc.collect()  # tuples of tuples are untracked from the inside out, one level a collection
        return tracked_reachable(renderer, out)

    few = finish(range(100))
    many = finish(range(100, 2100))
    assert many - few <= 8, f"{many - few} more tracked objects for 2,000 more finished calls"
    assert renderer.call("c7") is not None and renderer.call("c7").status == "completed"  # type: ignore[union-attr]
