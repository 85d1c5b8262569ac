"""Which process a pid names and which listens on a port
(core/cli/process_identity.py): on Linux read from /proc with real
processes; the macOS commands' answers as `ps` and `lsof` give them."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest

from qwencompanion_src.core.cli import process_identity
from qwencompanion_src.core.cli.process_identity import CannotTell, group_listener, same_process, start_token

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")

LISTENER = textwrap.dedent(
    """
    import socket, sys, time
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    print(server.getsockname()[1], flush=True)
    time.sleep(60)
    """
)


@pytest.fixture
def listener() -> Iterator[tuple[subprocess.Popen[str], int]]:
    """A process leading its own group and listening on a loopback port."""
    process = subprocess.Popen([sys.executable, "-c", LISTENER], stdout=subprocess.PIPE, text=True,
                               start_new_session=True)
    assert process.stdout is not None
    port = int(process.stdout.readline())
    yield process, port
    process.kill()
    process.wait()


@linux_only
def test_a_process_is_told_from_a_later_one_of_its_pid(listener: tuple[subprocess.Popen[str], int]) -> None:
    process, _port = listener
    token = start_token(process.pid)
    assert token and same_process(process.pid, token)
    assert not same_process(process.pid, "")  # nothing recorded: never the same
    assert not same_process(process.pid, token.split(":")[0] + ":1")  # same boot, another start
    process.kill()
    process.wait()
    assert not same_process(process.pid, token)


@linux_only
def test_the_listener_is_found_in_the_group_and_nowhere_else(listener: tuple[subprocess.Popen[str], int]) -> None:
    process, port = listener
    assert group_listener(process.pid, port) == process.pid
    with socket.socket() as other:  # a port this test listens on, outside the group
        other.bind(("127.0.0.1", 0))
        other.listen()
        assert group_listener(process.pid, other.getsockname()[1]) is None


def test_on_macos_the_start_is_ps_lstart_and_the_listener_lsof(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []
    answers = {"ps": "Tue Dec  1 09:14:03 2026", "lsof": "4242\n"}

    def run(argv: list[str]) -> str | None:
        calls.append(argv)
        return answers.get(argv[0])

    monkeypatch.setattr(process_identity, "PLATFORM", "darwin")
    monkeypatch.setattr(process_identity, "_run", run)
    assert start_token(4242) == "lstart:Tue Dec  1 09:14:03 2026"
    assert group_listener(4240, 5123) == 4242
    assert calls[-1] == ["lsof", "-nP", "-a", "-g", "4240", "-iTCP:5123", "-sTCP:LISTEN", "-t"]
    answers["lsof"] = ""
    assert group_listener(4240, 5123) is None
    del answers["lsof"]  # no lsof, or it failed
    with pytest.raises(CannotTell):
        group_listener(4240, 5123)


def test_on_windows_the_listener_is_not_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(process_identity, "PLATFORM", "win32")
    with pytest.raises(CannotTell):
        group_listener(4240, 5123)
