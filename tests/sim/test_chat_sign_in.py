"""Sign In and Sign Out with the scripted agent posing as qwen 0.24.4 (its
terminal auth method, `_meta: {type: "terminal", args: ["--auth-type=openai"]}`,
and its "Authentication required" answer): Sign In runs qwen with those args
in Terminus, `$` in the command kept as written, and the chat goes on by
itself once the terminal's process ends; Sign Out asks first and is sent
only where the agent announces `logout`."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sim.test_chat import FAKE_AGENT, WAIT, ChatRig
from tests.support.editor import PACKAGE, open_editor
from tests.support.terminus import install_terminus, terminus_records


@pytest.fixture
def rig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatRig]:
    with open_editor(tmp_path, monkeypatch, load=False) as editor:
        yield ChatRig(editor, tmp_path)


def script_file(rig: ChatRig) -> Path:
    folder = rig.tmp / "agent $HOME"  # a `$` Terminus would expand, were it not escaped
    folder.mkdir(exist_ok=True)
    return folder / "script.json"


def write_script(rig: ChatRig, **script: Any) -> None:
    script_file(rig).write_text(json.dumps({"log": str(rig.log), "agent_name": "qwen-code", **script}))


def start(rig: ChatRig, **script: Any) -> Any:
    write_script(rig, **script)
    rig.editor.load([rig.editor.workspace], {"qwen_command": [sys.executable, str(FAKE_AGENT), str(script_file(rig))]})
    rig.watch()
    rig.send("hello")
    assert rig.ended() == ["error" if script.get("auth_fails") else "end_turn"]
    return rig.chat()


def logged(rig: ChatRig) -> list[str]:
    return [json.loads(line).get("method", "") for line in rig.log.read_text().splitlines()]


def test_sign_in_runs_qwens_terminal_method_and_the_chat_goes_on(rig: ChatRig) -> None:
    record = rig.tmp / "terminus.jsonl"
    install_terminus(rig.host, record)
    chat = start(rig, auth_required=True, auth_fails=True)
    assert chat.state.stopped_why == "not signed in"
    assert "Qwen Code: Sign In" in rig.transcript()

    rig.host.user.run_command("qwen_chat_sign_in")
    [opened] = rig.host.wait_for(lambda: terminus_records(record) or None, timeout=WAIT)
    assert opened["run"]["cmd"][:3] == [sys.executable, str(FAKE_AGENT), str(script_file(rig))]  # `$` as written
    assert opened["run"]["cmd"][-1] == "--auth-type=openai"
    rig.host.wait_for(lambda: "Sign in (Use OpenAI API key)" in rig.transcript(), timeout=WAIT)

    write_script(rig)  # signed in, in the terminal
    terminals = sys.modules[f"{PACKAGE}.plugin.companion.terminal"]
    terminal, _ = rig.host.wait_for(
        lambda: rig.host.run_on_main(lambda: terminals.live_terminal(rig.host.window, opened["tag"])), timeout=WAIT)
    assert chat.state.agent_status == "stopped"  # nothing before the terminal's process ends
    rig.host.run_on_main(lambda: terminal.settings().set("terminus_view.finished", True))  # as Terminus marks it
    rig.host.wait_for(lambda: chat.state.agent_status == "ready" and chat.state.session_id,
                      timeout=WAIT)
    text = rig.transcript()
    assert "starting the agent again" in text
    companion = sys.modules[f"{PACKAGE}.plugin.companion.companions"].companions.get(rig.host.window)
    shown = text + json.dumps(rig.host.status_messages)
    assert companion.token not in shown  # the terminal's token stays in its environment


def test_without_terminus_the_sign_in_command_is_offered_to_copy(rig: ChatRig) -> None:
    start(rig, auth_required=True, auth_fails=True)
    rig.host.answers.push("ok_cancel", True)
    rig.host.user.run_command("qwen_chat_sign_in")
    copied = rig.host.wait_for(lambda: "--auth-type=openai" in rig.host.sublime.get_clipboard()
                               and rig.host.sublime.get_clipboard(), timeout=WAIT)
    companion = sys.modules[f"{PACKAGE}.plugin.companion.companions"].companions.get(rig.host.window)
    assert companion.token not in copied + rig.transcript()  # a clipboard is read by other programs


@pytest.mark.parametrize("args", [["--auth-type=$(touch pwned)"], ["; rm -rf ~"], ["-x"], "--auth-type=openai",
                                  ["--a"] * 9])
def test_args_no_option_of_qwens_are_never_run(rig: ChatRig, args: Any) -> None:
    record = rig.tmp / "terminus.jsonl"
    install_terminus(rig.host, record)
    start(rig, auth_methods=[{"id": "openai", "name": "key", "_meta": {"type": "terminal", "args": args}}])
    rig.host.user.run_command("qwen_chat_sign_in")
    rig.host.wait_for(lambda: any("no sign-in to run" in m for m in rig.host.status_messages), timeout=WAIT)
    assert terminus_records(record) == []


def test_sign_out_asks_first_and_only_where_logout_is_announced(rig: ChatRig) -> None:
    start(rig)
    rig.host.user.run_command("qwen_chat_sign_out")
    rig.host.wait_for(lambda: any("Sign Out is not offered by this agent" in m for m in rig.host.status_messages))
    assert "logout" not in logged(rig) and not rig.host.dialogs


def test_sign_out_is_sent_on_the_users_yes(rig: ChatRig) -> None:
    chat = start(rig, capabilities={"loadSession": True, "auth": {"logout": {}}})
    rig.host.answers.push("ok_cancel", False)
    rig.host.user.run_command("qwen_chat_sign_out")
    assert [d.kind for d in rig.host.dialogs] == ["ok_cancel"] and "logout" not in logged(rig)
    rig.host.answers.push("ok_cancel", True)
    rig.host.user.run_command("qwen_chat_sign_out")
    rig.host.wait_for(lambda: "logout" in logged(rig), timeout=WAIT)
    rig.host.wait_for(lambda: "Signed out." in rig.transcript(), timeout=WAIT)
    assert chat.state.session_id
