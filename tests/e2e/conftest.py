"""Fixtures for tests that drive the real Qwen Code CLI.

When the CLI (or tmux) is missing, tests skip with the reason — unless
``QWEN_E2E_REQUIRED=1`` (set by ``make test``), where they error instead, so
a broken install can never pass as "all skipped".
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import NoReturn

import pytest

from tests.e2e.test_chat_e2e import real_chat, real_env  # noqa: F401  (fixtures of several modules here)
from tests.e2e.test_serve_chat_e2e import serve_chat  # noqa: F401  (a fixture of several modules)
from tests.rig.fake_model import FakeModel
from tests.rig.gemini_cli import GeminiCli, find_gemini
from tests.rig.qwen_cli import QwenCli, TuiSession, cli_env, find_cli, make_home
from tests.support.desktop import desktop_tools  # noqa: F401  (no test pops a desktop notification)

E2E_REQUIRED = os.environ.get("QWEN_E2E_REQUIRED") == "1"


def unavailable(reason: str) -> NoReturn:
    """Skip, or fail when e2e tests are required."""
    if E2E_REQUIRED:
        pytest.fail(f"{reason} [QWEN_E2E_REQUIRED=1]", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def qwen_cli() -> QwenCli:
    cli = find_cli()
    reason = cli.missing_reason()
    if reason:
        unavailable(reason)
    return cli


@pytest.fixture(scope="session")
def gemini(qwen_cli: QwenCli) -> GeminiCli:
    found = find_gemini(qwen_cli)
    reason = found.missing_reason()
    if reason:
        unavailable(reason)
    return found


@pytest.fixture(scope="session")
def tmux_bin() -> str:
    path = shutil.which("tmux")
    if not path:
        unavailable("tmux is not installed (needed to drive the CLI's TUI)")
    return path


@pytest.fixture
def fake_model() -> Iterator[FakeModel]:
    """A scripted OpenAI-compatible model on 127.0.0.1 (background thread)."""
    with FakeModel() as model:
        yield model


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty project folder; resolved, as the CLI compares real paths."""
    ws = tmp_path / "workspace"
    ws.mkdir()
    return ws.resolve()


@pytest.fixture
def qwen_home(tmp_path: Path) -> Path:
    """An isolated HOME with the rig's settings (approval mode "default")."""
    return make_home(tmp_path)


@pytest.fixture
def qwen_env(qwen_cli: QwenCli, qwen_home: Path, fake_model: FakeModel) -> dict[str, str]:
    """The CLI's environment: isolated HOME, the fake model, no IDE port.
    Add ``QWEN_CODE_IDE_SERVER_PORT`` etc. by copying and updating it."""
    return cli_env(qwen_cli, qwen_home, fake_model.base_url)


StartTui = Callable[..., TuiSession]


@pytest.fixture
def start_tui(
    qwen_cli: QwenCli, tmux_bin: str, workspace: Path, qwen_env: dict[str, str]
) -> Iterator[StartTui]:
    """``start_tui(cwd=None, env=None, args=(), ready=True)`` starts the TUI
    (waiting for its prompt unless ``ready=False``); every session started
    is killed at teardown, pass or fail."""
    sessions: list[TuiSession] = []

    def start(
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        args: Sequence[str] = (),
        ready: bool = True,
        ready_timeout: float = 60.0,
    ) -> TuiSession:
        session = TuiSession(
            qwen_cli, cwd or workspace, qwen_env if env is None else env, args, tmux=tmux_bin
        )
        sessions.append(session)
        session.start()
        if ready:
            session.wait_ready(ready_timeout)
        return session

    yield start
    for session in sessions:
        session.close()
