"""The watchdog: a callback that waits or hogs Sublime's main or worker thread
fails the test; our own threads and the simulator's own waits do not count."""

from __future__ import annotations

import gc
import subprocess
import sys
import threading
import time
from concurrent.futures import Future
from pathlib import Path

import pytest

from tests.sublime_sim import SimulatedHost, _watchdog


def violations(sim_host: SimulatedHost, timeout: float = 5.0) -> list[str]:
    sim_host.wait_idle(timeout=timeout)
    return [f"{v.thread} {v.what}" for v in sim_host.watchdog.take()]


def test_waiting_on_an_unfinished_future_on_either_thread_is_caught(sim_host: SimulatedHost) -> None:
    pending: Future[int] = Future()
    threading.Timer(0.05, lambda: pending.set_result(1)).start()
    sim_host.sublime.set_timeout_async(lambda: pending.result(5))
    found = violations(sim_host)
    assert len(found) == 1 and found[0].startswith("sublime-worker waited on concurrent.futures.Future.result()")
    done: Future[int] = Future()
    done.set_result(2)
    sim_host.sublime.set_timeout(lambda: done.result())  # finished: no wait
    assert violations(sim_host) == []


def test_processes_sleeps_joins_and_sockets_are_caught(sim_host: SimulatedHost) -> None:
    def run_process() -> None:
        subprocess.run([sys.executable, "-c", "pass"], check=True)

    def join_thread() -> None:
        worker = threading.Thread(target=lambda: time.sleep(0.02))
        worker.start()  # starting a thread is no wait
        worker.join()

    def connect() -> None:
        import socket

        server = socket.create_server(("127.0.0.1", 0))
        with server, socket.create_connection(server.getsockname()):
            pass

    for work in (run_process, join_thread, lambda: time.sleep(0.01), connect):
        sim_host.sublime.set_timeout(work)
    found = violations(sim_host)
    assert any("subprocess.Popen.communicate()" in v or "subprocess.Popen.wait()" in v for v in found)
    assert any("threading.Thread.join()" in v for v in found)
    assert any("time.sleep(0.01)" in v for v in found)
    assert any("socket.connect()" in v for v in found)
    assert not any("Event.wait" in v for v in found)


def test_a_callback_over_the_cpu_limit_is_caught_and_the_limit_is_per_test(sim_host: SimulatedHost) -> None:
    def spin(seconds: float) -> None:
        end = time.thread_time() + seconds
        while time.thread_time() < end:
            pass

    sim_host.sublime.set_timeout(lambda: spin(0.05))
    assert violations(sim_host) == []
    sim_host.watchdog.limit_ms = 20  # a tighter limit for this test only
    sim_host.sublime.set_timeout_async(lambda: spin(0.05))
    found = violations(sim_host)
    assert len(found) == 1 and "of CPU time (limit 20 ms)" in found[0]


def test_sublimes_own_work_done_inline_is_not_the_callbacks_cpu_time(sim_host: SimulatedHost) -> None:
    """Loading a syntax or highlighting runs on Sublime's own threads; the
    simulator does it inside the callback that asked, and must not bill it."""
    def spin(seconds: float) -> None:
        end = time.thread_time() + seconds
        while time.thread_time() < end:
            pass

    def highlighting() -> None:
        with _watchdog.sublimes_own_work():
            spin(0.05)

    def nested_then_own(own_ms: float) -> None:  # own work inside own work is exempt once
        with _watchdog.sublimes_own_work(), _watchdog.sublimes_own_work():
            spin(0.05)
        spin(own_ms / 1000)

    sim_host.watchdog.limit_ms = 20
    sim_host.sublime.set_timeout(highlighting)
    assert violations(sim_host) == []
    sim_host.sublime.set_timeout(lambda: spin(0.05))
    assert len(violations(sim_host)) == 1
    sim_host.sublime.set_timeout(lambda: nested_then_own(40))
    assert len(violations(sim_host)) == 1


def test_a_garbage_collection_inside_a_callback_is_not_its_cpu_time(sim_host: SimulatedHost) -> None:
    heap = [[index] for index in range(300_000)]  # takes a full collection tens of ms
    started = time.thread_time()
    gc.collect()
    collection_ms = (time.thread_time() - started) * 1000
    limit_ms = collection_ms / 3
    sim_host.watchdog.limit_ms = limit_ms
    sim_host.sublime.set_timeout(gc.collect)
    assert violations(sim_host, timeout=120) == []  # a long run's heap takes a while to collect

    def spin() -> None:  # twice the limit of CPU time, not collecting
        end = time.thread_time() + 2 * limit_ms / 1000
        while time.thread_time() < end:
            pass

    sim_host.sublime.set_timeout(spin)
    assert len(violations(sim_host, timeout=120)) == 1
    del heap


def test_own_threads_and_the_simulators_blocking_events_do_not_count(sim_host: SimulatedHost) -> None:
    pending: Future[None] = Future()
    own = threading.Thread(target=lambda: pending.result(5))  # a package's own thread may wait
    own.start()

    def from_worker() -> None:
        view = sim_host.window.new_file()  # on_new etc. run on the main thread while the worker waits
        view.run_command("append", {"characters": "x"})

    sim_host.sublime.set_timeout_async(from_worker)
    pending.set_result(None)
    own.join()  # and so may the test's thread
    assert violations(sim_host) == []


def test_a_blocked_callback_fails_the_test_when_the_host_closes(packages_dir: Path) -> None:
    host = SimulatedHost(packages_dir)
    host.sublime.set_timeout(lambda: time.sleep(0.01))
    host.wait_idle()
    with pytest.raises(AssertionError, match=r"blocked Sublime's main or worker thread[\s\S]*time.sleep"):
        host.close()


def test_the_watchdog_can_be_off_for_a_host(packages_dir: Path) -> None:
    with SimulatedHost(packages_dir, watchdog_ms=None) as host:
        host.sublime.set_timeout(lambda: time.sleep(0.01))
        host.wait_idle()


def test_file_system_walks_are_caught_on_the_worker_thread_as_on_the_main_thread(sim_host: SimulatedHost, tmp_path: Path) -> None:
    import glob
    import os

    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.txt").write_text("a")
    walks = {
        "os.walk": lambda: list(os.walk(tmp_path)),
        "Path.walk": lambda: list(tmp_path.walk()),
        "Path.rglob": lambda: list(tmp_path.rglob("*.txt")),
        "glob": lambda: glob.glob(str(tmp_path / "**"), recursive=True),
    }
    for walk in walks.values():
        sim_host.sublime.set_timeout_async(walk)
    found = violations(sim_host)
    assert len(found) == len(walks) and all(v.startswith("sublime-worker") and "(a file-system walk)" in v for v in found)
    sim_host.sublime.set_timeout(walks["os.walk"])
    found = violations(sim_host)
    assert len(found) == 1 and found[0].startswith("sublime-main")
    sim_host.sublime.set_timeout_async(lambda: glob.glob(str(tmp_path / "*")))  # one folder: not a walk
    own = threading.Thread(target=walks["os.walk"])  # a package's own thread may walk
    own.start()
    own.join()
    assert violations(sim_host) == []


def test_big_and_non_regular_file_reads_are_caught_on_either_thread(sim_host: SimulatedHost, tmp_path: Path) -> None:
    import os

    from tests.sublime_sim._watchdog import READ_LIMIT_BYTES

    small, big = tmp_path / "small.txt", tmp_path / "big.bin"
    small.write_bytes(b"x" * READ_LIMIT_BYTES)
    big.write_bytes(b"x" * (READ_LIMIT_BYTES + 1))
    sim_host.sublime.set_timeout_async(lambda: big.read_bytes())
    sim_host.sublime.set_timeout(lambda: open(big, "rb").close())
    found = violations(sim_host)
    assert sorted(v.split(" ")[0] for v in found) == ["sublime-main", "sublime-worker"]
    assert all(f"a file of {READ_LIMIT_BYTES + 1} bytes" in v for v in found)
    sim_host.sublime.set_timeout_async(lambda: small.read_bytes())  # at the limit: fine
    sim_host.sublime.set_timeout_async(lambda: open(big, "ab").close())  # appending reads nothing
    assert violations(sim_host) == []
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        sim_host.sublime.set_timeout_async(lambda: os.stat(fifo) and None)  # a stat does not open it
        assert violations(sim_host) == []
        writer = threading.Thread(target=lambda: fifo.write_bytes(b"x"))  # so the read below can finish
        writer.start()
        sim_host.sublime.set_timeout_async(lambda: fifo.read_bytes())
        found = violations(sim_host)
        writer.join()
        assert len(found) == 1 and "not a regular file" in found[0]


def test_the_simulators_own_walks_and_reads_do_not_count(sim_host: SimulatedHost, tmp_path: Path) -> None:
    from tests.sublime_sim._watchdog import READ_LIMIT_BYTES

    big = tmp_path / "big.txt"
    big.write_text("x" * (READ_LIMIT_BYTES + 1))
    sim_host.sublime.set_timeout(lambda: sim_host.sublime.find_resources("*.sublime-settings"))
    sim_host.sublime.set_timeout(lambda: sim_host.window.open_file(str(big)))
    assert violations(sim_host) == []


def test_the_simulators_resource_index_is_not_the_callbacks_cpu_time(sim_host: SimulatedHost) -> None:
    """A view created soon after a package folder changed walks the index
    again inside the callback (its syntax's settings are found by name):
    Sublime keeps that index natively, on its own thread."""
    package = sim_host.app.packages_dir / "Many"
    for index in range(40):
        folder = package / f"folder{index}"
        folder.mkdir(parents=True)
        for name in range(50):
            (folder / f"file{name}.txt").touch()
    index = sim_host.app.resources
    started = time.thread_time()
    index._walked()
    walk_ms = (time.thread_time() - started) * 1000
    sim_host.watchdog.limit_ms = walk_ms / 3
    (package / "changed").mkdir()  # the kept walk is stale: the next lookup walks again
    sim_host.sublime.set_timeout(lambda: sim_host.sublime.find_resources("*.sublime-settings"))
    assert violations(sim_host) == []
    sim_host.sublime.set_timeout(index._walked)  # the same walk as the callback's own work
    assert len(violations(sim_host)) == 1
