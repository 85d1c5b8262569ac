"""A few thousand generated hostile requests against the live HTTP endpoint.

A seeded generator (the same requests every run) sends random bytes, truncated
JSON, wrong JSON-RPC shapes, wrong types in tool arguments, huge strings,
unknown sessions and headers in odd cases and encodings, each on its own
connection. Every answer is a 4xx (or a closed connection for what is not
HTTP) or a proper result, and leaks no traceback or source path; afterwards
the server answers a normal request, nothing was logged at ERROR and memory
came back.
"""

from __future__ import annotations

import gc
import json
import random
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

from qwencompanion_src.core.companion.server import ServerOptions

from .conftest import Answer, assert_nothing_leaks, exchange, new_session, ping_ok, post

SEED = 20250701
BODY_LIMIT = 2 * 1024 * 1024  # small, so over-limit cases stay cheap
MEMORY_BOUND = 16 * 1024 * 1024  # generous: what may stay allocated after it all
METHODS = ["initialize", "ping", "tools/list", "tools/call", "notifications/initialized", "resources/list", ""]
ALPHABET = "aZ09 _-/.:\"'\\\n\t\r\x00\x7f\u00e9\u2028\ud83d\ude00\ufeff{}[],"


def random_text(rng: random.Random, longest: int = 40) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, longest)))


def random_json(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(8 if depth < 3 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 1, 2**31, -(2**63), 10**30, rng.randint(-1000, 1000)])
    if kind == 3:
        return rng.choice([0.5, -0.0, 1e308, 1e-308, rng.random()])
    if kind in (4, 5):
        return rng.choice([random_text(rng), rng.choice(METHODS), "/abs/path.py", "2.0"])
    if kind == 6:
        return [random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    keys = ["jsonrpc", "id", "method", "params", "name", "arguments", "filePath", "newContent", random_text(rng, 8)]
    return {rng.choice(keys): random_json(rng, depth + 1) for _ in range(rng.randint(0, 5))}


def message(method: str, params: Any = None, request_id: Any = 1) -> bytes:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        body["params"] = params
    return json.dumps(body).encode()


def garbage(rng: random.Random, port: int, session: str) -> bytes:
    """Not HTTP at all, or an HTTP start followed by noise."""
    noise = rng.randbytes(rng.randint(0, 2000))
    prefix = rng.choice([b"", b"POST /mcp HTTP/1.1\r\n", b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n", b"\r\n\r\n"])
    return prefix + noise + b"\r\n\r\n"


def odd_headers(rng: random.Random, port: int, session: str) -> bytes:
    """A valid ping whose headers come in odd cases, encodings and shapes."""
    body = message("ping")
    headers = [
        ("Host", f"127.0.0.1:{port}"),
        ("Authorization", f"Bearer {'0123456789abcdef' * 4}"),
        ("Mcp-Session-Id", session),
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("Content-Length", str(len(body))),
    ]
    lines = [f"{_odd_case(rng, n)}: {v}".encode() for n, v in headers]
    for _ in range(rng.randint(1, 4)):
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(_extra_header_lines(rng)))
    return b"POST /mcp HTTP/1.1\r\n" + b"\r\n".join(lines) + b"\r\n\r\n" + body


def _odd_case(rng: random.Random, name: str) -> str:
    return "".join(c.upper() if rng.random() < 0.5 else c.lower() for c in name)


def _extra_header_lines(rng: random.Random) -> list[bytes]:
    return [
        b"Mcp-Protocol-Version: " + random_text(rng).encode("utf-8", "surrogatepass"),
        b"Mcp-Session-Id: " + rng.randbytes(16),
        b"X-Latin: caf\xe9",
        b"X-Utf8: caf\xc3\xa9 \xe2\x80\xa8",
        b"X-Control: a\x01b",
        b"X-Long: " + b"x" * rng.choice([100, 9000]),
        b"Accept: */*",
        b"Content-Type: text/plain; charset=utf-16",
        b"Transfer-Encoding: chunked",
        b"Content-Length: " + str(rng.randint(-5, 10**12)).encode(),
        b"Expect: 100-continue",
        b" folded-continuation",
        b"No-Colon-Here",
        b": empty-name",
        b"Origin: null",
        b"Authorization: Basic Zm9vOmJhcg==",
        b"Host: evil.example",
    ]


def truncated_json(rng: random.Random, port: int, session: str) -> bytes:
    full = rng.choice([
        message("ping"),
        message("tools/list"),
        message("tools/call", {"name": "openDiff", "arguments": {"filePath": "/w/a.py", "newContent": random_text(rng, 200)}}),
        message("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}),
    ])
    cut = full[: rng.randrange(len(full))]
    return post(port, cut, session=rng.choice([session, None]))


def rpc_shapes(rng: random.Random, port: int, session: str) -> bytes:
    """Random JSON, JSON-RPC-looking objects with wrong types, batches."""
    shape = rng.randrange(4)
    if shape == 0:
        payload: Any = random_json(rng)
    elif shape == 1:
        payload = {
            field: random_json(rng)
            for field in ("jsonrpc", "id", "method", "params", "result", "error")
            if rng.random() < 0.6
        }
    elif shape == 2:
        payload = {"jsonrpc": "2.0", "id": random_json(rng), "method": rng.choice(METHODS), "params": random_json(rng)}
    else:
        payload = [random_json(rng) for _ in range(rng.randint(0, 3))]
    return post(port, json.dumps(payload).encode(), session=rng.choice([session, session, None]))


def tool_arguments(rng: random.Random, port: int, session: str) -> bytes:
    """tools/call with wrong types, missing and extra fields in its arguments."""
    arguments: Any = {
        key: rng.choice([random_json(rng), random_text(rng), "/abs/file.py", True, 3])
        for key in ("filePath", "newContent", "suppressNotification", random_text(rng, 6))
        if rng.random() < 0.7
    }
    if rng.random() < 0.15:
        arguments = random_json(rng)
    params: dict[str, Any] = {"name": rng.choice(["openDiff", "closeDiff", random_text(rng, 10), 7, None])}
    if rng.random() < 0.9:
        params["arguments"] = arguments
    return post(port, message("tools/call", params, random_json(rng)), session=session)


def unknown_sessions(rng: random.Random, port: int, session: str) -> bytes:
    fake = rng.choice([session[:-1] + "0", "0" * 32, random_text(rng, 64), session.upper(), session + " x"])
    method = rng.choice(["POST", "GET", "DELETE"])
    value = fake.encode("utf-8", "surrogatepass").replace(b"\r", b"").replace(b"\n", b"")
    body = message("ping") if method == "POST" else b""
    return (
        f"{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {'0123456789abcdef' * 4}\r\n"
        f"Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
    ).encode() + b"Mcp-Session-Id: " + value + b"\r\n\r\n" + body


def huge(rng: random.Random, port: int, session: str) -> bytes:
    big = "y" * rng.choice([100_000, 1_500_000])
    choice = rng.randrange(6)
    if choice == 0:
        return post(port, message(big[:100_000]), session=session)
    if choice == 1:
        return post(port, message("ping", request_id=big[:100_000]), session=session)
    if choice == 2:
        arguments = {"filePath": "/" + big, "newContent": "x"}
        return post(port, message("tools/call", {"name": "openDiff", "arguments": arguments}), session=session)
    if choice == 3:
        arguments = {"filePath": "/w/big.py", "newContent": big}
        return post(port, message("tools/call", {"name": "openDiff", "arguments": arguments}), session=session)
    if choice == 4:  # over the limit, announced
        return post(port, b"[" + b"1," * BODY_LIMIT + b"1]", session=session)
    chunk = b"z" * (BODY_LIMIT + 10)  # over the limit, chunked
    head = post(port, b"", {"Transfer-Encoding": "chunked"}, session=session).split(b"\r\n\r\n")[0]
    head = head.replace(b"Content-Length: 0\r\n", b"")
    return head + b"\r\n\r\n" + f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n0\r\n\r\n"


def numbers_and_nesting(rng: random.Random, port: int, session: str) -> bytes:
    body = rng.choice([
        b"[" * 100_000 + b"]" * 100_000,
        b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
        b'{"jsonrpc":"2.0","id":1e999,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":NaN,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":-0,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}',
        b'\xef\xbb\xbf{"jsonrpc":"2.0","id":1,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":1,"method":"ping"}' + b" " * 1000 + b"x",
        b'{"jsonrpc":"2.0","id":1,"method":"ping","jsonrpc":"1.0"}',
        b'{"jsonrpc":"2.0","id":1,"method":"\xff\xfe"}',
    ])
    return post(port, body, session=session)


Generator = Callable[[random.Random, int, str], bytes]
PLAN: list[tuple[Generator, int]] = [
    (garbage, 250),
    (odd_headers, 400),
    (truncated_json, 400),
    (rpc_shapes, 800),
    (tool_arguments, 700),
    (unknown_sessions, 300),
    (huge, 24),
    (numbers_and_nesting, 60),
]


def requests(port: int, session: str) -> Iterator[tuple[str, bytes]]:
    rng = random.Random(SEED)
    for generator, count in PLAN:
        for _ in range(count):
            yield generator.__name__, generator(rng, port, session)


def check(kind: str, answer: Answer) -> None:
    if answer.status is None:
        # Only what is not a well-formed HTTP request may go unanswered.
        assert kind in ("garbage", "odd_headers", "huge"), kind
        return
    assert answer.status < 500, f"{kind}: {answer.text[:400]}"
    assert_nothing_leaks(answer.text)


async def test_thousands_of_hostile_requests_leave_the_server_healthy(
    live_server: Callable[..., Any], error_log: Callable[[], list[str]]
) -> None:
    server = await live_server(ServerOptions(max_body_bytes=BODY_LIMIT))
    session = await new_session(server)
    gc.collect()
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        statuses: dict[int | None, int] = {}
        count = 0
        for kind, data in requests(server.port, session):
            answer = await exchange(server.port, data)
            check(kind, answer)
            statuses[answer.status] = statuses.get(answer.status, 0) + 1
            count += 1
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - baseline
    finally:
        tracemalloc.stop()

    assert count > 2500
    assert statuses.get(200, 0) > 100 and statuses.get(400, 0) > 500, statuses  # both paths were exercised
    assert grown < MEMORY_BOUND, f"{grown} bytes still allocated"
    assert len(server.sessions) <= server.options.max_sessions
    await ping_ok(server, session if server.sessions.get(session) else await new_session(server))
    assert error_log() == []
