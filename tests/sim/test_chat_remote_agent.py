"""A chat agent that runs elsewhere (a container, WSL, SSH) and sees the
workspace under another root: a `chat_agents` entry with its own
`path_maps`. The scripted agent (tests/rig/fake_acp_agent.py) names every
file by its own path; the BUILT package in the simulated editor translates
them at the agent's lines: its read gets the local file, its write lands in
the local file through the write path, its tool call's location is the
local file, and a path that leaves the workspace is refused."""

from __future__ import annotations

import sys
from typing import Any

from tests.sim.test_chat import FAKE_AGENT, WAIT, ChatRig

REMOTE_ROOT = "/workspaces/app"
SAVED = "value = 1\n"
WRITTEN = "value = 2\n"


def request(method: str, **params: Any) -> dict[str, Any]:
    return {"request": method, "params": {"sessionId": "", **params}}


def test_an_agent_elsewhere_reads_and_writes_the_local_files_by_its_own_paths(rig: ChatRig) -> None:
    workspace = rig.editor.workspace
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text(SAVED)
    (workspace.parent / "secret.txt").write_text("not the agent's\n")
    theirs = f"{REMOTE_ROOT}/src/app.py"
    rig.load([[
        {"update": {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "edit app", "kind": "edit",
                    "status": "in_progress", "locations": [{"path": theirs}]}},
        request("fs/read_text_file", path=theirs),
        request("fs/write_text_file", path=theirs, content=WRITTEN),
        request("fs/read_text_file", path=f"{REMOTE_ROOT}/../secret.txt"),
        request("fs/write_text_file", path=str(workspace / "src" / "app.py"), content="local name\n"),
    ]])
    script = str(rig.tmp / "script.json")
    rig.editor.settings({"chat_agent": "remote", "chat_agents": {"remote": {
        "command": [sys.executable, str(FAKE_AGENT), script],
        "path_maps": [{"local": str(workspace), "remote": REMOTE_ROOT}],
    }}})
    rig.host.wait_idle()
    view = rig.editor.open("src/app.py", SAVED)
    rig.send("edit it")
    assert rig.ended() == ["end_turn"]
    [new] = rig.received("session/new")
    assert new["params"]["cwd"] == REMOTE_ROOT
    assert new["params"]["mcpServers"] == []  # the IDE tools' loopback server is not where it runs
    reads = rig.answered("fs/read_text_file", 2)
    assert reads[0] == {"content": SAVED}
    assert "secret.txt" in reads[1]["message"] and "content" not in reads[1]  # refused: outside the workspace
    writes = rig.answered("fs/write_text_file", 2)
    assert writes[0] is None
    assert "message" in writes[1]  # its own name is all it may use: the local name maps to nothing there
    rig.host.wait_idle()
    assert (workspace / "src" / "app.py").read_text() == WRITTEN
    assert rig.editor.text(view) == WRITTEN and not view.is_dirty()
    assert "src/app.py" in rig.transcript()  # the location, shown by its local name
    assert theirs not in rig.transcript()


def test_path_map_true_takes_the_path_maps_setting(rig: ChatRig) -> None:
    workspace = rig.editor.workspace
    (workspace / "a.py").write_text(SAVED)
    rig.load([[request("fs/read_text_file", path=f"{REMOTE_ROOT}/a.py")]])
    script = str(rig.tmp / "script.json")
    rig.editor.settings({"chat_agent": "remote", "path_maps": [{"local": str(workspace), "remote": REMOTE_ROOT}],
                         "chat_agents": {"remote": {"command": [sys.executable, str(FAKE_AGENT), script],
                                                    "path_map": True}}})
    rig.host.wait_idle()
    rig.send("read it")
    assert rig.ended() == ["end_turn"]
    assert rig.received("session/new")[0]["params"]["cwd"] == REMOTE_ROOT
    assert rig.answered("fs/read_text_file") == [{"content": SAVED}]


def test_path_map_true_without_maps_says_what_to_set_and_starts_nothing(rig: ChatRig) -> None:
    rig.load()
    script = str(rig.tmp / "script.json")
    rig.editor.settings({"chat_agent": "remote", "chat_agents": {"remote": {
        "command": [sys.executable, str(FAKE_AGENT), script], "path_map": True}}})
    rig.host.wait_idle()
    rig.send("hi")
    rig.host.wait_for(lambda: "neither path_maps nor wsl_distro is set" in rig.transcript(), timeout=WAIT)
    assert not rig.received("initialize")  # never started here as if it ran here
