"""One action as one run of `qwen` in stream-json mode, read-only.

The protocol (see the README): the client writes an `initialize` control
request and the prompt as a `user` message on stdin; the CLI writes one
JSON object per line: `system`, `stream_event` (partial text), `assistant`,
`control_request` (`can_use_tool`: a tool wants permission) and last a
`result`. Every permission is denied here, and editing tools are excluded
when the CLI starts, so nothing the run does touches a file.

Lines are split without a length limit (an answer holding a whole file is
one line); the process runs in a group of its own and the whole group is
ended when the run ends, is cancelled or times out.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..cli.processes import close_and_end, end_group_soon
from ..cli.qwen_home import SIGN_IN_HINT
from ..json_types import JsonObject
from .process import EXIT_GRACE, MAX_LINE_BYTES, TERM_GRACE, Invocation, Lines, spawn

log = logging.getLogger(__name__)

STREAM_FLAGS = (
    "--input-format", "stream-json", "--output-format", "stream-json", "--include-partial-messages",
    "--approval-mode", "default",
)
# Tools that change files or run programs (the CLI's names): never offered.
# `monitor` runs a command as the shell does; `workflow`, `create_sub_session`
# and `team_create` start other agents, which could edit; `cron_delete`
# changes the user's scheduled jobs as `cron_create` would.
EDITING_TOOLS = (
    "edit", "write_file", "notebook_edit", "run_shell_command", "exec", "monitor", "save_memory", "agent",
    "workflow", "create_sub_session", "team_create", "enter_worktree", "exit_worktree", "cron_create",
    "cron_delete", "image_gen",
)
STDERR_TAIL_LINES = 20
STDERR_LINE_BYTES = 2000  # what is kept of one line of qwen's stderr
# The answer as a whole is bounded too. Longer: the run fails, saying so.
MAX_ANSWER_CHARS = 32 * 1024 * 1024
INITIALIZE_TIMEOUT = 30.0
STDERR_GRACE = 1.0
DENIAL = "Qwen Code quick actions are read-only: the editor applies changes after the user reviews them."



NO_AUTH_TYPE = "No auth type is selected"  # how 0.24.4's result error begins when nothing is configured

def run_argv(qwen_argv: list[str], model: str | None) -> list[str]:
    argv = [*qwen_argv, *STREAM_FLAGS, "--exclude-tools", ",".join(EDITING_TOOLS)]
    return [*argv, "--model", model] if model else argv


@dataclass
class RunOutcome:
    kind: str  # answered | cancelled | failed | timed_out
    text: str = ""  # the answer (streamed text, or the result's)
    error: str = ""  # what went wrong, for the user
    model: str = ""  # the model the CLI used, when it said
    denied: list[str] = field(default_factory=list)  # tools the run asked for and was refused


class TooMuch(Exception):
    """qwen sent more than a run takes: the run ends, failed, with this message."""


class ActionRun:
    """Runs on an asyncio loop; `on_text` gets each piece of the answer,
    `on_model` the model the CLI says it uses."""

    def __init__(
        self, invocation: Invocation, on_text: Callable[[str], None], timeout: float,
        on_model: Callable[[str], None] | None = None,
    ) -> None:
        self.invocation = invocation
        self.on_text = on_text
        self.on_model = on_model
        self.timeout = timeout
        self.pid: int | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._cancelled = False
        self._text: list[str] = []
        self._size = 0  # characters in `_text`
        self._new_message = False
        self._stderr: list[str] = []
        self._outcome = RunOutcome("failed")
        self._initialized: asyncio.Future[None] | None = None

    # --- lifecycle -------------------------------------------------------------

    async def run(self) -> RunOutcome:
        try:
            await asyncio.wait_for(self._run(), self.timeout)
        except TimeoutError:
            self._outcome = RunOutcome("timed_out", self._answer(), f"stopped after {self.timeout:g} s")
        except asyncio.CancelledError:  # the loop is stopping (unload): no wait for the CLI to end by itself
            self._cancelled = True
            self._outcome = RunOutcome("cancelled", self._answer())
            raise
        except OSError as error:
            self._outcome = RunOutcome("failed", error=f"could not start {self.invocation.argv[0]}: {error.strerror or error}")
        except TooMuch as error:
            self._outcome = RunOutcome("failed", self._answer(), str(error), self._outcome.model, self._outcome.denied)
        finally:
            await self._end()
        if self._cancelled:
            self._outcome.kind = "cancelled"
        return self._outcome

    def cancel(self) -> None:
        """End the run now (on the loop's thread): SIGTERM, then SIGKILL if it lingers."""
        self._cancelled = True
        process = self._process
        if process is not None:
            end_group_soon(process.pid, asyncio.get_running_loop(), TERM_GRACE, lambda: process.returncode is None)

    async def _run(self) -> None:
        self._process = await spawn(self.invocation.argv, self.invocation.cwd, self.invocation.env)
        self.pid = self._process.pid
        if self._cancelled:
            self.cancel()
        log.info("action: qwen started, pid %d", self.pid)
        stderr = asyncio.create_task(self._read_stderr())
        self._initialized = asyncio.get_running_loop().create_future()
        await self._write({"type": "control_request", "request_id": "init", "request": {"subtype": "initialize"}})
        reading = asyncio.create_task(self._read_stdout())
        try:
            ready: set[asyncio.Future[Any]] = {self._initialized, reading}
            await asyncio.wait(ready, timeout=INITIALIZE_TIMEOUT, return_when=asyncio.FIRST_COMPLETED)
            if not reading.done():  # the CLI is ready (or slow to say so): send the prompt
                await self._write({
                    "type": "user", "session_id": str(uuid.uuid4()), "parent_tool_use_id": None,
                    "message": {"role": "user", "content": self.invocation.prompt},
                })
            finished = await reading
        finally:
            reading.cancel()
            await asyncio.gather(reading, return_exceptions=True)
        await self._end()  # the CLI waits for more input after its result
        with contextlib.suppress(TimeoutError):  # a grandchild keeps stderr open
            await asyncio.wait_for(stderr, STDERR_GRACE)
        if not finished and not self._cancelled:
            code = await self._process.wait()
            tail = "\n".join(self._stderr[-STDERR_TAIL_LINES:])
            self._outcome = RunOutcome(
                "failed", self._answer(), f"qwen ended (exit code {code}) before answering" + (f":\n{tail}" if tail else "")
            )

    async def _end(self) -> None:
        process = self._process
        if process is None:
            return
        # Closing stdin ends the CLI (a run cut short does not wait for that);
        # whatever it started goes with it.
        await close_and_end(process, 0 if self._cancelled else EXIT_GRACE, TERM_GRACE)
        if process.returncode is None:
            try:
                await asyncio.wait_for(process.wait(), 5.0)
            except TimeoutError:
                log.warning("action: qwen pid %d did not exit after it was killed", process.pid)

    # --- the streams -------------------------------------------------------------

    async def _write(self, message: JsonObject) -> None:
        """Write one line; a CLI that has already ended is reported by its exit, not here."""
        assert self._process is not None and self._process.stdin is not None
        try:
            self._process.stdin.write((json.dumps(message) + "\n").encode("utf-8"))
            await self._process.stdin.drain()
        except ConnectionError as error:
            log.debug("action: qwen's input is closed (%s)", error)

    async def _read_stdout(self) -> bool:
        """Handle each line until the result (True) or the end of output (False)."""
        assert self._process is not None and self._process.stdout is not None
        lines = Lines(self._process.stdout, MAX_LINE_BYTES)
        while (line := await lines.next()) is not None:
            if lines.cut:
                raise TooMuch(f"qwen sent a message longer than {MAX_LINE_BYTES:,} bytes; the run was stopped")
            if line.strip() and await self._handle(line):
                return True
        return False

    async def _read_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        lines = Lines(self._process.stderr, STDERR_LINE_BYTES)
        while (line := await lines.next()) is not None:
            self._stderr.append(line.decode("utf-8", "replace").rstrip() + ("…" if lines.cut else ""))
            del self._stderr[:-STDERR_TAIL_LINES]

    async def _handle(self, line: bytes) -> bool:
        try:
            message = json.loads(line)
        except ValueError:
            log.debug("action: not JSON: %.200r", line)
            return False
        if not isinstance(message, dict):
            return False
        kind = message.get("type")
        if kind == "system" and message.get("subtype") == "init":
            self._outcome.model = str(message.get("model") or "")
            if self.on_model is not None and self._outcome.model:
                self.on_model(self._outcome.model)
        elif kind == "stream_event":
            self._stream_event(message.get("event") or {})
        elif kind == "assistant" and not self._text:
            self._whole_message(message.get("message") or {})
        elif kind == "control_response":
            if self._initialized is not None and not self._initialized.done():
                self._initialized.set_result(None)
        elif kind == "control_request":
            await self._control_request(message)
        elif kind == "result":
            self._result(message)
            return True
        return False

    def _stream_event(self, event: JsonObject) -> None:
        delta = event.get("delta") or {}
        if event.get("type") == "message_start":
            self._new_message = bool(self._text)  # the model's next message, after a tool call
        elif event.get("type") == "content_block_delta" and delta.get("type") == "text_delta":
            self._add(str(delta.get("text", "")))

    def _whole_message(self, message: JsonObject) -> None:
        """A whole assistant message, for a CLI that sent no partial text."""
        for block in message.get("content") or []:
            if isinstance(block, dict) and block.get("type") == "text":
                self._add(str(block.get("text", "")))

    def _add(self, text: str) -> None:
        if not text:
            return
        if self._new_message:
            self._new_message = False
            text = "\n\n" + text  # starts a paragraph of its own
        self._size += len(text)
        if self._size > MAX_ANSWER_CHARS:
            raise TooMuch(f"qwen's answer grew past {MAX_ANSWER_CHARS:,} characters; the run was stopped")
        self._text.append(text)
        self.on_text(text)

    async def _control_request(self, message: JsonObject) -> None:
        request = message.get("request") or {}
        request_id = message.get("request_id")
        if request.get("subtype") == "can_use_tool":
            tool = str(request.get("tool_name", "?"))
            self._outcome.denied.append(tool)
            log.info("action: denied %s (quick actions are read-only)", tool)
            response: JsonObject = {"subtype": "success", "request_id": request_id,
                                    "response": {"behavior": "deny", "message": DENIAL}}
        else:
            response = {"subtype": "error", "request_id": request_id,
                        "error": f"unsupported request {request.get('subtype')!r}"}
        await self._write({"type": "control_response", "response": response})

    def _result(self, message: JsonObject) -> None:
        answer = self._answer() or str(message.get("result") or "")
        if message.get("is_error") or message.get("subtype") != "success":
            error = message.get("error")  # 0.24.4: {"message"} (e.g. no auth type selected)
            error = error.get("message") if isinstance(error, dict) else error
            error = str(message.get("result") or error or message.get("subtype") or "error")
            if NO_AUTH_TYPE in error:  # 0.24.4 never signed in: say how
                error = f"{error} {SIGN_IN_HINT}, then run the action again."
            self._outcome = RunOutcome("failed", answer, error, self._outcome.model, self._outcome.denied)
        else:
            self._outcome = RunOutcome("answered", answer, "", self._outcome.model, self._outcome.denied)

    def _answer(self) -> str:
        return "".join(self._text)
