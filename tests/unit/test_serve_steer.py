"""Steer on `qwen serve` (DaemonSession.steer, core/serve/daemon_session.py) against
the fake daemon answering and streaming as 0.24.4 does (probed on the real
one): a steer the running turn takes is handed over once, however often the
daemon's `mid_turn_message_injected` comes (a replay, a reconnect); one that
came after its turn ended is handed over once, as a turn of its own
(`pending_prompt_started`), its echo not shown as another prompt; one sent
while no turn runs is refused (`session_idle`); a daemon that sends endless
injections keeps a bounded memory of them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from aiohttp import web

from qwencompanion_src.core.serve import daemon_session, steer as steer_module
from qwencompanion_src.core.serve.daemon_session import DaemonSession, ServeError
from qwencompanion_src.core.serve.steer import steer_of
from tests.unit import test_daemon_session
from tests.unit.test_daemon_session import SESSION, FakeDaemon, Recorder, chunk, envelope, until, user_chunk

fake = test_daemon_session.fake  # the fake daemon's fixture

CLIENT = "client-1"


def injected(event_id: int, ids: list[str], texts: list[str]) -> bytes:
    # 0.24.4: the running turn's promptId, no originatorClientId (whoever sent it).
    return envelope(event_id, "mid_turn_message_injected",
                    {"sessionId": SESSION, "messages": texts, "messageIds": ids, "items": [{} for _ in ids]},
                    promptId="p-1")


def promoted(event_id: int, prompt_id: str, text: str, client: str = CLIENT) -> bytes:
    return envelope(event_id, "pending_prompt_started", {"sessionId": SESSION, "promptId": prompt_id, "text": text},
                    promptId=prompt_id, originatorClientId=client)



def live(queue: asyncio.Queue[bytes]) -> Callable[[web.Request, web.StreamResponse], object]:
    """Stream what the test puts in `queue`, as it comes."""

    async def events(_request: web.Request, response: web.StreamResponse) -> None:
        while True:
            await response.write(await queue.get())

    return events


async def opened(fake: FakeDaemon) -> tuple[DaemonSession, Recorder, asyncio.Queue[bytes]]:
    queue: asyncio.Queue[bytes] = asyncio.Queue()
    fake.events = live(queue)  # type: ignore[assignment]
    recorder = Recorder()
    session = DaemonSession(fake.address(), SESSION, CLIENT, recorder)
    session.start()
    await until(session.connected.is_set)
    return session, recorder, queue


async def test_a_steer_the_turn_takes_is_handed_over_once(fake: FakeDaemon) -> None:
    session, recorder, queue = await opened(fake)
    try:
        message_id = await session.steer("use the other file")
        assert message_id is not None
        assert fake.steers == [{"message": "use the other file", "messageId": message_id}]
        queue.put_nowait(chunk(1, "reading"))
        queue.put_nowait(injected(2, [message_id], ["use the other file"]))
        queue.put_nowait(injected(3, [message_id], ["use the other file"]))  # said again: not shown again
        queue.put_nowait(chunk(4, "switching"))
        await until(lambda: recorder.texts()[-1:] == ["switching"])
        assert recorder.steers == [("use the other file", False)]
    finally:
        session.close()


async def test_another_clients_steer_the_turn_took_is_shown_too(fake: FakeDaemon) -> None:
    session, recorder, queue = await opened(fake)
    try:
        queue.put_nowait(injected(1, ["theirs-1"], ["from the web shell"]))
        queue.put_nowait(chunk(2, "ok"))
        await until(lambda: recorder.texts() == ["ok"])
        assert recorder.steers == [("from the web shell", False)]
    finally:
        session.close()


async def test_a_steer_after_its_turn_ended_is_handed_over_once_as_a_turn_of_its_own(fake: FakeDaemon) -> None:
    session, recorder, queue = await opened(fake)
    try:
        message_id = await session.steer("and then lint")
        assert message_id is not None
        queue.put_nowait(promoted(1, "someone-elses", "not ours", client="client-9"))
        queue.put_nowait(promoted(2, message_id, "and then lint"))
        queue.put_nowait(user_chunk(3, "and then lint", CLIENT))  # the daemon's echo of the turn it made of it
        queue.put_nowait(chunk(4, "linted"))
        await until(lambda: recorder.texts()[-1:] == ["linted"])
        assert recorder.steers == [("and then lint", True)]
        assert recorder.elsewhere == []  # our own echo: the steer was shown once
    finally:
        session.close()


async def test_a_steer_while_no_turn_runs_is_refused(fake: FakeDaemon) -> None:
    fake.turn_runs = False
    session, recorder, queue = await opened(fake)
    try:
        assert await session.steer("too late") is None
        queue.put_nowait(promoted(1, str(fake.steers[0]["messageId"]), "too late"))  # a stray start of that id
        queue.put_nowait(chunk(2, "next"))
        await until(lambda: recorder.texts() == ["next"])
        assert recorder.steers == []  # a refused steer is not ours to show
    finally:
        session.close()


async def test_a_steer_the_daemon_errs_on_raises(fake: FakeDaemon, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(steer_module, "MAX_MESSAGE_CHARS", 10**6)  # past our own check, to the daemon's
    session, _recorder, _queue = await opened(fake)
    try:
        with pytest.raises(ServeError, match="HTTP 400"):
            await session.steer("x" * 20_000)
    finally:
        session.close()


async def test_a_steer_the_daemon_would_refuse_is_not_sent(fake: FakeDaemon) -> None:
    session, _recorder, _queue = await opened(fake)
    try:
        with pytest.raises(ServeError, match="no steer"):
            await session.steer("x" * 20_000)
        assert fake.steers == []
    finally:
        session.close()


async def test_endless_injections_are_remembered_within_a_bound(fake: FakeDaemon,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(daemon_session, "MAX_STEERS_SHOWN", 5)
    session, recorder, queue = await opened(fake)
    try:
        for n in range(1, 21):
            queue.put_nowait(injected(n, [f"m{n}"], [f"steer {n}"]))
        queue.put_nowait(chunk(21, "done"))
        await until(lambda: recorder.texts() == ["done"])
        assert len(recorder.steers) == 20
        assert len(session._steers_shown) == 5
    finally:
        session.close()


ACTIVE_FILE = {"type": "resource_link", "uri": "file:///p/app.py", "name": "app.py",
               "description": "The user's active file; cursor at line 3, column 1."}
SELECTION = {"type": "resource", "resource": {"uri": "file:///p/app.py#L2-L4", "mimeType": "text/plain", "text": "x = 1"}}
IMAGE = {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo=", "uri": "file:///p/shot.png"}


async def test_a_steer_carries_the_prompts_attachments_as_the_daemon_takes_them(fake: FakeDaemon) -> None:
    session, recorder, queue = await opened(fake)
    try:
        message_id = await session.steer("look here", [ACTIVE_FILE, SELECTION, IMAGE])
        assert message_id is not None
        assert fake.steers == [{
            "message": "look here\n\nLinked: app.py (file:///p/app.py). The user's active file; cursor at line 3, column 1.",
            "messageId": message_id,
            "content": [{"type": "resource", "resource": SELECTION["resource"]},
                        {"type": "image", "data": IMAGE["data"], "mimeType": "image/png"}],
        }]
        queue.put_nowait(injected(1, [message_id], [str(fake.steers[0]["message"])]))
        queue.put_nowait(chunk(2, "seen"))
        await until(lambda: recorder.texts()[-1:] == ["seen"])
        assert recorder.steers == [("look here", False)]  # as the user wrote it, not the link's line
    finally:
        session.close()


@pytest.mark.parametrize("block", [
    {"type": "resource_link", "uri": "file:///p/a.py", "name": "a.py"},
    {"type": "resource", "resource": {"uri": "file:///p/a.py", "text": "a"}},
    {"type": "image", "mimeType": "image/jpeg", "data": "/9j/"},
])
def test_each_kind_of_attachment_has_a_steer(block: dict[str, object]) -> None:
    assert steer_of("and this", [block]) is not None


@pytest.mark.parametrize("block", [
    {"type": "image", "mimeType": "image/svg+xml", "data": "PHN2Zz4="},  # the daemon refuses SVG
    {"type": "image", "mimeType": "image/png", "uri": "file:///p/shot.png"},  # no bytes in it
    {"type": "resource", "resource": {"uri": "file:///p/a.py", "text": "a", "blob": "YQ=="}},  # both
    {"type": "resource", "resource": {"text": "a"}},  # no uri
    {"type": "audio", "mimeType": "audio/wav", "data": "UklGRg=="},
])
def test_an_attachment_the_daemon_takes_no_form_of_has_no_steer(block: dict[str, object]) -> None:
    assert steer_of("and this", [block]) is None


def test_a_steer_past_the_daemons_limits_is_none() -> None:
    assert steer_of("x" * (16 * 1024 + 1), []) is None
    assert steer_of("   ", []) is None
    assert steer_of("", [SELECTION] * 257) is None
    assert steer_of("", [SELECTION]) is not None  # media alone is a steer


LINK = {"type": "resource_link", "uri": "file:///p/app.py", "name": "app.py", "description": "The user's active file."}


def words_filling_the_limit_with(context: list[dict[str, object]], unit: str) -> str:
    """Words that, sent with `context`, make a message of exactly the daemon's
    16,384 UTF-16 units (`unit` one character of one or two units)."""
    rest = 16 * 1024 - len((steer_of("x", context) or pytest.fail("no steer")).message.encode("utf-16-le")) // 2 + 1
    width = len(unit.encode("utf-16-le")) // 2
    return unit * (rest // width) + "x" * (rest % width)


@pytest.mark.parametrize("unit", ["x", "\N{GRINNING FACE}"])
def test_the_limit_counts_the_whole_message_as_the_daemon_does(unit: str) -> None:
    """The daemon counts the message it gets (the linked file's line too) in
    JavaScript's units: a steer is offered up to that limit and not past it."""
    words = words_filling_the_limit_with([LINK], unit)
    at_the_limit = steer_of(words, [LINK])
    assert at_the_limit is not None and len(at_the_limit.message.encode("utf-16-le")) // 2 == 16 * 1024
    assert steer_of(words + unit, [LINK]) is None
