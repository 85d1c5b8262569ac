"""End to end on `chat_transport: "serve"`: the package's IDE tools and a
stdio server of `chat_mcp_servers` reach the real `qwen serve` (0.24.4)
session of a chat through client-MCP over the daemon's WebSocket
(core/serve/client_mcp.py): the fake model calls both, their answers are in
its next request, the IDE tools' token is in no file the daemon writes, a
server that cannot start stops nothing, and MCP Servers… lists what the
session got."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_chat_e2e import WAIT, RealChat
from tests.e2e.test_chat_mcp_servers_e2e import MARKER, TINY
from tests.e2e.test_ide_tools_e2e import this_turns_results
from tests.e2e.test_serve_chat_e2e import open_serve_chat
from tests.rig.fake_model import FakeModel, Reply, ToolCall, is_agent_request, message_text
from tests.rig.qwen_cli import QwenCli
from tests.support.editor import PACKAGE

pytestmark = pytest.mark.e2e
# A session's client-MCP servers load their tools at once (`alwaysLoadTools`): called by name, no tool_search.
FOLDERS_TOOL = "mcp__sublime-ide-tools__get_workspace_folders"
TINY_TOOL = "mcp__tiny__echo_marker"
NOT_SENT = "Not sent: your prompt is back in the composer."


@pytest.fixture
def serve_mcp_chat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, real_env: dict[str, str], qwen_cli: QwenCli,
                   fake_model: FakeModel, workspace: Path) -> Iterator[RealChat]:
    servers = {"tiny": {"command": sys.executable, "args": [str(TINY), MARKER]},
               "broken": {"command": str(Path(__file__).parent / "no-such-server")}}
    with open_serve_chat(tmp_path, monkeypatch, real_env, qwen_cli, fake_model, workspace,
                         chat_mcp_servers=servers) as chat:
        yield chat


def folders_then_tiny(body: dict[str, Any]) -> Reply | None:
    """The model asks the IDE tools for the window's folders, then the tiny server, then answers."""
    if not is_agent_request(body):
        return None
    done = len(this_turns_results(body))
    if done == 0:
        return Reply(tool_calls=[ToolCall(FOLDERS_TOOL, {})])
    if done == 1:
        return Reply(tool_calls=[ToolCall(TINY_TOOL, {"text": "ping"})])
    return Reply(text="Both servers answered.")


def files_under(root: Path) -> Iterator[Path]:
    return (path for path in root.rglob("*") if path.is_file() and not path.is_symlink())


def test_the_ide_tools_and_a_stdio_server_answer_a_chat_on_serve(serve_mcp_chat: RealChat, workspace: Path,
                                                                 real_env: dict[str, str],
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    chat = serve_mcp_chat
    chat.model.set_responder(folders_then_tiny)

    def allow_what_is_asked(ends: int) -> bool:
        pending = chat.chat().request_handler().pending.oldest()
        if pending is not None:
            allow = next(o for o in pending.options if o.kind == "allow_once")
            chat.host.user.run_command("qwen_chat_permission", {"option": allow.option_id})
        return len(chat.ended_so_far()) >= ends

    chat.send("Ask the editor and the tiny server")
    for attempt in range(1, 7):  # 0.24.4's daemon gives its agent 10 s to start: a loaded machine may need another go
        chat.host.wait_for(functools.partial(allow_what_is_asked, attempt), timeout=WAIT * 2)
        if chat.ended_so_far()[-1] == "end_turn" or NOT_SENT not in chat.transcript():
            break
        chat.host.user.run_command("qwen_chat")  # the prompt is back in the composer: Enter sends it again
        chat.host.wait_idle()
        chat.host.user.press_key("enter")
    text = chat.transcript()
    assert "Both servers answered." in text, text
    last = [body for body in chat.model.requests if is_agent_request(body)][-1]
    answers = [message_text(message) for message in this_turns_results(last)]
    assert str(workspace) in answers[0], answers  # get_workspace_folders, answered by the package's server
    assert f"{MARKER}: ping" in answers[1], answers  # the stdio server the package started and relays
    assert "“broken”" in text and "did not start" in text  # said in the chat, which went on

    listed = sys.modules[f"{PACKAGE}.plugin.chat.agent.mcp_servers_command"].listed_servers(chat.chat())
    by_name = {row.name: row for row in listed}
    assert by_name["sublime-ide-tools"].status == "connected", listed
    assert "get_workspace_folders" in by_name["sublime-ide-tools"].tools
    assert by_name["tiny"].tools == ["echo_marker"], listed
    assert by_name["broken"].status == "not passed" and by_name["broken"].problem, listed

    # The token the IDE tools ask for stays in the package: in no file of the daemon's home, nor of Sublime's
    # cache but the terminal's own `--mcp-config` (ide-tools/<port>.json, written there by design), nor our log.
    companion = sys.modules[f"{PACKAGE}.plugin.companion.companions"].companions.get(chat.host.window)
    token = companion.ide_tools_token
    assert token and token not in caplog.text and token not in text
    written = [path for root in (Path(real_env["HOME"]), Path(chat.host.app.cache_dir))
               for path in files_under(root) if token.encode() in path.read_bytes() and path.parent.name != "ide-tools"]
    assert written == []
    assert json.dumps(token) not in json.dumps(chat.model.requests)
