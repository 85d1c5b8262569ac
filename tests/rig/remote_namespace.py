"""A simulated remote machine for the CLI: a network namespace of its own
(its 127.0.0.1 is not the editor's) and a mount namespace in which the
workspace is bind-mounted at another path, as in a dev container.

Ports reach the editor's machine only through forwards, as with `ssh -R`:
inside, a TCP listener on 127.0.0.1:<port> hands each connection to a Unix
socket; outside, `UnixToTcp` hands it on to 127.0.0.1:<port> (a Unix socket
path crosses network namespaces, a TCP port does not).

    unshare -n -m -- python tests/rig/remote_namespace.py \\
        --bind SRC DST --forward PORT SOCKET ... -- COMMAND...

Needs root or unprivileged user namespaces; `available()` says whether it works here.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path


def _unshare() -> list[str]:
    """`unshare` for a new network and mount namespace; without root, inside a
    new user namespace too (where this process counts as root)."""
    return ["unshare", "-n", "-m", *(["-r"] if os.geteuid() != 0 else []), "--"]


def available() -> str | None:
    """None when namespaces can be made here, else why not."""
    for tool in ("unshare", "ip", "mount"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    probe = subprocess.run([*_unshare(), "ip", "link", "set", "lo", "up"],
                           capture_output=True, text=True, timeout=30, check=False)
    return None if probe.returncode == 0 else f"cannot make namespaces here: {probe.stderr.strip()}"


def command(binds: list[tuple[Path, Path]], forwards: list[tuple[int, Path]], argv: list[str]) -> list[str]:
    """The argv that runs `argv` inside a fresh simulated remote."""
    words = [*_unshare(), sys.executable, str(Path(__file__).resolve())]
    for source, target in binds:
        words += ["--bind", str(source), str(target)]
    for port, path in forwards:
        words += ["--forward", str(port), str(path)]
    return [*words, "--", *argv]


def _pipe(source: socket.socket, target: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            target.sendall(data)
    except OSError:
        pass
    finally:
        for end in (source, target):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)


def _join(accepted: socket.socket, connect: socket.socket) -> None:
    for source, target in ((accepted, connect), (connect, accepted)):
        threading.Thread(target=_pipe, args=(source, target), daemon=True).start()


class UnixToTcp:
    """Outside: connections to the Unix socket `path` go on to 127.0.0.1:`port`."""

    def __init__(self, path: Path, port: int) -> None:
        self.path, self.port = path, port
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(path))
        self._server.listen(16)
        self._thread = threading.Thread(target=self._serve, daemon=True, name=f"unix-to-tcp {port}")
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                accepted, _ = self._server.accept()
            except OSError:
                return  # closed
            try:
                onward = socket.create_connection(("127.0.0.1", self.port), timeout=10)
            except OSError:
                accepted.close()
                continue
            onward.settimeout(None)
            _join(accepted, onward)

    def close(self) -> None:
        self._server.close()
        self.path.unlink(missing_ok=True)


def _end_with_parent() -> None:
    """Linux's PR_SET_PDEATHSIG: this forward ends when the process that became the CLI does."""
    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)
    if os.getppid() == 1:  # the parent was already gone
        raise SystemExit(0)


def _serve_tcp(port: int, path: str) -> None:
    """Inside: 127.0.0.1:`port` leads to the Unix socket `path`."""
    _end_with_parent()
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen(16)
    while True:
        accepted, _ = server.accept()
        onward = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            onward.connect(path)
        except OSError:
            accepted.close()
            continue
        _join(accepted, onward)


def _wait_listening(port: int) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.02)
    raise SystemExit(f"the forward of port {port} did not start")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bind", nargs=2, action="append", default=[], metavar=("SRC", "DST"))
    parser.add_argument("--forward", nargs=2, action="append", default=[], metavar=("PORT", "SOCKET"))
    parser.add_argument("--serve-tcp", nargs=2, metavar=("PORT", "SOCKET"))
    parser.add_argument("argv", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    if options.serve_tcp:
        _serve_tcp(int(options.serve_tcp[0]), options.serve_tcp[1])
        return
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    for source, target in options.bind:
        subprocess.run(["mount", "--bind", source, target], check=True)
    for port, path in options.forward:
        # Children of this process (the CLI's process group): they end with it.
        subprocess.Popen([sys.executable, __file__, "--serve-tcp", port, path], stdin=subprocess.DEVNULL)
        _wait_listening(int(port))
    argv = options.argv[1:] if options.argv[:1] == ["--"] else options.argv
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main()
