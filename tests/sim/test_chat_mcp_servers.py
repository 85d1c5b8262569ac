"""The user's own MCP servers (chat_mcp_servers) with the BUILT package and the
scripted agent (tests/rig/fake_acp_agent.py): what each session is given,
what a project cannot add, what the chat says it left out, and MCP
Servers… (the palette command and the driver's `mcp_servers`)."""

from __future__ import annotations

import importlib
import json
import sys
import time
from pathlib import Path
from typing import Any

from tests.sim.test_chat import FAKE_AGENT, WAIT, ChatRig
from tests.sim.test_chat_agents import PLAIN_AGENT, logged
from tests.support.editor import PACKAGE, require_built
from tests.support.headless import HeadlessSublime

TINY = {"command": "tiny-mcp", "args": ["--marker", "x"], "env": {"TINY_TOKEN": "t"}, "cwd": "/srv/tiny"}
WEB = {"httpUrl": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer w"}}
OLD = {"url": "https://old.example.com/sse"}
TINY_ACP = {"name": "tiny", "command": "tiny-mcp", "args": ["--marker", "x"], "env": [{"name": "TINY_TOKEN", "value": "t"}]}
WEB_ACP = {"type": "http", "name": "web", "url": "https://mcp.example.com/mcp",
           "headers": [{"name": "Authorization", "value": "Bearer w"}]}
OLD_ACP = {"type": "sse", "name": "old", "url": "https://old.example.com/sse", "headers": []}


def user_servers_sent(rig: ChatRig, method: str) -> list[list[dict[str, Any]]]:
    return [[s for s in m["params"]["mcpServers"] if s["name"] != "sublime-ide-tools"] for m in rig.received(method)]


def test_every_session_gets_the_users_servers_and_a_projects_are_ignored(rig: ChatRig) -> None:
    rig.load(chat_mcp_servers={"tiny": TINY, "web": WEB, "old": OLD, "broken": {"command": ""}})
    window = rig.host.window
    window.set_project_data({**(window.project_data() or {}),
                             "settings": {"chat_mcp_servers": {"project-server": {"command": "evil"}},
                                          "QwenCompanion": {"chat_mcp_servers": {"project-server": {"command": "evil"}}}}})
    rig.send("hello")
    assert rig.ended() == ["end_turn"]
    assert user_servers_sent(rig, "session/new") == [[TINY_ACP, WEB_ACP, OLD_ACP]]
    text = rig.transcript()
    assert "The MCP server “broken” of chat_mcp_servers needs a \"command\" that is a non-empty string" in text
    assert "“tiny” gets no cwd" in text
    rig.chat().core.sessions.restart().result(WAIT)  # the agent loads the session again: the servers go with it
    assert user_servers_sent(rig, "session/load") == [[TINY_ACP, WEB_ACP, OLD_ACP]]


def test_an_agent_without_http_gets_the_stdio_server_and_mcp_servers_lists_it(tmp_path: Path) -> None:
    require_built()
    home, workspace = tmp_path / "home", (tmp_path / "workspace").resolve()
    workspace.mkdir()
    log = tmp_path / "agent-log.jsonl"
    script = tmp_path / "script.json"
    script.write_text(json.dumps({**PLAIN_AGENT, "log": str(log), "turns": [[{"chunks": ["Hi."]}]]}))
    user = home / ".config" / "sublime-text" / "Packages" / "User"
    user.mkdir(parents=True)
    (user / "QwenCompanion.sublime-settings").write_text(json.dumps({
        "qwen_command": "no-qwen-here",
        "chat_agent": "plain",
        "chat_agents": {"plain": {"command": [sys.executable, str(FAKE_AGENT), str(script)]}},
        "chat_mcp_servers": {"tiny": TINY, "web": WEB},
    }))
    editor = HeadlessSublime(workspace, home)
    try:
        listed = editor.do("mcp_servers")
        assert listed["ok"], listed
        assert listed["servers"] == [{"name": "tiny", "status": "configured", "tools": []}]
        [new] = [m for m in logged(log) if m.get("method") == "session/new"]
        assert [s["name"] for s in new["params"]["mcpServers"]] == ["tiny"]
        note = "plain takes no HTTP or SSE MCP servers of this kind (its mcpCapabilities): web not passed."
        # Said while the session opened, it reaches the transcript through the
        # chat's thread and Sublime's main thread: later than the listing, on
        # a loaded machine.
        deadline = time.monotonic() + WAIT
        while note not in (shown := editor.do("chat_text", chat=listed["chat"]))["text"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert note in shown["text"]
        assert not [m for m in logged(log) if str(m.get("method", "")).startswith("qwen/")]  # qwen's methods: qwen only
        assert editor.quit()["ok"]
    finally:
        editor.kill()


def test_the_palette_command_lists_the_servers_with_escaped_details(rig: ChatRig) -> None:
    rig.load(chat_mcp_servers={"tiny": TINY, "b<i>d": {"command": "x"}})
    rig.send("hello")
    assert rig.ended() == ["end_turn"]
    rig.host.user.run_command("qwen_chat_mcp_servers")
    panel = rig.host.wait_for(lambda: rig.host.quick_panels[-1] if rig.host.quick_panels else None, timeout=WAIT)
    names = [item.trigger for item in panel.items]
    assert names == ["sublime-ide-tools", "tiny", "b<i>d"]  # the fake agent is no qwen: what the chat gave it
    assert all(item.annotation == "configured" for item in panel.items)
    assert panel.items[0].details == ["tools: none reported"]


HOSTILE_STATUS = {
    "servers": [
        {"name": "own", "status": "ok", "mcpStatus": "connected"},
        {"name": "tiny\u202e\x1b[2J", "status": "error", "mcpStatus": "disconnected",
         "errorKind": "<a href='subl:exit'>spawn failed</a>\n" + "e" * 100_000},
    ],
    "tools": {"own": [{"name": f"tool{i}"} for i in range(1500)]},
}


def test_with_qwen_the_panel_shows_its_report_cleaned_bounded_escaped_and_restarts(rig: ChatRig) -> None:
    rig.script_extras = {"agent_name": "qwen-code", "mcp_status": HOSTILE_STATUS}
    rig.load(chat_mcp_servers={"tiny": TINY})
    rig.send("hello")
    assert rig.ended() == ["end_turn"]
    rig.host.user.run_command("qwen_chat_mcp_servers")
    panel = rig.host.wait_for(lambda: rig.host.quick_panels[-1] if rig.host.quick_panels else None, timeout=WAIT)
    assert [item.trigger for item in panel.items] == ["own", "tiny[2J"]
    assert panel.items[0].details[0].startswith("tools: tool0, tool1,") and "and 980 more" in panel.items[0].details[0]
    assert panel.items[1].annotation == "error · disconnected"
    shown = panel.details_shown(1)  # as Sublime renders the minihtml: the agent's markup is text, no link
    assert "<a href='subl:exit'>spawn failed</a> eee" in shown.text and shown.links == []
    # qwen restarts a server of its own settings itself; a session's server restarts with the agent.
    rig.host.user.choose_quick_panel("own")
    rig.host.wait_for(lambda: "qwen restarted the MCP server “own”." in rig.transcript(), timeout=WAIT)
    rig.host.user.run_command("qwen_chat_mcp_servers")
    rig.host.wait_for(lambda: len(rig.host.quick_panels) == 2, timeout=WAIT)
    rig.host.user.choose_quick_panel(1)
    rig.host.wait_for(lambda: len(rig.received("initialize")) == 2, timeout=WAIT)
    assert [m["params"]["serverName"] for m in rig.received("qwen/control/workspace/mcp/restart")] == \
        ["own", HOSTILE_STATUS["servers"][1]["name"]]  # asked by its own name, shown cleaned


def test_on_serve_the_servers_go_to_the_daemon_but_sse_ones(rig: ChatRig) -> None:
    """The serve bridge declares what client_mcp.py relays: stdio and HTTP servers, not SSE ones."""
    rig.load(chat_mcp_servers={"tiny": TINY, "web": WEB, "old": OLD, "broken": 3})
    said: list[str] = []
    servers = sys.modules[f"{PACKAGE}.plugin.chat.agent.user_mcp"].ChatMcpServers(said.append)
    serve_bridge = importlib.import_module(f"{PACKAGE}.core.serve.serve_bridge")
    initialized = serve_bridge.InitializeResponse(protocol_version=1, agent_capabilities=serve_bridge.AgentCapabilities(
        mcp_capabilities=serve_bridge.McpCapabilities(http=True, sse=False)))
    own = [{"type": "http", "name": "sublime-ide-tools", "url": "http://127.0.0.1:1/ide-tools/mcp", "headers": []}]
    assert servers.entries(own, "qwen", initialized) == [*own, TINY_ACP, WEB_ACP]
    assert servers.entries(own, "qwen", initialized) == [*own, TINY_ACP, WEB_ACP]
    assert len(said) == 3 and "“broken”" in said[0] and "old not passed" in said[2]
