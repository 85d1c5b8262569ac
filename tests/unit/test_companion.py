"""The server thread and Companion lifecycles leave nothing behind."""

from __future__ import annotations

import asyncio
import gc
import socket
import threading
import warnings
from pathlib import Path

import aiohttp
import pytest

from qwencompanion_src.core.companion.companion import Companion
from qwencompanion_src.core.companion.ide_messages import IdeContext
from qwencompanion_src.core.loop_thread import LoopThread

from .conftest import Mcp


def _threads_named(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == name and t.is_alive()]


def _refuses(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(5)
        try:
            probe.connect(("127.0.0.1", port))
        except ConnectionRefusedError:
            return True
        return False


def test_server_thread_start_and_stop_leave_no_thread() -> None:
    name = "QwenCompanion test thread A"
    thread = LoopThread(name=name)
    assert not thread.alive
    thread.start()
    assert thread.alive and len(_threads_named(name)) == 1
    thread.start()  # idempotent
    assert len(_threads_named(name)) == 1

    async def answer() -> int:
        return 42

    assert thread.run(answer()) == 42
    thread.stop()
    assert not thread.alive
    assert _threads_named(name) == []
    thread.stop()  # idempotent


def test_a_stopped_server_thread_refuses_work() -> None:
    thread = LoopThread(name="QwenCompanion test thread B")

    async def work() -> None:
        return None

    coroutine = work()
    with pytest.raises(RuntimeError):
        thread.submit(coroutine)
    thread.call_soon(lambda: None)  # ignored, no crash


def test_stopping_the_thread_unwinds_the_work_still_running() -> None:
    """Nothing is left pending for the garbage collector to destroy later."""
    thread = LoopThread(name="QwenCompanion test thread F")
    thread.start()
    unwound = threading.Event()

    async def forever() -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            unwound.set()

    async def start_forever() -> asyncio.Task[None]:
        return asyncio.ensure_future(forever())

    task = thread.run(start_forever())
    thread.stop()
    assert unwound.is_set()
    assert task.cancelled()


def test_run_raises_what_the_coroutine_raises(server_thread: LoopThread) -> None:
    async def fail() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        server_thread.run(fail())


def test_twenty_companion_cycles_leave_no_lock_file_socket_or_thread(tmp_path: Path) -> None:
    name = "QwenCompanion test thread C"
    lock_directory = tmp_path / "ide"
    ports = []
    for _ in range(20):
        thread = LoopThread(name=name)
        thread.start()
        companion = Companion(thread, folders=[str(tmp_path)], lock_directory=lock_directory)
        companion.start()
        assert companion.running
        assert companion.lock_file.exists()
        ports.append(companion.port)
        companion.stop()
        thread.stop()
    assert list(lock_directory.glob("*.lock")) == []
    assert list(lock_directory.iterdir()) == []
    assert _threads_named(name) == []
    for port in set(ports):
        assert _refuses(port), port


def test_many_companions_on_one_thread_restart_cleanly(server_thread: LoopThread, tmp_path: Path) -> None:
    lock_directory = tmp_path / "ide"
    companions = [Companion(server_thread, folders=[], lock_directory=lock_directory) for _ in range(5)]
    for companion in companions:
        companion.start()
    assert len({c.port for c in companions}) == 5
    assert len(list(lock_directory.glob("*.lock"))) == 5
    ports = [c.port for c in companions]
    for companion in companions:
        companion.stop()
        companion.stop()  # twice is harmless
    assert list(lock_directory.iterdir()) == []
    for port in ports:
        assert _refuses(port)
    assert server_thread.alive  # the shared thread keeps running for other windows


def test_a_stopped_companion_can_start_again(server_thread: LoopThread, tmp_path: Path) -> None:
    lock_directory = tmp_path / "ide"
    companion = Companion(server_thread, folders=[str(tmp_path)], lock_directory=lock_directory)
    companion.start()
    first = companion.port
    companion.stop()
    companion.start()
    try:
        assert companion.running
        assert companion.lock_file.exists()
        assert [p.name for p in lock_directory.iterdir()] == [f"{companion.port}.lock"]
    finally:
        companion.stop()
    assert list(lock_directory.iterdir()) == []
    assert _refuses(first)


async def test_stop_with_an_open_stream_leaves_no_socket_or_thread(tmp_path: Path) -> None:
    name = "QwenCompanion test thread D"
    thread = LoopThread(name=name)
    thread.start()
    companion = Companion(thread, folders=[], lock_directory=tmp_path / "ide")
    companion.start()
    port = companion.port
    async with aiohttp.ClientSession(base_url=f"http://127.0.0.1:{port}") as client:
        mcp = Mcp(client, token=companion.token)
        stream = await mcp.open_stream(await mcp.initialize())
        await stream.next_message()
        await asyncio.to_thread(companion.stop)
        with pytest.raises((EOFError, aiohttp.ClientError)):
            while True:
                await stream.next()
        mcp.close_streams()
    await asyncio.to_thread(thread.stop)
    assert _threads_named(name) == []
    assert _refuses(port)
    assert list((tmp_path / "ide").iterdir()) == []


def test_stopping_the_thread_first_still_removes_the_lock_file(tmp_path: Path) -> None:
    thread = LoopThread(name="QwenCompanion test thread E")
    thread.start()
    companion = Companion(thread, folders=[], lock_directory=tmp_path / "ide")
    companion.start()
    thread.stop()
    companion.stop()
    assert list((tmp_path / "ide").iterdir()) == []
    assert not companion.running
    # In this (wrong) order the dead loop never closed the listening socket:
    # let it go here rather than in a later test.
    del companion
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


def test_sessions_and_auth_failures_are_empty_on_a_fresh_companion(companion: Companion) -> None:
    assert companion.sessions() == []
    assert companion.auth_failures() == []
    assert not companion.has_session("0" * 32)
    assert companion.started_at > 0


def test_publish_context_before_any_session_is_kept_for_later(companion: Companion, tmp_path: Path) -> None:
    from .conftest import context_with

    context = context_with(str(tmp_path / "x.py"))
    assert companion.publish_context(context) is True
    assert companion.publish_context(context) is False
    assert companion.publish_context(IdeContext()) is True


def test_publish_context_from_many_threads_does_not_crash(companion: Companion, tmp_path: Path) -> None:
    from .conftest import context_with

    errors: list[BaseException] = []

    def publish(offset: int) -> None:
        try:
            for n in range(50):
                companion.publish_context(context_with(str(tmp_path / f"{offset}.py"), line=n + 1))
        except BaseException as error:  # pragma: no cover - the failure being tested
            errors.append(error)

    workers = [threading.Thread(target=publish, args=(i,)) for i in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert errors == []
    assert companion.sessions() == []  # the loop is still serving



def test_a_reservation_publishes_the_lock_file_and_the_companion_adopts_its_port(
    server_thread: LoopThread, lock_directory: Path, tmp_path: Path
) -> None:
    import json

    from qwencompanion_src.core.companion import reservation

    claim = reservation.reserve([str(tmp_path)], lock_directory)
    lock = json.loads((lock_directory / f"{claim.port}.lock").read_text())
    assert (lock["port"], lock["authToken"], lock["workspacePath"]) == (claim.port, claim.token, str(tmp_path))

    companion = Companion(server_thread, folders=[str(tmp_path)], lock_directory=lock_directory, reservation=claim)
    companion.start()
    try:
        assert (companion.port, companion.token) == (claim.port, claim.token)
        assert not _refuses(companion.port)
    finally:
        companion.stop()
    assert _refuses(claim.port)
    assert list(lock_directory.glob("*.lock")) == []


def test_an_unused_reservation_gives_back_its_port_and_lock_file(lock_directory: Path) -> None:
    from qwencompanion_src.core.companion import reservation

    claim = reservation.reserve([], lock_directory)
    port = claim.port

    claim.release(lock_directory)

    assert _refuses(port)
    assert list(lock_directory.glob("*.lock")) == []
