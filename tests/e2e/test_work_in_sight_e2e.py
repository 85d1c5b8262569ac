"""While the real `qwen --acp` (0.24.4) works, with the fake model: the plan
from its todo tool pinned under the composer (updated in place, collapsed
once done), its session options (what it offers, set through
session/set_config_option), and a quiet shell command's heartbeat on its
tool call's line.

What 0.24.4 sends, as probed: configOptions `mode` (plan, default,
auto-edit, auto, yolo) and `model` (a `reasoning_effort` select only for
models with reasoning settings, not the fake model's runtime one); it answers
session/set_config_option with every option as it now is. A shell command's
output is not streamed over ACP: the tool call goes from pending to completed
with the whole output, and a command quiet for `tools.shell.heartbeatIntervalMs`
(10 s by default) gets tool_call_update heartbeats with `_meta.shellProgress`
(elapsedMs, lastOutputAgeMs). Its `shell_output` update exists only in its
daemon (`qwen serve`), for the user's own shell commands."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_chat_e2e import WAIT, RealChat
from tests.rig.fake_model import Reply, tool_call

pytestmark = pytest.mark.e2e
PLAN_KEY = "qwen_chat_pinned_plan"


def qwen_settings(env: dict[str, str], **tools: Any) -> None:
    settings = Path(env["HOME"]) / ".qwen" / "settings.json"
    current = json.loads(settings.read_text())
    current.setdefault("tools", {}).update(tools)
    settings.write_text(json.dumps(current))


def composer_plan(chat: RealChat) -> list[str]:
    composer = chat.chat().composer_view
    return [p.content for p in chat.host.view_state(composer).phantoms.values() if p.key == PLAN_KEY]


def test_the_todo_plan_is_pinned_under_the_composer_and_collapses_when_done(
        real_chat: RealChat, real_env: dict[str, str]) -> None:
    qwen_settings(real_env, todoWrite={"enabled": True})  # 0.24.4: off by default
    todos = [{"id": "1", "content": "Write the parser", "status": "in_progress"},
             {"id": "2", "content": "Test the parser", "status": "pending"}]
    going = [dict(todos[0], status="completed"), dict(todos[1], status="in_progress")]
    done = [dict(todos[0], status="completed"), dict(todos[1], status="completed")]
    real_chat.model.queue(tool_call("todo_write", {"todos": todos}), tool_call("todo_write", {"todos": going}),
                          Reply(text="Halfway."), tool_call("todo_write", {"todos": done}), Reply(text="Done."))
    real_chat.send("Plan the work")
    assert real_chat.ended() == ["end_turn"]
    chat = real_chat.chat()
    real_chat.host.wait_for(lambda: chat.pinned_plan is not None and chat.pinned_plan.progress.done == 1, timeout=WAIT)
    steps = chat.pinned_plan.steps
    assert [(s.content, s.status, s.current) for s in steps] == [
        ("Write the parser", "completed", False), ("Test the parser", "in_progress", True)]
    shown = composer_plan(real_chat)
    assert len(shown) == 1 and "Plan 1/2" in shown[0] and "▶ ◐ Test the parser" in shown[0]
    real_chat.send("Finish")
    assert real_chat.ended(2) == ["end_turn", "end_turn"]
    real_chat.host.wait_for(lambda: "all steps done" in "".join(composer_plan(real_chat)), timeout=WAIT)
    assert len(composer_plan(real_chat)) == 1 and "Test the parser" not in composer_plan(real_chat)[0]


def test_session_options_are_the_ones_qwen_offers_and_are_set_through_set_config_option(real_chat: RealChat) -> None:
    real_chat.host.user.run_command("qwen_chat")
    real_chat.host.wait_idle()
    conversation = real_chat.chat().core
    conversation.start().result(WAIT)
    options = conversation.state.options
    assert [(o.id, o.kind, o.category) for o in options][:2] == [("mode", "select", "mode"), ("model", "select", "model")]
    assert [c.id for c in options.get("mode").choices] == ["plan", "default", "auto-edit", "auto", "yolo"]
    real_chat.host.user.run_command("qwen_chat_session_options")
    panel = real_chat.host.wait_for(lambda: [q for q in real_chat.host.quick_panels if not q.done], timeout=WAIT)[0]
    assert [str(getattr(i, "trigger", i)) for i in panel.items][:2] == ["Mode", "Model"]
    real_chat.host.user.choose_quick_panel(0)
    values = real_chat.host.wait_for(lambda: [q for q in real_chat.host.quick_panels if not q.done], timeout=WAIT)[0]
    real_chat.host.user.choose_quick_panel([str(getattr(i, "trigger", i)) for i in values.items].index(
        options.get("mode").choices[2].name))
    # qwen's answer to session/set_config_option (every option as it now is) says so
    real_chat.host.wait_for(lambda: conversation.state.options.get("mode").current == "auto-edit", timeout=WAIT)
    assert conversation.state.mode_id == "auto-edit"
    # Chat Mode… and Shift+Tab go the same way on qwen, which offers modes both ways: its answer holds the options.
    conversation.option_setter.set_mode("plan").result(WAIT)
    assert conversation.state.options.get("mode").current == "plan"


def test_a_quiet_shell_command_shows_qwens_heartbeat_on_its_line(real_chat: RealChat, real_env: dict[str, str]) -> None:
    qwen_settings(real_env, shell={"heartbeatIntervalMs": 500})
    real_chat.model.queue(tool_call("run_shell_command", {"command": f"{sys.executable} -c \"import time; time.sleep(3); print('finished')\"",
                                                              "description": "wait"}),
                          Reply(text="Ran it."))
    real_chat.send("Run it")
    prompt = real_chat.host.wait_for(lambda: real_chat.chat().request_handler().pending.oldest(), timeout=WAIT)
    real_chat.chat().request_handler().choose(prompt.key, next(o.option_id for o in prompt.options if o.kind == "allow_once"))
    streamer = real_chat.chat().core.streamer
    real_chat.host.wait_for(lambda: "— in_progress (running " in streamer.transcript.text(), timeout=WAIT)
    assert real_chat.ended() == ["end_turn"]
    text = real_chat.transcript()
    assert "— completed\n" in text and "(running" not in text and "finished" in text
