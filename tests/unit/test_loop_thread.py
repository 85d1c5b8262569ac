"""The asyncio threads always end when asked to: a task that ignores its
cancellation (a bug, or a library that swallows it) must not keep a thread,
its loop and everything they hold alive after the package unloads."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import sys
import threading
import time

import pytest

from qwencompanion_src.core import loop_thread
from qwencompanion_src.core.chat.agent import chat_thread
from qwencompanion_src.core.chat.agent.chat_thread import ChatThread
from qwencompanion_src.core.cli import processes
from qwencompanion_src.core.loop_thread import LoopThread


async def stubborn(started: threading.Event) -> None:
    """Refuses every cancellation."""
    started.set()
    while True:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            continue


def threads_named(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == name and t.is_alive()]


def wait_gone(name: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while threads_named(name) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not threads_named(name)


def collect_abandoned(caplog: pytest.LogCaptureFixture) -> None:
    """The thread left the stubborn task pending in its closed loop: it is
    collected now, with asyncio's complaint, and not in whatever test the
    collector next runs in on this worker (whose error log would carry it)."""
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        gc.collect()
    assert any("Task was destroyed but it is pending" in record.getMessage()
               and "stubborn" in record.getMessage() for record in caplog.records), caplog.text


def test_a_loop_thread_ends_though_a_task_ignores_its_cancellation(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(loop_thread, "UNWIND_SECONDS", 0.2)
    thread = LoopThread("QwenCompanion stubborn test")
    thread.start()
    started = threading.Event()
    thread.submit(stubborn(started))
    assert started.wait(5.0)
    thread.stop_soon()
    assert wait_gone("QwenCompanion stubborn test", 5.0)
    del thread
    collect_abandoned(caplog)


def test_the_chat_thread_ends_though_a_task_ignores_its_cancellation(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(loop_thread, "UNWIND_SECONDS", 0.2)
    monkeypatch.setattr(chat_thread, "DRAIN_SECONDS", 0.2)
    thread = ChatThread()
    thread.start()
    started = threading.Event()
    thread.submit(stubborn(started))
    assert started.wait(5.0)
    thread.stop_soon()
    assert wait_gone("QwenCompanion chat", 5.0)
    del thread
    collect_abandoned(caplog)


class RecordingBridge:
    """What the chat thread asks of an agent's bridge when it stops."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def kill(self) -> None:
        self.calls.append("kill")

    async def reap(self) -> None:
        self.calls.append("reap")

    def release(self) -> None:
        self.calls.append("release")


def test_stopping_the_chat_thread_releases_every_agents_pipes() -> None:
    # Pipes left open when the loop closes are closed later by the garbage
    # collector, against a closed loop, in whatever runs then.
    thread = ChatThread()
    bridge = RecordingBridge()
    thread.bridges.append(bridge)  # type: ignore[arg-type]
    thread.start()
    thread.submit(asyncio.sleep(3600))  # a turn waiting for its agent
    thread.stop_soon()
    assert wait_gone("QwenCompanion chat", 5.0)
    assert bridge.calls == ["kill", "reap", "release"]


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")
def test_a_process_its_owner_let_go_of_is_ended_and_closed_with_its_loop() -> None:
    # An owner dropped (a chat's bridge replaced, a relay forgotten) while its
    # process ran: collected after the loop closed, its transport raised
    # "Event loop is closed" in an unrelated test, and the process ran on.
    thread = LoopThread("QwenCompanion left process test")
    thread.start()
    process = thread.run(processes.start_process(
        sys.executable, "-c", "import time; time.sleep(60)", stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, **processes.own_group_options()))
    transport = process._transport  # type: ignore[attr-defined]
    thread.stop_soon()
    assert wait_gone("QwenCompanion left process test", 5.0)
    assert transport.is_closing()
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(process.pid, os.WNOHANG)
        if not pid_alive(process.pid):
            break
        time.sleep(0.02)
    assert not pid_alive(process.pid)
    del process, transport
    gc.collect()  # an unclosed transport would raise here, against the closed loop


def test_work_nobody_waits_for_says_when_it_fails(caplog: pytest.LogCaptureFixture) -> None:
    """The chat's Esc, Enter and Steer hand their work to the loop and return:
    an error there reached no one, and the user's Esc did nothing, unlogged."""
    thread = LoopThread("QwenCompanion test spawn")
    thread.start()
    finished = threading.Event()

    async def fails() -> None:
        raise ValueError("no such turn")

    async def ends_well() -> None:
        finished.set()

    try:
        with caplog.at_level(logging.ERROR, logger=loop_thread.__name__):
            thread.spawn(fails(), "cancelling the turn")
            thread.spawn(ends_well(), "sending the prompt")
            assert finished.wait(5)
            deadline = time.monotonic() + 5
            while not caplog.records and time.monotonic() < deadline:
                time.sleep(0.01)
    finally:
        thread.stop()
    assert [r.getMessage() for r in caplog.records] == ["cancelling the turn failed: no such turn"]
    assert caplog.records[0].exc_info is not None
