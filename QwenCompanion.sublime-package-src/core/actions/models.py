"""The models the CLI offers, asked the way the SDK asks: a stream-json
`qwen` answers the `get_available_models` control request (0.24.4: the
models of `modelProviders` for the current auth type; none when the model
comes only from the environment)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

from ..cli.processes import close_and_end, end_group
from .process import EXIT_GRACE, TERM_GRACE, Lines, spawn

MODEL_FLAGS = ("--input-format", "stream-json", "--output-format", "stream-json")
STDERR_LINES = 5


@dataclass(frozen=True)
class Model:
    id: str
    label: str


class ModelsUnavailable(Exception):
    pass


async def available_models(argv: list[str], cwd: str, env: dict[str, str], timeout: float) -> list[Model]:
    """Start `argv` (qwen with MODEL_FLAGS), ask, end it; `ModelsUnavailable` with the reason."""
    try:
        process = await spawn(argv, cwd, env)
    except OSError as error:
        raise ModelsUnavailable(f"could not start {argv[0]}: {error.strerror or error}") from None
    try:
        assert process.stdin is not None and process.stdout is not None
        for request_id, subtype in (("init", "initialize"), ("models", "get_available_models")):
            request = {"type": "control_request", "request_id": request_id, "request": {"subtype": subtype}}
            process.stdin.write((json.dumps(request) + "\n").encode("utf-8"))
        await process.stdin.drain()
        return await asyncio.wait_for(_answer(Lines(process.stdout)), timeout)
    except TimeoutError:
        raise ModelsUnavailable(f"qwen did not answer within {timeout:g} s") from None
    except ModelsUnavailable as problem:
        await end_group(process, TERM_GRACE)
        stderr = (await process.stderr.read()).decode("utf-8", "replace") if process.stderr else ""
        tail = "\n".join(stderr.strip().splitlines()[-STDERR_LINES:])
        raise ModelsUnavailable(f"{problem}:\n{tail}" if tail else str(problem)) from None
    finally:
        # It would wait for a prompt: its input closed, it ends by itself
        # (a SIGKILL now could leave its lock on the extension store, see end_group).
        await close_and_end(process, EXIT_GRACE, TERM_GRACE)
        await process.wait()


async def _answer(lines: Lines) -> list[Model]:
    while (line := await lines.next()) is not None:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict) or message.get("type") != "control_response":
            continue
        response = message.get("response")
        if not isinstance(response, dict) or response.get("request_id") != "models":
            continue
        if response.get("subtype") != "success":
            raise ModelsUnavailable(f"qwen refused: {response.get('error') or 'no reason given'}")
        models = (response.get("response") or {}).get("models") or []
        return [Model(str(m["id"]), str(m.get("label") or m["id"])) for m in models if isinstance(m, dict) and m.get("id")]
    raise ModelsUnavailable("qwen ended before answering")
