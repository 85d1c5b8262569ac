"""A window's remote endpoint (core/companion/remote.py in Companion):
a CLI in a container, over SSH or in WSL names the window's files by other
paths; every path crossing the endpoint is translated, one that maps outside
the window's folders is refused, and it has a token and lock file of its own."""

from __future__ import annotations

import json
import os
import socket
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from qwencompanion_src.core.cli.path_maps import PathMap, PathTranslator
from qwencompanion_src.core.companion import lockfile
from qwencompanion_src.core.companion.companion import Companion
from qwencompanion_src.core.companion.diff_tools import DiffBackend
from qwencompanion_src.core.companion.ide_messages import (
    DIFF_ACCEPTED,
    CloseDiffArguments,
    DiffAccepted,
    IdeContext,
    OpenDiffArguments,
    OpenFile,
    WorkspaceState,
)
from qwencompanion_src.core.companion.protocol import ToolAnswer, text_result

from .conftest import Mcp

REMOTE_ROOT = "/workspaces/app"


class DecidingBackend:
    """Records the paths it is given; accepts every proposal at once (as the
    editor's backend does once the user presses Accept)."""

    def __init__(self, companion: Companion) -> None:
        self.companion = companion
        self.opened: list[str] = []
        self.closed: list[str] = []

    async def open_diff(self, session_id: str, arguments: OpenDiffArguments) -> ToolAnswer:
        self.opened.append(arguments.filePath)
        self.companion.notify(DIFF_ACCEPTED, DiffAccepted(filePath=arguments.filePath, content=arguments.newContent),
                              session_id)
        return ToolAnswer()

    async def close_diff(self, session_id: str, arguments: CloseDiffArguments) -> ToolAnswer:
        self.closed.append(arguments.filePath)
        return text_result('{"content": null}')


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "app").mkdir()
    return tmp_path / "app"


@pytest.fixture
def remote_companion(
    companion_factory: Callable[..., Companion], workspace: Path, tmp_path: Path
) -> tuple[Companion, list[DecidingBackend]]:
    backends: list[DecidingBackend] = []

    def backend(companion: Companion) -> DiffBackend:
        backends.append(DecidingBackend(companion))
        return backends[-1]

    companion = companion_factory(
        folders=[str(workspace)],
        diff_backend=backend,
        remote_translator=lambda folders: PathTranslator([PathMap(str(workspace), REMOTE_ROOT)], folders, "posix"),
        remote_directory=tmp_path / "remote",
    )
    return companion, backends


def _client(port: int) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(base_url=f"http://127.0.0.1:{port}")


def test_the_remote_lock_file_names_the_remote_workspace_and_its_own_token(
    remote_companion: tuple[Companion, list[DecidingBackend]], lock_directory: Path, workspace: Path
) -> None:
    companion, _ = remote_companion
    lock = companion.remote_connect_file
    assert lock is not None and lock.is_file()
    assert stat.S_IMODE(lock.stat().st_mode) == 0o600
    content: dict[str, Any] = json.loads(lock.read_text())
    assert content["port"] == companion.remote_port != companion.port
    assert content["workspacePath"] == REMOTE_ROOT
    assert content["authToken"] == companion.remote_token != companion.token
    assert "ppid" not in content  # the CLI there would delete a lock file whose pid it cannot see
    # The local lock directory holds only the local server's file.
    assert sorted(p.name for p in lock_directory.iterdir()) == [f"{companion.port}.lock"]
    companion.stop()
    assert not lock.exists()


async def test_the_remote_cli_gets_the_context_under_its_own_paths(
    remote_companion: tuple[Companion, list[DecidingBackend]], workspace: Path, tmp_path: Path
) -> None:
    companion, _ = remote_companion
    assert companion.remote_token is not None
    context = IdeContext(workspaceState=WorkspaceState(openFiles=[
        OpenFile(path=str(workspace / "src" / "main.py"), timestamp=2, isActive=True),
        OpenFile(path=str(tmp_path / "elsewhere.py"), timestamp=1),  # outside the window: not sent
    ]))
    async with _client(companion.remote_port) as remote, _client(companion.port) as local:
        remote_mcp, local_mcp = Mcp(remote, token=companion.remote_token), Mcp(local, token=companion.token)
        remote_stream = await remote_mcp.open_stream(await remote_mcp.initialize())
        local_stream = await local_mcp.open_stream(await local_mcp.initialize())
        await remote_stream.next_message()
        await local_stream.next_message()
        companion.publish_context(context)
        remote_files = (await remote_stream.next_message())["params"]["workspaceState"]["openFiles"]
        local_files = (await local_stream.next_message())["params"]["workspaceState"]["openFiles"]
        remote_mcp.close_streams()
        local_mcp.close_streams()
    assert [f["path"] for f in remote_files] == [f"{REMOTE_ROOT}/src/main.py"]
    assert [f["path"] for f in local_files] == [str(workspace / "src" / "main.py"), str(tmp_path / "elsewhere.py")]


async def test_a_remote_review_reaches_the_editor_with_the_local_path_and_the_decision_goes_back_remote(
    remote_companion: tuple[Companion, list[DecidingBackend]], workspace: Path
) -> None:
    companion, [backend] = remote_companion
    assert companion.remote_token is not None
    async with _client(companion.remote_port) as remote:
        mcp = Mcp(remote, token=companion.remote_token)
        session = await mcp.initialize()
        stream = await mcp.open_stream(session)
        await stream.next_message()
        result = await mcp.call_tool(session, "openDiff", {"filePath": f"{REMOTE_ROOT}/a.py", "newContent": "x = 1\n"})
        decision = await stream.next_message()
        closed = await mcp.call_tool(session, "closeDiff", {"filePath": f"{REMOTE_ROOT}/a.py"})
        mcp.close_streams()
    assert not result.get("isError")
    assert backend.opened == [str(workspace / "a.py")]
    assert backend.closed == [str(workspace / "a.py")]
    assert not closed.get("isError")
    assert decision["method"] == DIFF_ACCEPTED
    assert decision["params"] == {"filePath": f"{REMOTE_ROOT}/a.py", "content": "x = 1\n"}


@pytest.mark.parametrize("remote_path", [f"{REMOTE_ROOT}/../secret.py", "/etc/passwd", "/workspaces/application/a.py"])
async def test_a_remote_path_that_maps_outside_the_workspace_is_refused(
    remote_companion: tuple[Companion, list[DecidingBackend]], remote_path: str
) -> None:
    companion, [backend] = remote_companion
    assert companion.remote_token is not None
    async with _client(companion.remote_port) as remote:
        mcp = Mcp(remote, token=companion.remote_token)
        session = await mcp.initialize()
        opened = await mcp.call_tool(session, "openDiff", {"filePath": remote_path, "newContent": "stolen"})
        closed = await mcp.call_tool(session, "closeDiff", {"filePath": remote_path})
    assert opened["isError"] and closed["isError"]
    assert "not inside the editor's folders" in opened["content"][0]["text"]
    assert backend.opened == [] and backend.closed == []


async def test_each_endpoint_takes_only_its_own_token_and_only_the_remote_one_docker_s_host_name(
    remote_companion: tuple[Companion, list[DecidingBackend]],
) -> None:
    companion, _ = remote_companion
    assert companion.remote_token is not None
    async with _client(companion.remote_port) as remote, _client(companion.port) as local:
        wrong_remote = await Mcp(remote, token=companion.token).post({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        wrong_local = await Mcp(local, token=companion.remote_token).post({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        docker_remote = await Mcp(remote, token=companion.remote_token).post(
            {"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers={"Host": f"host.docker.internal:{companion.remote_port}"})
        docker_local = await Mcp(local, token=companion.token).post(
            {"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers={"Host": f"host.docker.internal:{companion.port}"})
        foreign_remote = await Mcp(remote, token=companion.remote_token).post(
            {"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers={"Host": f"evil.example:{companion.remote_port}"})
    assert (wrong_remote.status, wrong_local.status) == (401, 401)
    assert docker_remote.status == 400  # past the security checks: a ping with no session
    assert docker_local.status == 403
    assert foreign_remote.status == 403
    assert [failure.reason for failure in companion.auth_failures()] == ["wrong-token", "wrong-token", "host", "host"]


@pytest.mark.skipif(not os.path.exists("/proc/net"), reason="127.0.0.2 is a loopback address only on Linux")
def test_the_remote_endpoint_listens_on_127_0_0_1_only(
    remote_companion: tuple[Companion, list[DecidingBackend]],
) -> None:
    # A socket on every interface (0.0.0.0) would also answer on 127.0.0.2.
    companion, _ = remote_companion
    for port in (companion.remote_port, companion.port):
        with socket.socket() as probe:
            probe.settimeout(2)
            assert probe.connect_ex(("127.0.0.2", port)) != 0
        with socket.socket() as probe:
            probe.settimeout(2)
            assert probe.connect_ex(("127.0.0.1", port)) == 0


def test_a_companion_without_maps_has_no_remote_endpoint(companion: Companion) -> None:
    assert companion.remote_port == 0 and companion.remote_connect_file is None and companion.remote_token is None


def test_remote_lock_files_an_earlier_run_left_are_swept(tmp_path: Path) -> None:
    directory = tmp_path / "remote"
    assert lockfile.sweep_remote_locks(directory) == []  # no folder yet
    directory.mkdir()
    (directory / "4242.lock").write_text("{}")
    (directory / "4343.connect").write_text("{}\n{}\n")
    (directory / "notes.txt").write_text("not ours")
    assert sorted(p.name for p in lockfile.sweep_remote_locks(directory)) == ["4242.lock", "4343.connect"]
    assert [p.name for p in directory.iterdir()] == ["notes.txt"]


class PathKnowledge:
    """The editor's knowledge as the tools see it: answers naming local files,
    one of them outside the window (a library's definition)."""

    def __init__(self, library: str) -> None:
        self.library = library
        self.asked: list[str | None] = []

    def document_symbols(self, abspath: str) -> dict[str, Any]:
        self.asked.append(abspath)
        return {"abspath": abspath, "symbols": [{"name": "main", "kind": "Function"}]}

    def definitions(self, abspath: str, line: int, character: int) -> dict[str, Any]:
        self.asked.append(abspath)
        return {"symbol": "main", "locations": [{"abspath": abspath, "range": {"line": line}},
                                                {"abspath": self.library, "range": {"line": 1}}]}

    def type_definitions(self, abspath: str, line: int, character: int) -> dict[str, Any]:
        return self.definitions(abspath, line, character)

    def diagnostics(self, abspath: str | None) -> dict[str, Any]:
        self.asked.append(abspath)
        here = abspath or os.path.join(os.path.dirname(self.library), "app", "b.py")
        return {"diagnostics": [{"abspath": here, "message": "unused"}, {"abspath": self.library, "message": "x"}],
                "source": "lsp"}


@pytest.fixture
def tooled_remote(
    companion_factory: Callable[..., Companion], workspace: Path, tmp_path: Path
) -> tuple[Companion, PathKnowledge]:
    knowledge = PathKnowledge(str(tmp_path / "library.py"))
    companion = companion_factory(
        folders=[str(workspace)],
        code_knowledge=knowledge,
        mcp_config_directory=tmp_path / "ide-tools",
        remote_translator=lambda folders: PathTranslator([PathMap(str(workspace), REMOTE_ROOT)], folders, "posix"),
        remote_directory=tmp_path / "remote",
    )
    return companion, knowledge


def test_the_connect_file_holds_the_lock_file_then_the_remote_tools_config(
    tooled_remote: tuple[Companion, PathKnowledge],
) -> None:
    companion, _ = tooled_remote
    connect = companion.remote_connect_file
    assert connect is not None and stat.S_IMODE(connect.stat().st_mode) == 0o600
    lock, tools = (json.loads(line) for line in connect.read_text().splitlines())
    assert lock["authToken"] == companion.remote_token
    server = tools["mcpServers"]["sublime-ide-tools"]
    assert server["httpUrl"] == f"http://@QWEN_COMPANION_HOST@:{companion.remote_port}/ide-tools/mcp"
    token = companion.remote_ide_tools_token
    assert server["headers"] == {"Authorization": f"Bearer {token}"}
    assert token is not None and len({token, companion.remote_token, companion.ide_tools_token, companion.token}) == 4


async def _remote_tools(companion: Companion, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    assert companion.remote_ide_tools_token is not None
    async with _client(companion.remote_port) as remote:
        mcp = Mcp(remote, token=companion.remote_ide_tools_token, path="/ide-tools/mcp")
        session = await mcp.initialize()
        return [await mcp.call_tool(session, name, arguments) for name, arguments in calls]


async def test_a_remote_cli_s_ide_tools_get_its_paths_local_and_answer_under_its_own_paths(
    tooled_remote: tuple[Companion, PathKnowledge], workspace: Path
) -> None:
    companion, knowledge = tooled_remote
    remote_file = f"{REMOTE_ROOT}/src/main.py"
    symbols, definitions, diagnostics = await _remote_tools(companion, [
        ("get_document_symbols", {"abspath": remote_file}),
        ("find_def_locations", {"abspath": remote_file, "line": 3, "character": 5}),
        ("get_diagnostics", {}),
    ])
    assert knowledge.asked == [str(workspace / "src" / "main.py")] * 2 + [None]
    answers = [json.loads(result["content"][0]["text"]) for result in (symbols, definitions, diagnostics)]
    assert answers[0]["abspath"] == remote_file
    # The library outside the folders has no name there: left out, its local path never sent.
    assert answers[1]["locations"] == [{"abspath": remote_file, "range": {"line": 3}}]
    assert answers[2]["diagnostics"] == [{"abspath": f"{REMOTE_ROOT}/b.py", "message": "unused"}]
    assert str(workspace) not in json.dumps(answers) and knowledge.library not in json.dumps(answers)


@pytest.mark.parametrize("remote_path", [f"{REMOTE_ROOT}/../secret.py", "/etc/passwd", "/workspaces/application/a.py"])
async def test_a_remote_ide_tool_path_outside_the_workspace_is_refused(
    tooled_remote: tuple[Companion, PathKnowledge], remote_path: str
) -> None:
    companion, knowledge = tooled_remote
    results = await _remote_tools(companion, [
        ("get_document_symbols", {"abspath": remote_path}),
        ("find_type_def_locations", {"abspath": remote_path, "line": 1, "character": 1}),
        ("get_diagnostics", {"abspath": remote_path}),
    ])
    assert all(result["isError"] and "not inside the editor's folders" in result["content"][0]["text"]
               for result in results)
    assert knowledge.asked == []


async def test_the_remote_tools_take_only_their_own_token(
    tooled_remote: tuple[Companion, PathKnowledge],
) -> None:
    companion, _ = tooled_remote
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    async with _client(companion.remote_port) as remote, _client(companion.port) as local:
        statuses = [
            (await Mcp(remote, token=companion.ide_tools_token, path="/ide-tools/mcp").post(body)).status,
            (await Mcp(remote, token=companion.remote_token, path="/ide-tools/mcp").post(body)).status,
            (await Mcp(local, token=companion.remote_ide_tools_token, path="/ide-tools/mcp").post(body)).status,
        ]
    assert statuses == [401, 401, 401]


def test_a_remote_endpoint_without_ide_tools_hands_over_the_lock_file_only(
    remote_companion: tuple[Companion, list[DecidingBackend]],
) -> None:
    companion, _ = remote_companion
    connect = companion.remote_connect_file
    assert companion.remote_ide_tools_token is None and connect is not None
    assert [json.loads(line)["authToken"] for line in connect.read_text().splitlines()] == [companion.remote_token]
