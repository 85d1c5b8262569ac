"""What the agent reports while it works, the pinned plan and the session's
config options, in core: bounded whatever the agent sends."""

from __future__ import annotations

import asyncio
import gc
import tracemalloc
from pathlib import Path
from typing import Any

from acp.schema import AgentPlanUpdate

from qwencompanion_src.core.chat.agent.session_options import MAX_CHOICES, MAX_OPTIONS, parse_options
from qwencompanion_src.core.chat.transcript import tool_calls
from qwencompanion_src.core.chat.transcript.tool_calls import AgentWorkRenderer, pinned_plan, render_plan
from qwencompanion_src.core.chat.transcript.work_reports import (
    SHELL_KEPT_LINES,
    SHELL_TAIL_LINES,
    ShellTail,
    UnlistedUpdate,
    compaction_line,
    notice_line,
)
from tests.unit.test_acp_lines import Lines, run
from tests.unit.test_tool_calls import Out, progress, start


def plan(*statuses: str, content: str = "step") -> AgentPlanUpdate:
    return AgentPlanUpdate.model_validate({"sessionUpdate": "plan", "entries": [
        {"content": f"{content} {i}", "priority": "low", "status": status} for i, status in enumerate(statuses)]})


def test_the_pinned_plan_shows_the_steps_around_the_current_one() -> None:
    pinned = pinned_plan(plan(*["completed"] * 10, "in_progress", *["pending"] * 10))
    assert [s.content for s in pinned.steps] == [f"step {i}" for i in range(7, 14)]
    assert [s.current for s in pinned.steps].index(True) == 3
    assert (pinned.above, pinned.below, pinned.progress.label()) == (7, 7, "Plan 10/21")
    lines = pinned.lines()
    assert lines[0] == "Plan 10/21" and lines[1] == "  … 7 step(s) above" and lines[-1] == "  … 7 more step(s)"
    assert "▶ ◐ step 10" in lines


def test_with_nothing_in_progress_the_first_pending_step_is_current_and_done_collapses() -> None:
    pinned = pinned_plan(plan("completed", "pending", "pending"))
    assert [s.current for s in pinned.steps] == [False, True, False]
    finished = pinned_plan(plan("completed", "completed"))
    assert finished.finished and finished.lines() == ["✓ Plan 2/2: all steps done"]
    assert not pinned_plan(plan()).finished


def test_a_hostile_plan_is_bounded_in_the_transcript_and_the_pin() -> None:
    update = AgentPlanUpdate.model_validate({"sessionUpdate": "plan", "entries": [
        {"content": "x" * 1_000_000 if i == 3 else f"s{i}", "priority": "low", "status": "pending"} for i in range(100_000)]})
    text, progress_seen = render_plan(update)
    assert progress_seen.total == 100_000 and text.count("\n") < 210 and len(text) < 210 * 210
    assert "99800 more step(s) not shown" in text
    pinned = pinned_plan(update)
    assert len(pinned.steps) == 7 and max(len(s.content) for s in pinned.steps) <= 200


def test_notices_are_one_line_counting_the_turns_notices() -> None:
    assert notice_line({"severity": "error", "title": "MCP down", "description": "retrying"}, 0) == "> ✗ MCP down — retrying\n\n"
    line = notice_line({"severity": "bogus", "title": "a\nb" * 10_000}, 4)
    assert line.startswith("> • a b") and line.endswith("(5 notices this turn)\n\n") and line.count("\n") == 2
    assert len(line) < 400
    assert notice_line({}, 0) == "> • (a notice without words)\n\n"


def test_compaction_says_where_it_is() -> None:
    assert compaction_line({"status": "in_progress"}) == "> ⟳ compacting the conversation's context…\n\n"
    assert compaction_line({"status": "failed", "error": "too big"}) == "> ⟳ compacting the context failed: too big\n\n"


def test_the_renderer_keeps_one_notice_line_per_turn_and_one_per_compaction() -> None:
    out, renderer = Out(), AgentWorkRenderer()
    for n in range(3):
        renderer.render(out, "s", UnlistedUpdate("notice", {"severity": "info", "title": f"n{n}"}))
    renderer.render(out, "s", UnlistedUpdate("compaction_update", {"compactionId": "c", "status": "in_progress"}))
    renderer.render(out, "s", UnlistedUpdate("compaction_update", {"compactionId": "c", "status": "completed"}))
    out.turn = 2
    renderer.render(out, "s", UnlistedUpdate("notice", {"title": "later"}))
    assert out.transcript.text() == ("> • n2 (3 notices this turn)\n\n> ⟳ the conversation's context was compacted\n\n"
                                     "> • later\n\n")


def test_a_shell_tail_shows_the_last_lines_keeps_more_and_counts_the_rest() -> None:
    tail = ShellTail()
    tail.add("a\nb")
    tail.add("c\n")
    assert list(tail.lines) == ["a", "bc"] and tail.open_line == "" and tail.dropped == 0
    assert tail.render() == "    a\n    bc\n"
    tail.add("".join(f"{n}\n" for n in range(5_000)) + "open")
    assert len(tail.lines) == SHELL_KEPT_LINES and tail.lines[-1] == "4999" and tail.open_line == "open"
    assert tail.dropped == 5_002 - SHELL_KEPT_LINES
    rendered = tail.render()
    assert rendered.startswith("    … 4802 earlier line(s) not shown (the last 200; Qwen Code: Show Shell Output has")
    assert rendered.endswith("    4999\n    open\n") and rendered.count("\n") == SHELL_TAIL_LINES + 2
    full = tail.full_text()
    assert full.startswith("[3002 earlier line(s) not kept]\n3000\n") and full.endswith("4999\nopen\n")
    tail.add("x" * 100_000 + "\n")
    assert tail.lines[-1] == "open" + "x" * 496


def test_endless_shell_output_keeps_memory_flat() -> None:
    out, renderer = Out(), AgentWorkRenderer()
    renderer.render(out, "s", start(toolCallId="sh", title="yes", kind="execute", status="in_progress"))

    def flood(count: int) -> None:
        for n in range(count):
            renderer.render(out, "s", UnlistedUpdate("shell_output", {"output": f"{n} " + "y" * 200 + "\n" + "z" * (n % 700)}))

    # Only what the package's code allocated: another test's threads left in this
    # process (a worker runs many) allocate while this one is traced.
    package = tracemalloc.Filter(True, str(Path(tool_calls.__file__).parents[2] / "*"))

    def held() -> int:
        gc.collect()  # what is kept, not garbage a later collection frees (it made the figure vary by 10%)
        return sum(stat.size for stat in tracemalloc.take_snapshot().filter_traces([package]).statistics("filename"))

    async def measured() -> tuple[int, int]:
        tracemalloc.start()
        flood(4_000)  # the kept lines are full, and all of them allocated while traced
        first = held()
        flood(10_000)
        second = held()
        tracemalloc.stop()
        await asyncio.sleep(0.2)  # the block's last rewrite
        return first, second

    first, second = asyncio.run(measured())
    # Over twice the output, the same memory: the kept lines, give or take one
    # rendered copy of the block (up to ~200 KB), pending or not by the throttle's clock.
    assert second - first < 400_000
    text = out.transcript.text()
    assert text.count("\n") < SHELL_TAIL_LINES + 10 and "… 13800 earlier line(s) not shown" in text
    assert out.edits < 200  # rewritten a few times, not once per chunk


def test_shell_output_goes_to_the_call_it_names_else_the_running_command() -> None:
    out, renderer = Out(), AgentWorkRenderer()
    renderer.render(out, "s", start(toolCallId="a", title="one", kind="execute", status="in_progress"))
    renderer.render(out, "s", start(toolCallId="b", title="two", kind="execute", status="in_progress"))
    renderer.render(out, "s", UnlistedUpdate("shell_output", {"output": "to a\n", "toolCallId": "a"}))
    renderer.render(out, "s", UnlistedUpdate("shell_output", {"output": "to b\n", "_meta": {"toolCallId": "nope"}}))
    text = out.transcript.text()
    assert text.index("one") < text.index("to a") < text.index("two") < text.index("to b")
    renderer.render(out, "s", progress(toolCallId="b", status="completed"))
    renderer.render(out, "s", progress(toolCallId="a", status="completed"))
    renderer.render(out, "s", UnlistedUpdate("shell_output", {"output": "orphan\n"}))
    assert out.transcript.text().endswith("Shell output:\n    orphan\n\n")
    assert renderer.shell_outputs() == [("Shell output", "orphan\n"), ("two", "to b\n"), ("one", "to a\n")]


def test_qwens_shell_heartbeat_shows_on_the_line_while_it_runs() -> None:
    out, renderer = Out(), AgentWorkRenderer()
    renderer.render(out, "s", start(toolCallId="sh", title="build", kind="execute", status="pending"))
    renderer.render(out, "s", progress(toolCallId="sh", status="in_progress", _meta={
        "toolName": "run_shell_command", "shellProgress": {"type": "shell_progress", "elapsedMs": 12_345, "totalLines": 7}}))
    assert "— in_progress (running 12 s, 7 lines)\n" in out.transcript.text()
    renderer.render(out, "s", progress(toolCallId="sh", status="completed"))
    assert "— completed\n" in out.transcript.text() and "running" not in out.transcript.text()


class Heard:
    def __init__(self) -> None:
        self.updates: list[Any] = []

    def session_update(self, notification: Any) -> None:
        self.updates.append((notification.session_id, notification.update))

    def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        raise AssertionError(method)


def test_updates_newer_than_the_sdk_are_passed_on_not_dropped() -> None:
    async def scenario() -> tuple[Lines, Heard]:
        lines, heard = Lines(), Heard()
        lines.lines._notifications = heard
        for kind in ("notice", "compaction_update", "shell_output"):
            lines.agent_sends({"jsonrpc": "2.0", "method": "session/update",
                               "params": {"sessionId": "s", "update": {"sessionUpdate": kind, "title": "t"}}})
        lines.agent_sends({"jsonrpc": "2.0", "method": "session/update",
                           "params": {"sessionId": 5, "update": {"sessionUpdate": "notice"}}})
        lines.reader.feed_eof()
        assert await lines.lines.receive() is None
        return lines, heard

    lines, heard = run(scenario())
    assert [(s, u.kind, u.fields["title"]) for s, u in heard.updates] == [
        ("s", "notice", "t"), ("s", "compaction_update", "t"), ("s", "shell_output", "t")]
    assert lines.warnings == ["update:notice"]  # no session id: malformed


def test_config_options_of_every_kind_are_read_grouped_values_flattened() -> None:
    options = parse_options([
        {"id": "mode", "name": "Mode", "category": "mode", "type": "select", "currentValue": "plan",
         "options": [{"value": "plan", "name": "Plan"}, {"value": "yolo", "name": "YOLO"}]},
        {"id": "reasoning_effort", "name": "Thinking", "category": "thought_level", "type": "select", "currentValue": "high",
         "options": [{"group": "a", "name": "A", "options": [{"value": "low", "name": "Low"}]},
                     {"group": "b", "name": "B", "options": [{"value": "high", "name": "High"}]}]},
        {"id": "web", "name": "Web", "type": "boolean", "currentValue": True},
        {"id": "odd", "type": "slider"}, "junk",
    ])
    assert options is not None
    assert [(o.id, o.kind) for o in options] == [("mode", "select"), ("reasoning_effort", "select"), ("web", "boolean")]
    thinking = options.get("reasoning_effort")
    assert [c.id for c in thinking.choices] == ["low", "high"] and thinking.current_name() == "High"
    web = options.get("web")
    assert web.current_name() == "on" and web.value_of("off") is False and web.value_of("maybe") is None
    assert options.status_text() == "Thinking: High · Web: on"
    assert parse_options(None) is None and parse_options({"a": 1}) is None


def test_hostile_config_options_are_bounded() -> None:
    giant, long = "N" * 1_000_000, "x" * 100_000
    options = parse_options([
        {"id": f"o{i}", "name": giant, "type": "select", "currentValue": "v",
         "options": [{"group": "g", "name": "G", "options": [{"value": f"v{j}", "name": long} for j in range(5_000)]}]
         if i == 0 else []}
        for i in range(10_000)])
    assert options is not None and len(options.options) == MAX_OPTIONS and options.left_out == 10_000 - MAX_OPTIONS
    first = options.options[0]
    assert len(first.name) == 100 and len(first.choices) == MAX_CHOICES and first.choices_left_out == 5_000 - MAX_CHOICES
    assert max(len(c.name) for c in first.choices) == 100
    assert len(options.status_text()) <= 200
