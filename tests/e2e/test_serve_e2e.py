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
from qwencompanion_src.core.serve.http import Address, request_json
from qwencompanion_src.core.serve.session import ServeSession, SessionGone
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
        self.option_id = option_id

    def session_update(self, params: dict[str, Any]) -> None:
        self.updates.append(params)

    async def request_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        self.permissions.append(params)
        return {"outcome": {"outcome": "selected", "optionId": self.option_id}}

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
def started(qwen_cli: QwenCli, fake_model: FakeModel, workspace: Path, qwen_home: Path,
            tmp_path: Path) -> Iterator[daemon.StartedDaemon]:
    token = daemon.new_token()
    cache = tmp_path / "cache"
    env = daemon.serve_env(cli_env(qwen_cli, qwen_home, fake_model.base_url), token)
    argv = daemon.serve_argv(qwen_cli.argv(), [str(workspace)])
    found = daemon.start_daemon(argv, str(workspace), env, token, [str(workspace)],
                                daemon.output_path(cache, [str(workspace)]))
    daemon.write_record(daemon.record_path(cache, [str(workspace)]), found.record)
    try:
        yield found
    finally:
        daemon.stop_daemon(found.record)
        found.process.wait(10)


def daemon_tree(found: daemon.StartedDaemon) -> list[int]:
    """The daemon and the agent processes it started (it starts its first agent ahead of a session)."""
    deadline = time.monotonic() + WAIT
    while not descendants(found.process.pid):
        if time.monotonic() > deadline:
            raise AssertionError("the daemon started no agent")
        time.sleep(0.1)
    return [found.process.pid, *descendants(found.process.pid)]


def address_of(found: daemon.StartedDaemon) -> Address:
    return Address(found.record.host, found.record.port, found.record.token)


def test_the_token_is_in_no_command_line_and_no_log(started: daemon.StartedDaemon, workspace: Path,
                                                    qwen_home: Path, tmp_path: Path) -> None:
    token = started.record.token.encode()
    pids = daemon_tree(started)
    for pid in pids:
        assert token not in Path(f"/proc/{pid}/cmdline").read_bytes()
    # The daemon deletes QWEN_SERVER_TOKEN before it starts its agents: the
    # tools an agent runs do not inherit it.
    for pid in pids[1:]:
        assert token not in Path(f"/proc/{pid}/environ").read_bytes(), f"agent {pid} holds the token"
    logs = [*tmp_path.joinpath("cache").rglob("*.out"), *qwen_home.rglob("*.log")]
    assert logs
    for log_file in logs:
        assert token not in log_file.read_bytes(), log_file


async def test_a_prompt_streams_a_permission_is_answered_and_a_turn_is_cancelled(
    started: daemon.StartedDaemon, fake_model: FakeModel, workspace: Path
) -> None:
    target = workspace / "new.txt"
    fake_model.queue(write_file(str(target), "content\n"), Reply(text="written " * 8, chunk_size=4),
                     Reply(text="slow " * 400, chunk_size=5, delay=0.05))
    recorder = Recorder()
    session = await ServeSession.open(address_of(started), str(workspace), recorder)
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


async def test_a_reattach_replays_what_was_missed_once(started: daemon.StartedDaemon, fake_model: FakeModel,
                                                       workspace: Path, tmp_path: Path) -> None:
    fake_model.queue(Reply(text="".join(f"<{n}>" for n in range(60)), chunk_size=4, delay=0.02))
    first = Recorder()
    session = await ServeSession.open(address_of(started), str(workspace), first)
    session.start()
    turn = asyncio.ensure_future(session.prompt([{"type": "text", "text": "count"}]))
    await wait_until(lambda: "<3>" in first.texts(), "the answer to start")
    # A plugin reload: the reader goes, the turn goes on in the daemon.
    session.close()
    turn.cancel()
    seen_before, cursor = list(first.updates), session.last_event_id

    record = daemon.read_record(daemon.record_path(tmp_path / "cache", [str(workspace)]))
    assert record == started.record

    def probe(found: daemon.DaemonRecord, with_token: bool) -> int:
        return asyncio.run_coroutine_threadsafe(
            request_json(address_of(started), "GET", "/health", with_token=with_token), loop
        ).result(WAIT).status

    loop = asyncio.get_running_loop()
    await asyncio.to_thread(daemon.check_record, record, probe)

    second = Recorder()
    again = ServeSession(address_of(started), session.session_id, session.client_id, second, cursor)
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


async def test_an_unknown_session_ends_the_reader(started: daemon.StartedDaemon) -> None:
    recorder = Recorder()
    session = ServeSession(address_of(started), "no-such-session", None, recorder)
    session.start()
    reason = await asyncio.wait_for(session.gone, WAIT)
    assert "does not know this session" in reason
    with pytest.raises(SessionGone):
        await session.prompt([{"type": "text", "text": "hi"}])
    session.close()


def test_stop_ends_the_daemon_and_its_agents(started: daemon.StartedDaemon) -> None:
    tree = daemon_tree(started)
    daemon.stop_daemon(started.record)
    started.process.wait(10)
    for pid in tree:
        assert_gone(pid)


def assert_gone(pid: int) -> None:
    deadline = time.monotonic() + WAIT
    while alive(pid):
        if time.monotonic() > deadline:
            raise AssertionError(f"process {pid} outlived the daemon's Stop")
        time.sleep(0.05)
