"""A grandchild for the scripted CLIs: a process in their process group that
only ending the whole group ends.

    python tests/rig/grandchild.py PID_FILE

It never reads the input it shares with its parent (end of input does not end
it), ignores SIGHUP, and writes nothing but one line to its parent's pipe
once it runs; like a relaunched node or a tool's
child, it outlives a parent that is killed alone. PID_FILE (written by the
parent, see `start`) is on its command line so a test's clean-up can tell it
from a process that reused its pid. It ends by itself after LIFETIME seconds.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

LIFETIME = 120.0
RUNNING = "running"


def start(pid_file: str) -> None:
    """Start the grandchild in the caller's process group; its pid is appended
    to `pid_file` before this returns, once it runs. Popen returns while the
    kernel may still be loading the new program, when /proc/PID/cmdline reads
    empty (seen in most reads right after Popen on a loaded machine), and a
    test would not know the grandchild for its own."""
    child = subprocess.Popen([sys.executable, __file__, pid_file], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert child.stdout is not None
    child.stdout.readline()  # RUNNING, or "" if it died
    child.stdout.close()
    with open(pid_file, "a", encoding="utf-8") as out:
        out.write(f"{child.pid}\n")


def main() -> None:
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    print(RUNNING, flush=True)
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # writes nothing more, holds no pipe
    time.sleep(LIFETIME)


if __name__ == "__main__":
    main()
