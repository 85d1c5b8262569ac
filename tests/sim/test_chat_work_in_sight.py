"""While the agent works, in the simulated editor with the BUILT package and
the scripted ACP agent: the pinned plan under the composer's text (updated
in place, collapsed once done, bounded for a hostile plan), Session Options
(every config option, set through session/set_config_option, bounded),
notices and compaction as one line each, and a shell command's streamed
output kept to its last lines (memory flat under endless output)."""

from __future__ import annotations

from typing import Any

from tests.sim.test_chat import WAIT, ChatRig

PLAN_KEY = "qwen_chat_pinned_plan"


def plan(*statuses: str, content: str = "step") -> dict[str, Any]:
    return {"update": {"sessionUpdate": "plan", "entries": [
        {"content": f"{content} {i + 1}", "priority": "medium", "status": status} for i, status in enumerate(statuses)]}}


def composer_plan(rig: ChatRig) -> list[str]:
    """The contents of the composer's pinned-plan phantoms."""
    composer = rig.chat().composer_view
    return [p.content for p in rig.host.view_state(composer).phantoms.values() if p.key == PLAN_KEY]


def pinned(rig: ChatRig) -> Any:
    return rig.chat().pinned_plan


def test_the_plan_is_pinned_under_the_composer_updated_in_place_and_collapses_when_done(rig: ChatRig) -> None:
    rig.load([[plan("in_progress", "pending", "pending"), {"stall": 0.3}],
              [plan("completed", "in_progress", "pending")], [plan("completed", "completed", "completed")]])
    rig.send("plan it")
    rig.host.wait_for(lambda: len(composer_plan(rig)) == 1 and "Plan 0/3" in composer_plan(rig)[0], timeout=WAIT)
    shown = composer_plan(rig)[0]
    assert "▶ ◐ step 1" in shown and "○ step 3" in shown
    assert rig.ended() == ["end_turn"]
    rig.send("go on")
    rig.ended(2)
    rig.host.wait_for(lambda: pinned(rig) is not None and pinned(rig).progress.done == 1, timeout=WAIT)
    assert len(composer_plan(rig)) == 1  # updated in place: one phantom
    assert "▶ ◐ step 2" in composer_plan(rig)[0]
    rig.send("finish")
    rig.ended(3)
    rig.host.wait_for(lambda: "all steps done" in "".join(composer_plan(rig)), timeout=WAIT)
    assert len(composer_plan(rig)) == 1 and "step 1" not in composer_plan(rig)[0]
    assert rig.host.window.views()[0].get_status("qwen_chat_plan") == "Plan 3/3"
    rig.chat().core.sessions.new_session().result(WAIT)  # another conversation: not its plan
    rig.host.wait_for(lambda: not composer_plan(rig) and pinned(rig) is None, timeout=WAIT)


def test_a_hostile_plan_is_bounded_in_the_composer_and_the_transcript(rig: ChatRig) -> None:
    entries = [{"content": ("giant " * 20_000) if i == 50_000 else f"s{i}", "priority": "low",
                "status": "completed" if i < 50_000 else "in_progress" if i == 50_000 else "pending"}
               for i in range(100_000)]
    rig.load([[{"update": {"sessionUpdate": "plan", "entries": entries}}]])
    rig.send("hostile")
    assert rig.ended() == ["end_turn"]
    rig.host.wait_for(lambda: pinned(rig) is not None, timeout=WAIT)
    shown = pinned(rig)
    assert (shown.progress.done, shown.progress.total) == (50_000, 100_000)
    assert len(shown.steps) == 7 and shown.above + shown.below + 7 == 100_000
    assert [s.current for s in shown.steps].count(True) == 1 and all(len(s.content) <= 200 for s in shown.steps)
    assert len(composer_plan(rig)[0]) < 5_000
    text = rig.transcript()
    assert "99800 more step(s) not shown" in text and len(text) < 100_000


def test_session_options_lists_every_option_and_sets_each_through_set_config_option(rig: ChatRig) -> None:
    rig.script_extras["more_options"] = [
        {"id": "reasoning_effort", "name": "Thinking", "category": "thought_level", "type": "select",
         "currentValue": "medium", "options": [
             {"group": "g", "name": "Levels", "options": [{"value": "low", "name": "Low"}, {"value": "medium", "name": "Medium"},
                                                          {"value": "high", "name": "High"}]}]},
        {"id": "web", "name": "Web search", "type": "boolean", "currentValue": False},
    ]
    rig.load()
    rig.open()
    rig.chat().core.start().result(WAIT)
    rig.host.user.run_command("qwen_chat_session_options")
    panel = rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)[0]
    assert [str(getattr(i, "trigger", i)) for i in panel.items] == ["Mode", "Model", "Thinking", "Web search"]
    rig.host.user.choose_quick_panel(2)
    values = rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)[0]
    assert [str(getattr(i, "trigger", i)) for i in values.items] == ["Low", "Medium", "High"]
    rig.host.user.choose_quick_panel(2)
    state = rig.chat().core.state
    rig.host.wait_for(lambda: state.options.get("reasoning_effort").current == "high", timeout=WAIT)
    rig.host.user.run_command("qwen_chat_session_options")
    rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)
    rig.host.user.choose_quick_panel(3)
    rig.host.wait_for(lambda: state.options.get("web").current is True, timeout=WAIT)
    sent = [m["params"] for m in rig.received("session/set_config_option")]
    assert [(p["configId"], p["value"], p.get("type")) for p in sent] == [
        ("reasoning_effort", "high", None), ("web", True, "boolean")]
    rig.host.wait_idle()
    status = rig.chat().composer_view.get_status("qwen_chat")
    assert "Thinking: High" in status and "Web search: on" in status
    # The agent offers modes both ways: ACP's config option is used, not session/set_mode.
    rig.chat().core.option_setter.set_mode("plan").result(WAIT)
    assert rig.received("session/set_config_option")[-1]["params"]["configId"] == "mode"
    assert not rig.received("session/set_mode")


def test_hostile_option_lists_are_bounded(rig: ChatRig) -> None:
    rig.script_extras["more_options"] = [
        {"id": f"o{i}", "name": "N" * (1_000_000 if i == 0 else 1_000), "type": "select", "currentValue": "v0",
         "options": [{"value": f"v{j}", "name": "x" * 1_000} for j in range(1_000 if i == 0 else 1)]}
        for i in range(2_000)]
    rig.load()
    rig.open()
    rig.chat().core.start().result(WAIT)
    options = rig.chat().core.state.options
    assert len(options.options) == 50 and options.left_out == 2_000 + 2 - 50
    first = options.get("o0")
    assert len(first.choices) == 500 and first.choices_left_out == 500 and len(first.name) == 100
    assert all(len(c.name) <= 100 for c in first.choices)
    rig.host.wait_idle()
    assert len(rig.chat().composer_view.get_status("qwen_chat")) < 400
    rig.host.user.run_command("qwen_chat_session_options")
    panel = rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)[0]
    assert len(panel.items) == 50


def test_notices_and_compaction_are_one_line_each_updated_in_place(rig: ChatRig) -> None:
    updates: list[dict[str, Any]] = [{"chunks": ["Working.\n\n"]}]
    for n in range(50):
        updates.append({"update": {"sessionUpdate": "notice", "severity": "warning", "title": f"MCP server slow {n}",
                                   "description": "d" * 5_000}})
    updates += [{"update": {"sessionUpdate": "compaction_update", "compactionId": f"c{n}", "status": "in_progress"}}
                for n in range(1_000)]
    updates += [{"update": {"sessionUpdate": "compaction_update", "compactionId": "c999", "status": "completed"}},
                {"chunks": ["Done."]}]
    rig.load([updates])
    rig.send("work")
    assert rig.ended() == ["end_turn"]
    text = rig.transcript()
    notices = [line for line in text.splitlines() if "MCP server slow" in line]
    assert len(notices) == 1 and notices[0].startswith("> ⚠ MCP server slow 49") and "(50 notices this turn)" in notices[0]
    assert len(notices[0]) < 500
    compaction = [line for line in text.splitlines() if "compact" in line]
    assert compaction == ["> ⟳ the conversation's context was compacted"]


def shell_call(status: str, **more: Any) -> dict[str, Any]:
    kind = "tool_call" if status == "pending" else "tool_call_update"
    return {"update": {"sessionUpdate": kind, "toolCallId": "sh", "title": "yes | head", "kind": "execute",
                       "status": status, **more}}


def test_shell_output_streams_into_its_tool_call_keeping_the_last_lines(rig: ChatRig) -> None:
    chunks = [{"update": {"sessionUpdate": "shell_output", "output": "".join(f"line {n * 10 + k}\n" for k in range(10))}}
              for n in range(100)]
    heartbeat = shell_call("in_progress", _meta={"shellProgress": {"type": "shell_progress", "elapsedMs": 12_000,
                                                                   "totalLines": 1000}})
    rig.load([[shell_call("pending"), shell_call("in_progress"), *chunks, heartbeat, {"stall": 0.3}, shell_call("completed")]])
    rig.send("run")
    rig.host.wait_for(lambda: "(running 12 s, 1000 lines)" in rig.chat().core.streamer.transcript.text(), timeout=WAIT)
    running = rig.chat().core.streamer.transcript.text()
    assert "    line 999\n" in running and "    line 800\n" in running and "line 799\n" not in running
    assert "… 800 earlier line(s) not shown" in running
    assert rig.ended() == ["end_turn"]
    text = rig.transcript()
    assert "— completed\n" in text and "(running" not in text and "    line 999\n" in text
    rig.host.user.run_command("qwen_chat_show_shell_output")
    rig.host.wait_idle()
    shown = rig.host.window.active_view()
    assert shown.name() == "Shell output: yes | head" and shown.is_read_only() and shown.is_scratch()
    assert rig.editor.text(shown) == "".join(f"line {n}\n" for n in range(1000))


def test_endless_shell_output_keeps_memory_flat_and_the_block_bounded(rig: ChatRig) -> None:
    rig.load([[shell_call("pending"), shell_call("in_progress"),
               *[{"update": {"sessionUpdate": "shell_output", "output": "x" * 100 + "\n" * (n % 3)}} for n in range(20_000)],
               shell_call("completed")]])
    rig.send("flood")
    assert rig.ended() == ["end_turn"]
    text = rig.transcript()
    block = text[text.index("yes | head"):]
    assert block.count("\n") < 210 and len(block) < 210 * 510
    renderer = rig.chat().renderer()
    tail = next(iter(renderer._shells.values()))
    assert len(tail.lines) == 2_000 and len(tail.open_line) <= 500 and tail.dropped > 10_000


def test_session_options_of_an_agent_without_config_options_are_its_modes_and_models(rig: ChatRig) -> None:
    rig.load()
    rig.open()
    rig.chat().core.start().result(WAIT)
    assert not rig.chat().core.state.options.options
    rig.host.user.run_command("qwen_chat_session_options")
    panel = rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)[0]
    assert [str(getattr(i, "trigger", i)) for i in panel.items] == ["Mode", "Model"]
    rig.host.user.choose_quick_panel(0)
    modes = rig.host.wait_for(lambda: [q for q in rig.host.quick_panels if not q.done], timeout=WAIT)[0]
    assert [str(getattr(i, "trigger", i)) for i in modes.items] == ["Plan", "Default", "YOLO"]
    rig.host.user.choose_quick_panel(2)
    rig.host.wait_for(lambda: rig.chat().core.state.mode_id == "yolo", timeout=WAIT)
    assert [m["params"]["modeId"] for m in rig.received("session/set_mode")] == ["yolo"]
    assert not rig.received("session/set_config_option")


def test_the_pinned_plan_stays_under_the_draft_as_the_user_types(rig: ChatRig) -> None:
    rig.load([[plan("in_progress", "pending")]])
    _, composer = rig.open()
    rig.send("plan it")
    assert rig.ended() == ["end_turn"]
    rig.host.wait_for(lambda: len(composer_plan(rig)) == 1, timeout=WAIT)
    assert "alpha(0.6)" in composer_plan(rig)[0]  # the other steps dimmed by minihtml's colour alpha
    rig.host.user.type(composer, "next, the tests")
    rig.host.wait_idle()
    state = rig.host.view_state(composer)
    phantom, = (p for p in state.phantoms.values() if p.key == PLAN_KEY)
    assert phantom.region == (composer.size(), composer.size()) and composer.size() > 0
