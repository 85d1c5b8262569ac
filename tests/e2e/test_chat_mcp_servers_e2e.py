"""End to end: a stdio MCP server of the user's `chat_mcp_servers` setting
(tests/rig/tiny_mcp_server.py) reaches the real CLI's (0.24.4) chat session:
the fake model finds and calls its tool, and the tool's answer is in the
model's next request, while a server that cannot start stops nothing; MCP
Servers… lists both with the status qwen reports."""

from __future__ import annotations

import functools
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_chat_e2e import WAIT, RealChat
from tests.e2e.test_ide_tools_e2e import this_turns_results
from tests.rig.fake_model import FakeModel, Reply, ToolCall, is_agent_request, message_text
from tests.rig.qwen_cli import QwenCli
from tests.support.editor import PACKAGE, open_editor

pytestmark = pytest.mark.e2e
TINY = Path(__file__).resolve().parents[1] / "rig" / "tiny_mcp_server.py"
MARKER = "MARKER_from_the_tiny_server"
TOOL = "mcp__tiny__echo_marker"


@pytest.fixture
def mcp_chat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, real_env: dict[str, str], qwen_cli: QwenCli,
             fake_model: FakeModel, workspace: Path) -> Iterator[RealChat]:
    with open_editor(tmp_path, monkeypatch, home=Path(real_env["HOME"]), workspace=workspace, load=False) as editor:
        monkeypatch.delenv("QWEN_HOME", raising=False)
        editor.load([workspace], {
            "qwen_command": [str(qwen_cli.node), str(qwen_cli.entry)],
            "chat_mcp_servers": {"tiny": {"command": sys.executable, "args": [str(TINY), MARKER]},
                                 "broken": {"command": str(Path(__file__).parent / "no-such-server")}},
        })
        yield RealChat(editor, fake_model)


def search_then_call(body: dict[str, Any]) -> Reply | None:
    """The model finds the tiny server's tool (tool_search), calls it (tool_call), then answers."""
    if not is_agent_request(body):
        return None
    done = len(this_turns_results(body))
    if done == 0:
        return Reply(tool_calls=[ToolCall("tool_search", {"query": "+echo marker"})])
    if TOOL not in json.dumps(body.get("messages", [])):
        return Reply(text="NO TINY TOOL")
    if done == 1:
        return Reply(tool_calls=[ToolCall("tool_call", {"name": TOOL, "arguments": {"text": "ping"}})])
    return Reply(text="The tiny server answered.")


def test_a_stdio_server_of_the_setting_answers_the_chats_agent(mcp_chat: RealChat) -> None:
    mcp_chat.model.set_responder(search_then_call)

    def allow_what_is_asked(turns: int) -> bool:
        pending = mcp_chat.chat().request_handler().pending.oldest()
        if pending is not None:
            allow = next(o for o in pending.options if o.kind == "allow_once")
            mcp_chat.host.user.run_command("qwen_chat_permission", {"option": allow.option_id})
        return len(mcp_chat.ended_so_far()) >= turns

    for turn in range(1, 6):  # 0.24.4 connects a session's MCP servers in the background
        mcp_chat.send("Ask the tiny server")
        mcp_chat.host.wait_for(functools.partial(allow_what_is_asked, turn), timeout=WAIT)
        if "NO TINY TOOL" not in mcp_chat.transcript().rsplit("## You", 1)[-1]:
            break
        time.sleep(1)
    assert "The tiny server answered." in mcp_chat.transcript()
    last = [body for body in mcp_chat.model.requests if is_agent_request(body)][-1]
    answers = [message_text(message) for message in this_turns_results(last)]
    assert any(f"{MARKER}: ping" in text for text in answers), answers

    # MCP Servers…: qwen's report of the session's servers; the one that cannot start did not stop the chat.
    listed = sys.modules[f"{PACKAGE}.plugin.chat.agent.mcp_servers_command"].listed_servers(mcp_chat.chat())
    by_name = {row.name: row for row in listed}
    assert by_name["tiny"].status == "ok · connected", listed
    assert by_name["broken"].status.startswith("error"), listed
