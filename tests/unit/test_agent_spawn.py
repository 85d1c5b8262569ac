"""An agent asked to end while it is being spawned (its chat closed, the
package unloading) ends as soon as it has a pid, instead of starting on with
no chat to end it."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any
from unittest.mock import Mock

import pytest

from qwencompanion_src.core.chat.agent import stdio_bridge as bridge_module
from qwencompanion_src.core.chat.agent.stdio_bridge import StdioBridge
from qwencompanion_src.core.chat.agent.transport import AgentCommand, AgentGone
from tests.support.processes import alive


def test_a_kill_while_the_agent_is_spawned_ends_it_once_it_has_a_pid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    command = AgentCommand([sys.executable, "-c", "import time; time.sleep(60)"], str(tmp_path))
    bridge = StdioBridge(command, Mock(), Mock())
    spawn = asyncio.create_subprocess_exec
    spawned: list[asyncio.subprocess.Process] = []

    async def in_flight(*args: Any, **kwargs: Any) -> asyncio.subprocess.Process:
        process = await spawn(*args, **kwargs)
        bridge.kill()  # from another thread, before `start` has the pid
        spawned.append(process)
        return process

    monkeypatch.setattr(bridge_module.asyncio, "create_subprocess_exec", in_flight)

    async def start() -> None:
        try:
            with pytest.raises(AgentGone):
                await asyncio.wait_for(bridge.start(), 5)  # without the kill it waits for an answer
        finally:
            for process in spawned:
                if process.returncode is None:
                    process.kill()
                await process.wait()

    asyncio.run(start())
    (process,) = spawned
    assert process.returncode is not None and not alive(process.pid)
