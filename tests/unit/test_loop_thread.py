"""The asyncio threads always end when asked to: a task that ignores its
cancellation (a bug, or a library that swallows it) must not keep a thread,
its loop and everything they hold alive after the package unloads."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from qwencompanion_src.core import loop_thread
from qwencompanion_src.core.chat.agent import chat_thread
from qwencompanion_src.core.chat.agent.chat_thread import ChatThread
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


def test_a_loop_thread_ends_though_a_task_ignores_its_cancellation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loop_thread, "UNWIND_SECONDS", 0.2)
    thread = LoopThread("QwenCompanion stubborn test")
    thread.start()
    started = threading.Event()
    thread.submit(stubborn(started))
    assert started.wait(5.0)
    thread.stop_soon()
    assert wait_gone("QwenCompanion stubborn test", 5.0)


def test_the_chat_thread_ends_though_a_task_ignores_its_cancellation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loop_thread, "UNWIND_SECONDS", 0.2)
    monkeypatch.setattr(chat_thread, "DRAIN_SECONDS", 0.2)
    thread = ChatThread()
    thread.start()
    started = threading.Event()
    thread.submit(stubborn(started))
    assert started.wait(5.0)
    thread.stop_soon()
    assert wait_gone("QwenCompanion chat", 5.0)


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
