"""The chat's `qwen serve` transport against the real daemon of 0.24.4 and the
fake model: the daemon started with its token in the environment only, a
prompt streamed, a permission answered, a turn cancelled, a reattach from the
record replaying what was missed with no event twice, and the Stop that ends
the daemon and the agents it started."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from qwencompanion_src.core.serve import daemon
from qwencompanion_src.core.serve.daemon_session import DaemonSession, SessionGone
from qwencompanion_src.core.serve.http import Address
from tests.rig.fake_model import FakeModel, Reply, write_file
from tests.rig.qwen_cli import QwenCli, cli_env
from tests.support.processes import alive, descendants

pytestmark = pytest.mark.e2e
WAIT = 60.0


class Recorder:
    """The chat's side: what the session hands over, and the permission answers it gives."""

    def __init__(self, option_id: str = "proceed_once") -> None:
        self.updates: list[dict[str, Any]] = []
        self.permissions: list[dict[str, Any]] = []
        self.refusals: list[str] = []
        self.elsewhere: list[str] = []  # live prompts of other clients
        self.option_id = option_id

    def session_update(self, params: dict[str, Any]) -> None:
        self.updates.append(params)

    async def request_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        self.permissions.append(params)
        return {"outcome": {"outcome": "selected", "optionId": self.option_id}}

    def prompt_elsewhere(self, params: dict[str, Any]) -> None:
        self.elsewhere.append(params["update"]["content"]["text"])

    def refused(self, message: str) -> None:
        self.refusals.append(message)

    def texts(self) -> str:
        return "".join(
            u["update"]["content"].get("text", "")
            for u in self.updates
            if u["update"].get("sessionUpdate") == "agent_message_chunk"
        )

    def kinds(self) -> list[str]:
        return [u["update"].get("sessionUpdate") for u in self.updates]


async def wait_until(condition: Any, what: str) -> None:
    deadline = asyncio.get_running_loop().time() + WAIT
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


@pytest.fixture
def serve_env(qwen_cli: QwenCli, fake_model: FakeModel, qwen_home: Path) -> dict[str, str]:
    return cli_env(qwen_cli, qwen_home, fake_model.base_url)


@pytest.fixture
def started(qwen_cli: QwenCli, serve_env: dict[str, str], workspace: Path,
            tmp_path: Path) -> Iterator[daemon.Attached]:
    found = daemon.attach_or_start(tmp_path / "cache", [str(workspace)], qwen_cli.argv(), serve_env)
    assert found.process is not None
    try:
        yield found
    finally:
        daemon.stop_daemon(found.record)
        found.process.wait(10)


def daemon_tree(found: daemon.Attached) -> list[int]:
    """The daemon and the agent processes it started (it starts its first agent ahead of a session)."""
    deadline = time.monotonic() + WAIT
    while not descendants(found.record.pid):
        if time.monotonic() > deadline:
            raise AssertionError("the daemon started no agent")
        time.sleep(0.1)
    return [found.record.pid, *descendants(found.record.pid)]


def proc_file(pid: int, name: str) -> bytes | None:
    """/proc/<pid>/<name>; None once the process is gone (a short helper the daemon ran)."""
    try:
        return Path(f"/proc/{pid}/{name}").read_bytes()
    except OSError:
        return None


def own_programs(found: daemon.Attached) -> list[int]:
    """The daemon's descendants that run a program of their own: its agents
    and their tools. A child the daemon has forked and not yet exec'd still
    shows the daemon's memory, its first environment (with the token) among
    it: a loaded machine caught one."""
    daemon_cmdline = proc_file(found.record.pid, "cmdline")
    deadline = time.monotonic() + WAIT
    while True:
        pids = [pid for pid in descendants(found.record.pid)
                if proc_file(pid, "cmdline") not in (None, daemon_cmdline)]
        if pids:
            return pids
        if time.monotonic() > deadline:
            raise AssertionError("the daemon started no agent")
        time.sleep(0.1)


def address_of(found: daemon.Attached) -> Address:
    return Address(found.record.host, found.record.port, found.record.token)


def test_the_token_is_in_no_command_line_and_no_log(started: daemon.Attached, workspace: Path,
                                                    qwen_home: Path, tmp_path: Path) -> None:
    token = started.record.token.encode()
    pids = daemon_tree(started)
    assert started.process is not None
    cmdlines = {pid: proc_file(pid, "cmdline") for pid in pids}
    assert not any(token in (cmdline or b"") for cmdline in cmdlines.values())
    # The daemon deletes QWEN_SERVER_TOKEN before it starts its agents: the
    # tools an agent runs do not inherit it.
    for pid in own_programs(started):
        assert token not in (proc_file(pid, "environ") or b""), f"agent {pid} holds the token"
    logs = [*tmp_path.joinpath("cache").rglob("*.out"), *qwen_home.rglob("*.log")]
    assert logs
    for log_file in logs:
        assert token not in log_file.read_bytes(), log_file


async def test_a_prompt_streams_a_permission_is_answered_and_a_turn_is_cancelled(
    started: daemon.Attached, fake_model: FakeModel, workspace: Path
) -> None:
    target = workspace / "new.txt"
    fake_model.queue(write_file(str(target), "content\n"), Reply(text="written " * 8, chunk_size=4),
                     Reply(text="slow " * 400, chunk_size=5, delay=0.05))
    recorder = Recorder()
    session = await DaemonSession.open(address_of(started), str(workspace), recorder)
    session.start()
    try:
        result = await asyncio.wait_for(session.prompt([{"type": "text", "text": "write it"}]), WAIT)
        assert result.stop_reason == "end_turn"
        assert [p["toolCall"]["toolCallId"] for p in recorder.permissions] == ["call_1"]
        assert target.read_text() == "content\n"  # the daemon wrote it itself, once allowed
        await wait_until(lambda: "written written" in recorder.texts(), "the streamed answer")
        assert "tool_call" in recorder.kinds()

        turn = asyncio.ensure_future(session.prompt([{"type": "text", "text": "go slowly"}]))
        await wait_until(lambda: "slow slow" in recorder.texts(), "the slow answer to start")
        await session.cancel()
        assert (await asyncio.wait_for(turn, WAIT)).stop_reason == "cancelled"
        assert recorder.refusals == []
    finally:
        session.close()


async def test_a_reattach_replays_what_was_missed_once(started: daemon.Attached, fake_model: FakeModel,
                                                       workspace: Path, tmp_path: Path) -> None:
    fake_model.queue(Reply(text="".join(f"<{n}>" for n in range(60)), chunk_size=4, delay=0.02))
    first = Recorder()
    session = await DaemonSession.open(address_of(started), str(workspace), first)
    session.start()
    turn = asyncio.ensure_future(session.prompt([{"type": "text", "text": "count"}]))
    await wait_until(lambda: "<3>" in first.texts(), "the answer to start")
    # A plugin reload: the reader goes, the turn goes on in the daemon.
    session.close()
    turn.cancel()
    seen_before, cursor = list(first.updates), session.last_event_id

    # The window comes back: the record leads to the same daemon, checked (no new one started).
    found = await asyncio.to_thread(daemon.attach_or_start, tmp_path / "cache", [str(workspace)], ["no-qwen"], {})
    assert (found.process, found.record) == (None, started.record)

    second = Recorder()
    again = DaemonSession(address_of(started), session.session_id, session.client_id, second, cursor)
    again.start()
    try:
        await wait_until(lambda: "<59>" in first.texts() + second.texts(), "the end of the answer")
        shown = first.texts()[: len("".join(
            u["update"]["content"].get("text", "") for u in seen_before
            if u["update"].get("sessionUpdate") == "agent_message_chunk"
        ))] + second.texts()
        assert shown == "".join(f"<{n}>" for n in range(60))
        assert second.refusals == []
    finally:
        again.close()


async def test_a_prompt_of_a_second_client_appears_in_the_first(started: daemon.Attached, fake_model: FakeModel,
                                                               workspace: Path) -> None:
    fake_model.queue(Reply(text="answer for the other client", chunk_size=6))
    mine, theirs = Recorder(), Recorder()
    first = await DaemonSession.open(address_of(started), str(workspace), mine)
    second = await DaemonSession.open(address_of(started), str(workspace), theirs)
    assert second.session_id == first.session_id and second.client_id != first.client_id
    first.start()
    second.start()
    await asyncio.wait_for(first.connected.wait(), WAIT)
    try:
        result = await asyncio.wait_for(second.prompt([{"type": "text", "text": "asked elsewhere"}]), WAIT)
        assert result.stop_reason == "end_turn"
        await wait_until(lambda: "answer for the other client" in mine.texts(), "the other client's answer")
        # The first client hears the prompt as another client's; the sender does not hear its own echo.
        assert mine.elsewhere == ["asked elsewhere"] and theirs.elsewhere == []
        for recorder in (mine, theirs):
            assert not [u for u in recorder.updates if u["update"].get("sessionUpdate") == "user_message_chunk"]
    finally:
        first.close()
        second.close()


async def test_the_status_tells_pid_port_version_and_sessions(started: daemon.Attached, workspace: Path) -> None:
    before = await asyncio.to_thread(daemon.daemon_status, started.record)
    assert (before.port, before.version, before.require_auth, before.loopback) == (
        started.record.port, "0.24.4", True, True)
    assert before.pid in daemon_tree(started)
    session = await DaemonSession.open(address_of(started), str(workspace), Recorder())
    after = await asyncio.to_thread(daemon.daemon_status, started.record)
    assert after.sessions == before.sessions + 1
    session.close()


async def test_an_unknown_session_ends_the_reader(started: daemon.Attached) -> None:
    recorder = Recorder()
    session = DaemonSession(address_of(started), "no-such-session", None, recorder)
    session.start()
    reason = await asyncio.wait_for(session.gone, WAIT)
    assert "does not know this session" in reason
    with pytest.raises(SessionGone):
        await session.prompt([{"type": "text", "text": "hi"}])
    session.close()


def test_stop_ends_the_daemon_and_its_agents(started: daemon.Attached, workspace: Path, tmp_path: Path) -> None:
    tree = daemon_tree(started)
    assert daemon.stop_recorded(tmp_path / "cache", [str(workspace)]) == started.record
    assert started.process is not None
    started.process.wait(10)
    for pid in tree:
        assert_gone(pid)


def assert_gone(pid: int) -> None:
    deadline = time.monotonic() + WAIT
    while alive(pid):
        if time.monotonic() > deadline:
            raise AssertionError(f"process {pid} outlived the daemon's Stop")
        time.sleep(0.05)


def test_a_recorded_daemon_without_auth_is_not_attached_to(qwen_cli: QwenCli, serve_env: dict[str, str],
                                                           workspace: Path, tmp_path: Path) -> None:
    """A daemon on the recorded port that serves without a token (the CLI's
    loopback default) is refused, not driven, and no second one is started."""
    output = tmp_path / "open.out"
    argv = [*qwen_cli.argv(), "serve", "--hostname", "127.0.0.1", "--port", "0", "--no-web",
            "--workspace", str(workspace)]
    token = daemon.new_token()  # what the forged record claims; this daemon ignores it
    tokenless = daemon.start_daemon(argv, str(workspace), serve_env, token, [str(workspace)], output)
    try:
        path = daemon.record_path(tmp_path / "cache", [str(workspace)])
        daemon.write_record(path, tokenless.record)
        with pytest.raises(daemon.DaemonRefused, match="answers without a token"):
            daemon.attach_or_start(tmp_path / "cache", [str(workspace)], qwen_cli.argv(), serve_env)
        assert daemon.read_record(path) == tokenless.record
    finally:
        daemon.stop_daemon(tokenless.record)
        tokenless.process.wait(10)
