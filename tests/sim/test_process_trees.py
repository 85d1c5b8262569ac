"""No process the package started outlives the end it was given: the chat's
agent and a quick action's CLI each start a grandchild that ignores end of
input and SIGHUP (tests/rig/grandchild.py), as a relaunched node or a tool's
child may, and every way the package ends them must end it too (killing only
the group's leader leaves it running). The BUILT package in the simulated
editor, with the scripted ACP agent and the scripted stream-json CLI."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sim.test_actions import ActionRig, running_pid
from tests.sim.test_chat import WAIT, ChatRig
from tests.support.editor import PACKAGE, open_editor
from tests.support.processes import Grandchildren, alive


@pytest.fixture
def chat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, grandchildren: Grandchildren) -> Iterator[ChatRig]:
    with open_editor(tmp_path, monkeypatch, load=False) as editor:
        rig = ChatRig(editor, tmp_path)
        rig.script_extras["grandchild"] = str(grandchildren.pid_file)
        yield rig


@pytest.fixture
def actions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, grandchildren: Grandchildren) -> Iterator[ActionRig]:
    with open_editor(tmp_path, monkeypatch, load=False) as editor:
        rig = ActionRig(editor, tmp_path)
        rig.script_extras["grandchild"] = str(grandchildren.pid_file)
        yield rig


def agent_at_work(chat: ChatRig, grandchildren: Grandchildren, *then: dict[str, object]) -> tuple[int, int]:
    """The agent's pid and its grandchild's, the agent in its turn, going on with `then`."""
    chat.load([[{"chunks": ["working"]}, *then]])
    chat.send("go")
    chat.host.wait_for(lambda: "working" in chat.chat().core.streamer.transcript.text(), timeout=WAIT)
    pid: int = chat.host.wait_for(lambda: chat.chat().core.pid, timeout=WAIT)
    return pid, grandchildren.pids()[0]


@pytest.mark.parametrize("how", ["close_window", "unload", "quit"])
def test_ending_the_chat_ends_the_agents_whole_group(chat: ChatRig, grandchildren: Grandchildren, how: str) -> None:
    pid, grandchild = agent_at_work(chat, grandchildren, {"stall": 30})
    if how == "close_window":
        chat.host.user.close_window(chat.host.window)
    elif how == "unload":
        chat.host.unload_package(PACKAGE)
    else:
        chat.host.quit()
    chat.host.wait_for(lambda: not alive(pid), timeout=WAIT)
    assert grandchildren.wait_gone(WAIT) == [], f"the agent's grandchild {grandchild} outlived the {how}"


def test_cancelling_a_deaf_agent_restarts_it_without_its_grandchild(chat: ChatRig, grandchildren: Grandchildren) -> None:
    pid, grandchild = agent_at_work(chat, grandchildren, {"deaf": 60})
    chat.host.answers.push("ok_cancel", True)  # "Restart Agent" when it does not stop
    chat.host.user.press_key("escape")
    # The package offers the restart once the agent has not stopped for a few
    # seconds of its own: wait for that question, then for the restart.
    chat.host.wait_for(lambda: [d for d in chat.host.dialogs if d.kind == "ok_cancel"], timeout=WAIT)
    chat.host.wait_for(lambda: not alive(pid), timeout=WAIT)
    assert chat.ended() == ["cancelled"]
    replacement = grandchildren.pids(2)[1]  # the restarted agent's own
    assert grandchildren.wait_gone(WAIT, among=[grandchild]) == [], f"the agent's grandchild {grandchild} outlived the restart"
    assert grandchildren.running() == [replacement]


def test_an_agent_that_exits_by_itself_leaves_no_grandchild(chat: ChatRig, grandchildren: Grandchildren) -> None:
    pid, _ = agent_at_work(chat, grandchildren, {"stall": 1.0}, {"crash": 3})
    chat.host.wait_for(lambda: not alive(pid), timeout=WAIT)
    assert grandchildren.wait_gone(WAIT) == []


@pytest.mark.parametrize("how", ["cancel", "close_window", "unload"])
def test_ending_an_action_ends_its_clis_whole_group(actions: ActionRig, grandchildren: Grandchildren, how: str) -> None:
    actions.load([{"stall": 30}])
    actions.open_area()
    actions.run("explain")
    pid = running_pid(actions, actions.host.window)
    grandchild = grandchildren.pids()[0]
    if how == "cancel":
        actions.host.user.run_command("qwen_cancel_action")
    elif how == "close_window":
        actions.host.user.close_window(actions.host.window)
    else:
        actions.host.unload_package(PACKAGE)
    actions.host.wait_for(lambda: not alive(pid), timeout=WAIT)
    assert grandchildren.wait_gone(WAIT) == [], f"the action's grandchild {grandchild} outlived the {how}"


def test_an_answered_action_leaves_no_grandchild(actions: ActionRig, grandchildren: Grandchildren) -> None:
    actions.load([{"text": "It computes the area."}])
    actions.open_area()
    actions.run("explain")
    assert actions.finished() == ["answered"]
    assert grandchildren.pids() and grandchildren.wait_gone(WAIT) == []


def test_a_chat_closed_while_its_agent_starts_leaves_no_lock_for_the_next_qwen(chat: ChatRig) -> None:
    """qwen holds a lock on its extension store while it starts. Ended by
    SIGKILL, it left the lock for a minute, and the next chat's or action's
    qwen waited for it and failed: "Extension store is busy"."""
    lock = chat.tmp / "lock.lock"
    chat.script_extras.update(store_lock=str(lock), start_gate=str(chat.tmp / "never"))
    chat.load()
    chat.open()
    chat.host.wait_for(lock.exists, timeout=WAIT)
    pid: int = chat.host.wait_for(lambda: chat.chat().core.pid, timeout=WAIT)
    chat.host.user.run_command("qwen_chat_close", {"chat": chat.chat().chat_id})
    chat.host.wait_for(lambda: not alive(pid), timeout=WAIT)
    assert not lock.exists()
