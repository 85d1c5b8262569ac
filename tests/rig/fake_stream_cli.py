"""A scripted `qwen` in stream-json mode, for faults the real CLI never makes.

    python tests/rig/fake_stream_cli.py SCRIPT.json [CLI FLAGS...]

SCRIPT (all keys optional):
    {"steps": [STEP, ...],   played after the prompt arrives; then a success result
     "log": "file",          its argv, every message received, one JSON a line, and
                             {"result_ns": monotonic ns} as the success result is written
     "model": "name",        the model the init message names without --model (with it, that one, as the CLI does)
     "models": [{"id", "label"}, ...],   what get_available_models answers
     "grandchild": "pid file",   start tests/rig/grandchild.py first (its pid appended to the file)
     "store_lock": "dir",        hold it as qwen holds its extension store's (tests/rig/store_lock.py)
     "ignore_sigterm": true}     a CLI that SIGTERM does not end

STEP:
    {"text": "abc", "chunks": 3, "delay": 0}   the text as partial messages (text_delta)
    {"whole": "abc"}                           a whole assistant message, no partials
    {"tool": "edit", "input": {...}}           ask permission (can_use_tool), wait for the answer
    {"stall": seconds}                         wait
    {"die": code}                              exit at once, with "dying" on stderr
    {"line": n}                                one text delta whose line is n bytes long
    {"stderr": n}                              one line of n bytes on stderr (n = 0: a line without end),
                                               written by a thread of its own while the steps go on
    {"result": "error", "message": "..."}      an error result (ends the run)
    {"result": "error", "error": "..."}        one as 0.24.4 fails without auth: no text, error {message}
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from grandchild import start as start_grandchild  # tests/rig is this script's folder
from store_lock import hold as hold_store_lock


def out(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def flood_stderr(size: int) -> None:
    chunk = b"e" * 1_048_576
    written = 0
    try:
        while size == 0 or written < size:
            piece = chunk if size == 0 else chunk[: size - written]
            sys.stderr.buffer.write(piece)
            sys.stderr.buffer.flush()
            written += len(piece)
        sys.stderr.buffer.write(b"\n")
        sys.stderr.buffer.flush()
    except OSError:
        pass  # the reader is gone


def main() -> None:
    script = json.loads(Path(sys.argv[1]).read_text())
    if script.get("store_lock"):
        hold_store_lock(Path(script["store_lock"]))
    if script.get("ignore_sigterm"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if script.get("grandchild"):
        start_grandchild(script["grandchild"])
    log_path = script.get("log")

    def log(message: Any) -> None:
        if log_path:
            with open(log_path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(message) + "\n")

    log({"argv": sys.argv[2:]})
    text: list[str] = []
    for line in sys.stdin:
        message = json.loads(line)
        log(message)
        if message.get("type") == "control_request":
            subtype = message["request"]["subtype"]
            answer = {"subtype": subtype, "models": script.get("models", [])} if subtype == "get_available_models" else {}
            out({"type": "control_response",
                 "response": {"subtype": "success", "request_id": message["request_id"], "response": answer}})
        elif message.get("type") == "user":
            break
    else:
        return
    flags = sys.argv[2:]
    model = flags[flags.index("--model") + 1] if "--model" in flags else script.get("model", "fake-model")
    out({"type": "system", "subtype": "init", "session_id": "s1", "model": model,
         "tools": ["read_file"]})
    for step in script.get("steps", []):
        if "text" in step:
            out({"type": "stream_event", "event": {"type": "message_start"}})
            value, count = step["text"], max(1, step.get("chunks", 1))
            size = -(-len(value) // count)
            for start in range(0, len(value), size):
                out({"type": "stream_event",
                     "event": {"type": "content_block_delta", "delta": {"type": "text_delta", "text": value[start:start + size]}}})
                time.sleep(step.get("delay", 0))
            text.append(value)
        elif "whole" in step:
            out({"type": "assistant", "message": {"content": [{"type": "text", "text": step["whole"]}]}})
            text.append(step["whole"])
        elif "tool" in step:
            out({"type": "control_request", "request_id": "perm-1",
                 "request": {"subtype": "can_use_tool", "tool_name": step["tool"], "input": step.get("input", {})}})
            answer = json.loads(sys.stdin.readline())
            log(answer)
        elif "stall" in step:
            time.sleep(step["stall"])
        elif "line" in step:
            delta = {"type": "stream_event", "event": {"type": "content_block_delta",
                                                       "delta": {"type": "text_delta", "text": ""}}}
            head, tail = json.dumps(delta).rsplit('""', 1)
            filler = step["line"] - len(head) - len(tail) - 2
            for piece in [head + '"'] + ["x" * 1_048_576] * (filler // 1_048_576) + ["x" * (filler % 1_048_576), '"' + tail + "\n"]:
                sys.stdout.write(piece)
            sys.stdout.flush()
        elif "stderr" in step:
            threading.Thread(target=flood_stderr, args=(step["stderr"],), daemon=True).start()
        elif "die" in step:
            sys.stderr.write("dying\n")
            sys.stderr.flush()
            sys.exit(step["die"])
        elif "result" in step:
            failure = {"error": {"message": step["error"]}} if "error" in step else {"result": step.get("message", "")}
            out({"type": "result", "subtype": "error_during_execution", "is_error": True, **failure})
            return
    log({"result_ns": time.monotonic_ns()})  # when the result line is written (the bench's clock)
    out({"type": "result", "subtype": "success", "is_error": False, "result": "".join(text), "num_turns": 1})
    sys.stdin.read()  # like the CLI: wait for stdin to close


if __name__ == "__main__":
    main()
