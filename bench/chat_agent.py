"""The recorded agent both chat clients are fed: answers `initialize` and
`session/new` as qwen 0.24.4 does (abridged; each new session its own id),
and streams a prompt's answer as `agent_message_chunk`s of its session. The prompt's text says how:

    "stream N RATE SIZE"   N chunks of SIZE characters, RATE a second (0: at once)

Every chunk starts with "§<CLOCK_MONOTONIC ns when written>§", so a client
on this machine can tell how long a chunk took to reach its view; every
20th ends a paragraph.
"""

from __future__ import annotations

import json
import sys
import time

SESSION = "bench-session"
NEW_SESSION = {
    "sessionId": SESSION,
    "models": {"currentModelId": "$runtime|openai|fake-model(openai)", "availableModels": [
        {"modelId": "$runtime|openai|fake-model(openai)", "name": "fake-model", "_meta": {"contextLimit": 200000}}]},
    "modes": {"currentModeId": "default", "availableModes": [
        {"id": "plan", "name": "Plan"}, {"id": "default", "name": "Default"}, {"id": "yolo", "name": "YOLO"}]},
}
INITIALIZE = {
    "protocolVersion": 1,
    "agentInfo": {"name": "qwen-code", "title": "Qwen Code", "version": "0.24.4"},
    "authMethods": [{"id": "openai", "name": "Use OpenAI API key"}],
    "agentCapabilities": {"loadSession": True, "promptCapabilities": {"image": True, "embeddedContext": True}},
}
CHUNK_HEAD = ('{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"%s",'
               '"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"')
CHUNK_TAIL = '"}}}}\n'


def write(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def stream(request_id: object, session: str, count: int, rate: float, size: int) -> None:
    out = sys.stdout
    head = CHUNK_HEAD % session
    filler = "x" * max(0, size - 30)
    start = time.monotonic()
    for index in range(count):
        if rate:
            wait = start + index / rate - time.monotonic()
            if wait > 0:
                time.sleep(wait)
        ending = "\\n\\n" if index % 20 == 19 else " "
        out.write(f"{head}§{time.monotonic_ns()}§{filler}{ending}{CHUNK_TAIL}")
        if rate:
            out.flush()
    out.flush()
    write({"jsonrpc": "2.0", "id": request_id, "result": {"stopReason": "end_turn"}})


def main() -> None:
    sessions = 0
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue
        if method == "initialize":
            write({"jsonrpc": "2.0", "id": request_id, "result": INITIALIZE})
        elif method == "session/new":
            sessions += 1
            session = SESSION if sessions == 1 else f"{SESSION}-{sessions}"
            write({"jsonrpc": "2.0", "id": request_id, "result": {**NEW_SESSION, "sessionId": session}})
        elif method == "session/prompt":
            text = "".join(b.get("text", "") for b in message["params"]["prompt"] if b.get("type") == "text")
            _, count, rate, size = text.split()
            stream(request_id, str(message["params"]["sessionId"]), int(count), float(rate), int(size))
        else:
            write({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}})


if __name__ == "__main__":
    main()
