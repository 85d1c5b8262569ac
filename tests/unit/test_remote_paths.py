"""The paths of a chat agent elsewhere (core/chat/agent/remote_paths.py) and where
they are translated: the agent's lines (acp_lines.py), every field both
ways, refusals, Windows and WSL forms."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest
from acp.schema import SessionNotification

from qwencompanion_src.core.chat.agent.acp_lines import AgentLines
from qwencompanion_src.core.chat.agent.agents import entry_problem, known_agents
from qwencompanion_src.core.chat.agent.remote_paths import INVALID_PARAMS, PathRefused, RemotePaths
from qwencompanion_src.core.cli.path_maps import PathMap, PathTranslator, wsl_maps
from tests.unit.test_acp_lines import Writer, run

CONTAINER = PathTranslator([PathMap("/home/me/app", "/workspaces/app")], ["/home/me/app"], "posix")
WSL_FOLDERS = ["C:\\src\\app"]
WSL = PathTranslator(wsl_maps(WSL_FOLDERS, "Ubuntu"), WSL_FOLDERS, "windows")


def request(method: str, params: dict[str, Any], request_id: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def tool_call(path: str, kind: str = "tool_call") -> dict[str, Any]:
    return {"sessionUpdate": kind, "toolCallId": "t1", "title": "edit", "kind": "edit",
            "locations": [{"path": path, "line": 3}],
            "content": [{"type": "diff", "path": path, "oldText": "a", "newText": "b"}]}


# --- to the agent -------------------------------------------------------------


@pytest.mark.parametrize("method", ["session/new", "session/load", "session/resume", "session/list"])
def test_the_cwd_sent_is_the_agents_name_of_the_folder(method: str) -> None:
    sent = RemotePaths(CONTAINER).outgoing(request(method, {"cwd": "/home/me/app/sub", "mcpServers": []}))
    assert sent["params"]["cwd"] == "/workspaces/app/sub"
    windows = RemotePaths(WSL).outgoing(request(method, {"cwd": "c:\\SRC\\app"}))
    assert windows["params"]["cwd"] == "/mnt/c/src/app"  # the map's name of the folder, whatever case it is typed in


def test_a_cwd_the_agent_cannot_see_stops_the_request() -> None:
    with pytest.raises(PathRefused):
        RemotePaths(CONTAINER).outgoing(request("session/new", {"cwd": "/home/me/other"}))


def test_prompt_uris_are_the_agents_names() -> None:
    prompt = [
        {"type": "text", "text": "see file:///home/me/app/a.py"},  # the user's words are never rewritten
        {"type": "resource_link", "name": "a.py", "uri": "file:///home/me/app/a%20b.py#L2-L4"},
        {"type": "resource", "resource": {"uri": "file:///home/me/app/b.py", "text": "x"}},
        {"type": "image", "mimeType": "image/png", "data": "", "uri": "file:///home/me/app/c.png"},
        {"type": "resource_link", "name": "out", "uri": "file:///etc/hosts"},  # it cannot see it: as it is
        {"type": "resource_link", "name": "web", "uri": "https://example.com/x"},
    ]
    sent = RemotePaths(CONTAINER).outgoing(request("session/prompt", {"sessionId": "s", "prompt": prompt}))
    blocks = sent["params"]["prompt"]
    assert blocks[0] == prompt[0]
    assert blocks[1]["uri"] == "file:///workspaces/app/a%20b.py#L2-L4"
    assert blocks[2]["resource"] == {"uri": "file:///workspaces/app/b.py", "text": "x"}
    assert blocks[3]["uri"] == "file:///workspaces/app/c.png"
    assert blocks[4:] == prompt[4:]


def test_a_windows_file_uri_is_the_wsl_name() -> None:
    block = {"type": "resource_link", "name": "m.py", "uri": "file:///C:/src/app/m.py"}
    sent = RemotePaths(WSL).outgoing(request("session/prompt", {"sessionId": "s", "prompt": [block]}))
    assert sent["params"]["prompt"][0]["uri"] == "file:///mnt/c/src/app/m.py"


# --- from the agent -----------------------------------------------------------


@pytest.mark.parametrize("method", ["fs/read_text_file", "fs/write_text_file"])
def test_an_fs_request_names_the_local_file(method: str) -> None:
    got = RemotePaths(CONTAINER).incoming(request(method, {"sessionId": "s", "path": "/workspaces/app/x/y.py"}))
    assert got == request(method, {"sessionId": "s", "path": "/home/me/app/x/y.py"})
    windows = RemotePaths(WSL).incoming(request(method, {"sessionId": "s", "path": "/mnt/c/src/app/m.py"}))
    assert isinstance(windows, dict) and windows["params"]["path"] == "C:\\src\\app\\m.py"


@pytest.mark.parametrize("path", [
    "/workspaces/app/../../etc/passwd",  # leaves its root
    "/etc/passwd",  # no map holds it
    "/home/me/app/x.py",  # the local name, which is no name where the agent runs
    "workspaces/app/x.py",  # relative
])
@pytest.mark.parametrize("method", ["fs/read_text_file", "fs/write_text_file"])
def test_an_fs_request_outside_the_folders_is_refused(method: str, path: str) -> None:
    got = RemotePaths(CONTAINER).incoming(request(method, {"sessionId": "s", "path": path}))
    assert isinstance(got, str) and path in got


@pytest.mark.parametrize("path", ["/mnt/c/src/other/x", "/mnt/d/src/app/x", "/home/me/x", "/mnt/c/src/app/a:b"])
def test_a_wsl_fs_request_outside_the_windows_folders_is_refused(path: str) -> None:
    assert isinstance(RemotePaths(WSL).incoming(request("fs/write_text_file", {"path": path, "content": ""})), str)


@pytest.mark.parametrize("kind", ["tool_call", "tool_call_update"])
def test_tool_call_locations_and_diffs_name_local_files(kind: str) -> None:
    got = RemotePaths(CONTAINER).incoming({"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": "s", "update": tool_call("/workspaces/app/m.py", kind)}})
    assert isinstance(got, dict)
    update = got["params"]["update"]
    assert update["locations"] == [{"path": "/home/me/app/m.py", "line": 3}]
    assert update["content"][0]["path"] == "/home/me/app/m.py"


def test_a_permission_requests_tool_call_names_local_files() -> None:
    got = RemotePaths(WSL).incoming(request("session/request_permission", {
        "sessionId": "s", "options": [], "toolCall": tool_call("/mnt/c/src/app/m.py")}))
    assert isinstance(got, dict)
    assert got["params"]["toolCall"]["locations"][0]["path"] == "C:\\src\\app\\m.py"
    assert got["params"]["toolCall"]["content"][0]["path"] == "C:\\src\\app\\m.py"


def test_a_tool_call_outside_the_folders_is_shown_never_offered_to_write() -> None:
    got = RemotePaths(CONTAINER).incoming(request("session/request_permission", {
        "sessionId": "s", "options": [], "toolCall": tool_call("/home/me/app/m.py")}))
    assert isinstance(got, dict)
    call = got["params"]["toolCall"]
    assert call["locations"] == [{"path": "/home/me/app/m.py", "line": 3}]  # shown as the agent sent it
    assert [item["type"] for item in call["content"]] == ["content"]  # no diff a local file could take
    assert "/home/me/app/m.py" in call["content"][0]["content"]["text"]


def test_the_cwds_of_our_session_list_are_local() -> None:
    paths = RemotePaths(CONTAINER)
    paths.outgoing(request("session/list", {"cwd": "/home/me/app"}, 9))
    answer = {"jsonrpc": "2.0", "id": 9, "result": {"sessions": [
        {"sessionId": "a", "cwd": "/workspaces/app"}, {"sessionId": "b", "cwd": "/srv/other"}]}}
    got = paths.incoming(answer)
    assert isinstance(got, dict)
    assert [s["cwd"] for s in got["result"]["sessions"]] == ["/home/me/app", "/srv/other"]
    other = {"jsonrpc": "2.0", "id": 10, "result": {"sessions": [{"sessionId": "a", "cwd": "/workspaces/app"}]}}
    assert paths.incoming(other) == other  # not an answer to a list of ours


def test_the_files_of_our_rewind_are_local_or_shown_as_the_agent_named_them() -> None:
    paths = RemotePaths(CONTAINER)
    paths.outgoing(request("rewindSession", {"sessionId": "s", "promptId": "p", "rewindFiles": True}, 4))
    got = paths.incoming({"jsonrpc": "2.0", "id": 4, "result": {
        "success": True, "filesChanged": ["/workspaces/app/a.py", "/srv/b.py"], "filesFailed": ["/workspaces/app/c.py"]}})
    assert got == {"jsonrpc": "2.0", "id": 4, "result": {
        "success": True, "filesChanged": ["/home/me/app/a.py", "/srv/b.py"], "filesFailed": ["/home/me/app/c.py"]}}


@pytest.mark.parametrize("request_id", [[4], {"a": 1}, None, 4.5])
def test_an_answer_with_an_id_of_any_json_type_passes(request_id: Any) -> None:
    paths = RemotePaths(CONTAINER)
    paths.outgoing(request("session/list", {"cwd": "/home/me/app"}, 4))
    answer = {"jsonrpc": "2.0", "id": request_id, "result": {"sessions": [{"cwd": "/workspaces/app"}]}}
    assert paths.incoming(answer) == answer


# --- at the agent's lines -----------------------------------------------------


class Heard:
    def __init__(self) -> None:
        self.updates: list[Any] = []

    def session_update(self, notification: SessionNotification) -> None:
        self.updates.append(notification.update)

    def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        pass


def lines_with(translator: PathTranslator) -> tuple[AgentLines, asyncio.StreamReader, Writer, Heard]:
    reader, writer, heard = asyncio.StreamReader(), Writer(), Heard()
    lines = AgentLines(reader, cast(asyncio.StreamWriter, writer), heard, lambda _: None, lambda *_: None,
                       RemotePaths(translator))
    return lines, reader, writer, heard


def test_the_lines_answer_a_refused_fs_request_and_hand_on_a_translated_one() -> None:
    import json

    async def scenario() -> tuple[dict[str, Any] | None, Writer, Heard]:
        lines, reader, writer, heard = lines_with(CONTAINER)
        for message in (request("fs/write_text_file", {"sessionId": "s", "path": "/etc/passwd", "content": "x"}, 1),
                        {"jsonrpc": "2.0", "method": "session/update", "params": {
                            "sessionId": "s", "update": tool_call("/workspaces/app/m.py")}},
                        request("fs/read_text_file", {"sessionId": "s", "path": "/workspaces/app/m.py"}, 2)):
            reader.feed_data(json.dumps(message).encode() + b"\n")
        return await lines.receive(), writer, heard

    handed, writer, heard = run(scenario())
    assert handed is not None and handed["id"] == 2 and handed["params"]["path"] == "/home/me/app/m.py"
    assert writer.lines == [{"jsonrpc": "2.0", "id": 1, "error": {"code": INVALID_PARAMS, "message": writer.lines[0][
        "error"]["message"]}}]
    assert "/etc/passwd" in writer.lines[0]["error"]["message"]
    assert [location.path for location in heard.updates[0].locations] == ["/home/me/app/m.py"]


def test_the_lines_send_the_agents_cwd_and_refuse_one_it_cannot_see() -> None:
    async def scenario() -> Writer:
        lines, _, writer, _ = lines_with(WSL)
        await lines.send(request("_session/new", {"cwd": "C:\\src\\app", "mcpServers": []}))
        with pytest.raises(PathRefused):
            await lines.send(request("_session/new", {"cwd": "C:\\elsewhere", "mcpServers": []}, 2))
        return writer

    writer = run(scenario())
    assert writer.lines == [request("session/new", {"cwd": "/mnt/c/src/app", "mcpServers": []})]


# --- the chat_agents entry ----------------------------------------------------


def test_an_entry_says_it_runs_elsewhere() -> None:
    command = ["wsl.exe", "-d", "Ubuntu", "qwen", "--acp"]
    assert entry_problem("wsl", {"command": command, "path_map": True}) is None
    own = {"command": "ssh box qwen --acp", "path_maps": [{"local": "/home/me/app", "remote": "/srv/app"}]}
    assert entry_problem("box", own) is None
    agents = known_agents({"wsl": {"command": command, "path_map": True}, "box": own})
    assert agents["wsl"].path_maps is True
    assert agents["box"].path_maps == own["path_maps"]
    assert agents["qwen"].path_maps is False


@pytest.mark.parametrize("raw", [
    {"command": "x", "path_map": "yes"},
    {"command": "x", "path_maps": []},
    {"command": "x", "path_maps": [{"local": "relative", "remote": "/srv"}]},
    {"command": "x", "path_maps": [{"local": "/a", "remote": "/b"}], "path_map": True},
])
def test_an_entry_with_unusable_path_maps_is_left_out(raw: dict[str, Any]) -> None:
    assert entry_problem("x", raw) is not None
