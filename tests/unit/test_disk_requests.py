"""DiskRequestHandler (the agent's file requests when the editor's hook is not
installed) are bounded as the editor's are: a FIFO is refused at once and
never holds the chat's loop, a file too large to send whole is refused with
the reason, and one line of it is read without loading it."""

from __future__ import annotations

import asyncio
import os
import threading
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp.schema import ReadTextFileRequest, WriteTextFileRequest

from qwencompanion_src.core.chat.requests.request_handler import DiskRequestHandler
from qwencompanion_src.core.files.agent_files import MAX_FILE_BYTES

WAIT = 10.0


def answer(folder: Path, request: Any) -> Any:
    """The request's answer (or error), from a loop of its own; a read that
    never returns fails the test instead of hanging it."""
    outcome: list[Any] = []
    requests = DiskRequestHandler(lambda: [str(folder)])

    def run() -> None:
        method = requests.read_text_file if isinstance(request, ReadTextFileRequest) else requests.write_text_file
        try:
            outcome.append(asyncio.run(method(request)))
        except Exception as error:
            outcome.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(WAIT)
    assert outcome, "the request never got an answer"
    return outcome[0]


def read(folder: Path, path: Path, line: int | None = None, limit: int | None = None) -> Any:
    return answer(folder, ReadTextFileRequest(session_id="s", path=str(path), line=line, limit=limit))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on Windows")
def test_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    try:
        error = read(tmp_path, fifo)
    finally:
        os.close(os.open(fifo, os.O_RDWR | os.O_NONBLOCK))  # frees a read stuck on it (the defect)
    assert isinstance(error, RequestError) and "not a regular file" in str(error.data)
    assert isinstance(answer(tmp_path, WriteTextFileRequest(session_id="s", path=str(fifo), content="x")), RequestError)


def test_a_file_too_large_is_refused_whole_and_read_in_parts(tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    with big.open("wb") as out:
        row = b"." * 1023 + b"\n"
        out.write(row * (MAX_FILE_BYTES // len(row) + 1))
        out.write(b"last\n")
    error = read(tmp_path, big)
    assert isinstance(error, RequestError) and "Refused" in str(error) and "line and limit" in str(error.data)
    tracemalloc.start()
    try:
        content = read(tmp_path, big, line=MAX_FILE_BYTES // 1024 + 2, limit=1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert content.content == "last\n"
    assert peak < MAX_FILE_BYTES // 4  # the file is never held whole


def test_reads_and_writes_keep_to_the_folders_and_the_files_bytes(tmp_path: Path) -> None:
    latin = tmp_path / "latin.txt"
    latin.write_bytes("café\r\n".encode("latin-1"))
    assert read(tmp_path, latin).content == "café\n"
    assert answer(tmp_path, WriteTextFileRequest(session_id="s", path=str(latin), content="thé\n")) is None
    assert latin.read_bytes() == "thé\r\n".encode("latin-1")
    outside = read(tmp_path / "sub", latin)
    assert isinstance(outside, RequestError) and "outside the window's folders" in str(outside.data)
