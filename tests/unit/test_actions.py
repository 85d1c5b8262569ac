"""Quick actions' core: prompts (1-based places in code points), the code
block a proposal is taken from, the pool, and a run against the scripted
stream-json CLI (partial and whole messages, results, errors, a CLI dying
mid-stream, a line longer than any buffer, denial, cancel and timeout)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from qwencompanion_src.core.actions.mention import file_mention, selected_lines
from qwencompanion_src.core.actions.models import MODEL_FLAGS, Model, ModelsUnavailable, available_models
from qwencompanion_src.core.actions.pool import ActionPool
from qwencompanion_src.core.actions.process import READ_CHUNK, Invocation, Lines
from qwencompanion_src.core.actions.prompt import ActionContext, fence_for, render, span_of
from qwencompanion_src.core.actions.proposal import last_code_block, replacement_for
from qwencompanion_src.core.actions.run import EDITING_TOOLS, ActionRun, RunOutcome, run_argv
from qwencompanion_src.core.files.text_positions import Position, position_of

from ..support.processes import Grandchildren, alive

FAKE_CLI = Path(__file__).resolve().parents[1] / "rig" / "fake_stream_cli.py"
TEMPLATES = Path(__file__).resolve().parents[2] / "QwenCompanion.sublime-package-src" / "prompts"


# --- prompts ---------------------------------------------------------------------------


def test_places_are_1_based_and_count_code_points() -> None:
    text = "a = '\U0001f600'\nbb = 2\n"
    assert position_of(text, 0) == Position(1, 1)
    assert position_of(text, text.index("'", 5)) == Position(1, 7)  # the emoji is one character
    assert position_of(text, text.index("bb")) == Position(2, 1)
    span = span_of(text, text.index("bb"), len(text))
    assert span.place == "2:1-3:1" and span.text == "bb = 2\n"


SHOWN = "import os\n\n\ndef f(x):\n    return x\n\n\nprint(f(1))\n"
SELECTED = "    return x\n"


def context(**changes: Any) -> ActionContext:
    begin = SHOWN.index(SELECTED)
    values: dict[str, Any] = {
        "action": "explain", "path": "/p/m.py", "language": "Python",
        "selection": span_of(SHOWN, begin, begin + len(SELECTED)), "visible": span_of(SHOWN, 0, len(SHOWN)),
    }
    values.update(changes)
    return ActionContext(**values)


@pytest.mark.parametrize("action", ["explain", "docstring", "optimize", "fix", "ask"])
def test_every_template_gets_the_selection_the_visible_text_and_the_language(action: str) -> None:
    """The selection is a part of the visible text: each lands, with its own
    place, under its own heading (swapping the two cannot pass)."""
    prompt = render((TEMPLATES / f"{action}.md").read_text(), (TEMPLATES / "_context.md").read_text(),
                    context(action=action, question="Why?"))
    assert "$" not in prompt.replace("$$", "")  # every field was filled
    assert "/p/m.py (Python)" in prompt
    assert f"The selected code (5:1-6:1):\n```\n{SELECTED}\n```\n" in prompt
    assert f"What the editor shows around it (1:1-9:1):\n```\n{SHOWN}\n```" in prompt
    assert "Answer in English." in prompt
    assert ("Why?" in prompt) == (action == "ask")


def test_zh_asks_for_a_chinese_answer_and_an_unknown_language_falls_back_to_english() -> None:
    template = "$answer_language"
    assert "中文" in render(template, "", context(answer_language="zh"))
    assert render(template, "", context(answer_language="fr")) == "Answer in English."


def test_the_fence_outlasts_fences_in_the_code() -> None:
    assert fence_for("plain") == "```"
    assert fence_for("x = '''\n```\ncode\n```'") == "````"


# --- proposals ---------------------------------------------------------------------------


def test_the_last_complete_code_block_is_the_proposal() -> None:
    answer = "Before:\n```python\nold()\n```\nAfter:\n~~~~py\nnew()\n```not the end\n~~~~\n"
    assert last_code_block(answer) == "new()\n```not the end"
    assert last_code_block("no code") is None
    assert last_code_block("```\nunclosed\n") is None
    assert last_code_block("```\n```") == ""


def test_the_replacement_keeps_the_selections_trailing_newline() -> None:
    assert replacement_for("a\n", "b") == "b\n"
    assert replacement_for("a", "b\n") == "b"
    assert replacement_for("a\n", "b\n") == "b\n"


# --- the pool ------------------------------------------------------------------------------


class FakeJob:
    def __init__(self, name: str, log: list[str]) -> None:
        self.name = name
        self.log = log

    def start(self) -> None:
        self.log.append(f"start {self.name}")

    def cancel(self) -> None:
        self.log.append(f"cancel {self.name}")


def test_a_new_job_cancels_its_windows_previous_one() -> None:
    log: list[str] = []
    pool = ActionPool(3)
    first, second = FakeJob("a1", log), FakeJob("a2", log)
    assert pool.submit(1, first) and pool.submit(1, second)
    assert log == ["start a1", "cancel a1", "start a2"]
    assert pool.running(1) is second
    pool.finished(1, first)  # the cancelled one ends later: the new one keeps its place
    assert pool.running(1) is second


def test_beyond_the_limit_jobs_wait_in_order() -> None:
    log: list[str] = []
    pool = ActionPool(2)
    jobs = {w: FakeJob(f"w{w}", log) for w in (1, 2, 3, 4)}
    assert [pool.submit(w, j) for w, j in jobs.items()] == [True, True, False, False]
    assert pool.waiting() == 2
    pool.finished(1, jobs[1])
    assert log[-1] == "start w3" and pool.waiting() == 1
    replacement = FakeJob("w4b", log)
    assert not pool.submit(4, replacement)  # replaces the waiting one of its window
    assert "cancel w4" in log and pool.waiting() == 1
    pool.finished(2, jobs[2])
    assert log[-1] == "start w4b"


class ProcessJob:
    """A pool job that is a real run of the scripted CLI on the running loop."""

    def __init__(self, pool: ActionPool, window: int, script: Path) -> None:
        self.pool, self.window = pool, window
        argv = run_argv([sys.executable, str(FAKE_CLI), str(script)], None)
        self.run = ActionRun(Invocation(argv, str(script.parent), {}, "p"), lambda piece: None, 20.0)
        self.task: asyncio.Task[RunOutcome] | None = None

    def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self.run.run())
        self.task.add_done_callback(lambda _: self.pool.finished(self.window, self))

    def cancel(self) -> None:
        self.run.cancel()


def test_the_pool_ends_a_replaced_runs_process_and_starts_a_waiting_one_when_a_place_frees(tmp_path: Path) -> None:
    stall, answer = tmp_path / "stall.json", tmp_path / "answer.json"
    stall.write_text(json.dumps({"steps": [{"stall": 30}]}))
    answer.write_text(json.dumps({"steps": [{"text": "ok"}]}))

    async def go() -> None:
        pool = ActionPool(1)
        first, second, other = ProcessJob(pool, 1, stall), ProcessJob(pool, 1, answer), ProcessJob(pool, 2, answer)
        pool.submit(1, first)
        while first.run.pid is None:
            await asyncio.sleep(0.01)
        assert pool.submit(1, second)  # replaces the window's run at once
        assert not pool.submit(2, other)  # no place: waits
        assert first.task is not None and (await first.task).kind == "cancelled"
        assert not alive(first.run.pid)
        assert second.task is not None and (await second.task).kind == "answered"
        await asyncio.sleep(0)  # the freed place goes to the waiting job
        assert other.task is not None and (await other.task).kind == "answered"
        assert pool.waiting() == 0 and pool.running(2) is None

    asyncio.run(go())


# --- runs --------------------------------------------------------------------------------------


def run(tmp_path: Path, steps: list[dict[str, Any]], timeout: float = 20.0, during: Any = None,
        grandchildren: Grandchildren | None = None, **script_keys: Any,
        ) -> tuple[RunOutcome, list[str], list[dict[str, Any]], ActionRun]:
    """One run of the scripted CLI (which starts a grandchild first when `grandchildren` is given)."""
    script = tmp_path / "script.json"
    log = tmp_path / "log.jsonl"
    extra = {"grandchild": str(grandchildren.pid_file)} if grandchildren is not None else {}
    extra.update(script_keys)
    script.write_text(json.dumps({"steps": steps, "log": str(log), **extra}))
    pieces: list[str] = []
    argv = run_argv([sys.executable, str(FAKE_CLI), str(script)], None)
    action = ActionRun(Invocation(argv, str(tmp_path), {}, "the prompt"), pieces.append, timeout)

    async def go() -> RunOutcome:
        task = asyncio.create_task(action.run())
        if during is not None:
            await during(action)
        return await task

    outcome = asyncio.run(go())
    received = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return outcome, pieces, received, action


def test_partial_messages_stream_and_the_result_ends_the_run(tmp_path: Path) -> None:
    outcome, pieces, received, action = run(tmp_path, [{"text": "hello world", "chunks": 4}])
    assert outcome.kind == "answered" and outcome.text == "hello world" and outcome.model == "fake-model"
    assert len(pieces) == 4 and "".join(pieces) == "hello world"
    assert received[1]["request"]["subtype"] == "initialize"
    assert received[2]["message"] == {"role": "user", "content": "the prompt"}
    assert set(EDITING_TOOLS) <= set(received[0]["argv"][received[0]["argv"].index("--exclude-tools") + 1].split(","))
    assert action.pid is not None and not alive(action.pid)


def test_every_tool_that_edits_or_runs_programs_is_excluded(tmp_path: Path) -> None:
    """The CLI's (0.24.4) tools that write files, run programs, remember or
    delegate, written out here: dropping one from the package's list fails."""
    _, _, received, _ = run(tmp_path, [{"text": "ok"}])
    argv = received[0]["argv"]
    assert sorted(argv[argv.index("--exclude-tools") + 1].split(",")) == sorted([
        "edit", "write_file", "notebook_edit", "run_shell_command", "exec", "monitor", "save_memory", "agent",
        "workflow", "create_sub_session", "team_create", "enter_worktree", "exit_worktree", "cron_create",
        "cron_delete", "image_gen",
    ])


def test_a_whole_message_without_partials_is_the_answer(tmp_path: Path) -> None:
    outcome, pieces, _, _ = run(tmp_path, [{"whole": "all at once"}])
    assert outcome.text == "all at once" and pieces == ["all at once"]


def test_the_next_message_after_a_tool_starts_a_paragraph(tmp_path: Path) -> None:
    outcome, _, _, _ = run(tmp_path, [{"text": "Let me look."}, {"text": "It adds."}])
    assert outcome.text == "Let me look.\n\nIt adds."


def test_a_line_longer_than_any_buffer_is_read(tmp_path: Path) -> None:
    outcome, _, _, _ = run(tmp_path, [{"whole": "x" * 300_000}])
    assert outcome.kind == "answered" and len(outcome.text) == 300_000


def test_an_error_result_fails(tmp_path: Path) -> None:
    outcome, _, _, _ = run(tmp_path, [{"result": "error", "message": "quota exceeded"}])
    assert outcome.kind == "failed" and outcome.error == "quota exceeded"


def test_an_error_given_as_an_object_is_its_message(tmp_path: Path) -> None:
    outcome, _, _, _ = run(tmp_path, [{"result": "error", "error": "Quota exceeded."}])
    assert outcome.kind == "failed" and outcome.error == "Quota exceeded."


def test_a_cli_never_signed_in_fails_with_how_to_sign_in(tmp_path: Path) -> None:
    outcome, _, _, _ = run(tmp_path, [{"result": "error", "error": "No auth type is selected. Please configure one."}])
    assert outcome.kind == "failed" and outcome.error.startswith("No auth type is selected. Please configure one. ")
    assert "(/auth)" in outcome.error


def test_a_cli_dying_mid_stream_fails_with_its_exit_code_and_stderr(tmp_path: Path) -> None:
    outcome, _, _, _ = run(tmp_path, [{"text": "half"}, {"die": 7}])
    assert outcome.kind == "failed" and outcome.text == "half"
    assert "exit code 7" in outcome.error and "dying" in outcome.error


def test_a_cli_that_stops_reading_fails_with_its_exit_code_and_stderr(tmp_path: Path) -> None:
    """Its input closed before the prompt is written: the failure is its exit, not the write."""
    script = ("import json, os, sys, time; os.close(0); "
              "print(json.dumps({'type': 'control_response', 'response': {'request_id': 'init'}}), flush=True); "
              "sys.stderr.write('env: node: No such file\\n'); time.sleep(0.3); os._exit(127)")
    argv = run_argv([sys.executable, "-c", script], None)
    outcome = asyncio.run(ActionRun(Invocation(argv, str(tmp_path), {}, "p"), lambda piece: None, 20).run())
    assert outcome.kind == "failed"
    assert outcome.error == "qwen ended (exit code 127) before answering:\nenv: node: No such file"


def test_a_missing_program_fails_clearly(tmp_path: Path) -> None:
    pieces: list[str] = []
    action = ActionRun(Invocation(["/no/such/qwen"], str(tmp_path), {}, "p"), pieces.append, 5)
    outcome = asyncio.run(action.run())
    assert outcome.kind == "failed" and "could not start /no/such/qwen" in outcome.error


def test_every_permission_is_denied(tmp_path: Path) -> None:
    outcome, _, received, _ = run(tmp_path, [{"tool": "write_file", "input": {"file_path": "x"}}, {"text": "ok"}])
    answer = next(m for m in received if m.get("type") == "control_response")
    assert answer["response"]["response"]["behavior"] == "deny"
    assert outcome.denied == ["write_file"] and outcome.kind == "answered"


def test_cancel_ends_the_process_group(tmp_path: Path, grandchildren: Grandchildren) -> None:
    async def cancel_soon(action: ActionRun) -> None:
        while action.pid is None:
            await asyncio.sleep(0.01)
        await asyncio.to_thread(grandchildren.pids)
        action.cancel()

    outcome, _, _, action = run(tmp_path, [{"stall": 30}], during=cancel_soon, grandchildren=grandchildren)
    assert outcome.kind == "cancelled"
    assert action.pid is not None and not alive(action.pid)
    assert grandchildren.wait_gone() == []


def cancel_once(ready: Any) -> Any:
    """A `during` that cancels the run once `ready()` holds."""
    async def cancel(action: ActionRun) -> None:
        while action.pid is None or not await asyncio.to_thread(ready):
            await asyncio.sleep(0.01)
        action.cancel()
    return cancel


def test_a_cancelled_run_leaves_no_lock_for_the_next_qwen(tmp_path: Path) -> None:
    """A SIGKILL would leave qwen's extension-store lock for a minute, and
    the next action would fail with "Extension store is busy"."""
    lock = tmp_path / "lock.lock"
    outcome, _, _, action = run(tmp_path, [{"stall": 30}], during=cancel_once(lock.exists), store_lock=str(lock))
    assert outcome.kind == "cancelled"
    assert action.pid is not None and not alive(action.pid)
    assert not lock.exists()


def test_a_cancelled_run_that_ignores_sigterm_is_killed(tmp_path: Path, grandchildren: Grandchildren) -> None:
    outcome, _, _, action = run(tmp_path, [{"stall": 30}], during=cancel_once(grandchildren.pids),
                                grandchildren=grandchildren, ignore_sigterm=True)
    assert outcome.kind == "cancelled" and outcome.error == ""  # not stopped by the run's timeout
    assert action.pid is not None and not alive(action.pid)
    assert grandchildren.wait_gone() == []


def test_a_finished_run_ends_what_the_cli_started(tmp_path: Path, grandchildren: Grandchildren) -> None:
    outcome, _, _, action = run(tmp_path, [{"text": "done"}], grandchildren=grandchildren)
    assert outcome.kind == "answered" and grandchildren.pids()
    assert action.pid is not None and not alive(action.pid)
    assert grandchildren.wait_gone() == []


def test_a_run_past_its_timeout_is_stopped(tmp_path: Path, grandchildren: Grandchildren) -> None:
    outcome, _, _, action = run(tmp_path, [{"text": "slow"}, {"stall": 30}], timeout=1.0, grandchildren=grandchildren)
    assert outcome.kind == "timed_out" and outcome.text == "slow" and "1 s" in outcome.error
    assert action.pid is not None and not alive(action.pid)
    assert grandchildren.pids() and grandchildren.wait_gone() == []


def test_a_run_whose_loop_stops_ends_the_process_group(tmp_path: Path, grandchildren: Grandchildren) -> None:
    """The package unloading cancels the run's task: no grace, the whole group ends."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"stall": 30}], "grandchild": str(grandchildren.pid_file)}))
    argv = run_argv([sys.executable, str(FAKE_CLI), str(script)], None)
    action = ActionRun(Invocation(argv, str(tmp_path), {}, "p"), lambda piece: None, 20)

    async def go() -> None:
        task = asyncio.create_task(action.run())
        await asyncio.to_thread(grandchildren.pids)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    assert action.pid is not None and not alive(action.pid)
    assert grandchildren.wait_gone() == []


# --- models ------------------------------------------------------------------------------------


def models_of(tmp_path: Path, script: dict[str, Any]) -> list[Model]:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    argv = [sys.executable, str(FAKE_CLI), str(path), *MODEL_FLAGS]
    return asyncio.run(available_models(argv, str(tmp_path), {}, 20.0))


def test_the_models_are_what_get_available_models_answers(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    models = models_of(tmp_path, {"log": str(log), "models": [{"id": "qwen3-coder", "label": "Qwen3 Coder"}, {"id": "m2"}]})
    assert models == [Model("qwen3-coder", "Qwen3 Coder"), Model("m2", "m2")]
    sent = [json.loads(line) for line in log.read_text().splitlines()][1:]
    assert [m["request"]["subtype"] for m in sent] == ["initialize", "get_available_models"]


def test_asking_for_the_models_ends_the_process_group(tmp_path: Path, grandchildren: Grandchildren) -> None:
    """The CLI waits for a prompt after answering: it is ended, and what it started with it."""
    models = models_of(tmp_path, {"models": [{"id": "m1"}], "grandchild": str(grandchildren.pid_file)})
    assert models == [Model("m1", "m1")] and grandchildren.pids()
    assert grandchildren.wait_gone() == []


def test_asking_for_the_models_leaves_no_lock_for_the_next_qwen(tmp_path: Path) -> None:
    """Asked while qwen still starts (a loaded machine), a SIGKILL after the
    answer left its extension-store lock, and the action run next failed."""
    lock = tmp_path / "lock.lock"
    assert models_of(tmp_path, {"models": [{"id": "m1"}], "store_lock": str(lock)}) == [Model("m1", "m1")]
    assert not lock.exists()


def test_a_cli_that_cannot_start_or_ends_early_gives_the_reason(tmp_path: Path) -> None:
    with pytest.raises(ModelsUnavailable, match="could not start /no/such/qwen"):
        asyncio.run(available_models(["/no/such/qwen"], str(tmp_path), {}, 5.0))
    argv = [sys.executable, "-c", "import sys; sys.stderr.write('not signed in\\n'); sys.exit(2)"]
    with pytest.raises(ModelsUnavailable, match="ended before answering:\nnot signed in"):
        asyncio.run(available_models(argv, str(tmp_path), {}, 5.0))


# --- Send Selection to Terminal ---------------------------------------------------------------


def test_the_mention_is_the_path_in_the_folder_and_the_lines_as_words() -> None:
    assert file_mention("/w/src/geo.py", "/w", 4, 6, windows=False) == "@src/geo.py lines 4-6 "
    assert file_mention("/w/geo.py", "/w", 4, 4, windows=False) == "@geo.py line 4 "
    assert file_mention("/w/geo.py", "/w", 0, 0, windows=False) == "@geo.py "
    assert file_mention("/elsewhere/geo.py", "/w", 1, 2, windows=False) == "@/elsewhere/geo.py lines 1-2 "
    assert file_mention("/w/my dir/a(1).py", "/w", 1, 1, windows=False) == "@my\\ dir/a\\(1\\).py line 1 "
    assert file_mention("/w/my dir/a.py", "/w", 1, 1, windows=True) == "@my dir/a.py line 1 "


def test_selected_lines_leave_out_the_line_a_selection_ends_at_the_start_of() -> None:
    assert selected_lines((1, 0), (2, 3)) == (2, 3)
    assert selected_lines((1, 0), (3, 0)) == (2, 3)
    assert selected_lines((1, 0), (2, 0)) == (2, 2)
    assert selected_lines((1, 2), (1, 2)) == (0, 0)
    assert selected_lines((1, 0), (1, 2)) == (2, 2)


async def test_lines_of_any_length_split_across_chunks() -> None:
    stream = asyncio.StreamReader()
    long_line = b"x" * (5 * READ_CHUNK + 7)
    data = b"first\n\n" + long_line + b"\nsecond\nlast without newline"
    for start in range(0, len(data), 1000):  # pieces that cut lines anywhere
        stream.feed_data(data[start : start + 1000])
    stream.feed_eof()
    lines = Lines(stream)
    read = []
    while (line := await lines.next()) is not None:
        read.append(line)
    assert read == [b"first", b"", long_line, b"second", b"last without newline"]


async def test_lines_end_without_an_empty_last_line() -> None:
    stream = asyncio.StreamReader()
    stream.feed_data(b"one\ntwo\n")
    stream.feed_eof()
    lines = Lines(stream)
    assert [await lines.next(), await lines.next(), await lines.next()] == [b"one", b"two", None]


async def test_a_line_longer_than_the_limit_keeps_only_the_limit_and_says_it_was_cut() -> None:
    stream = asyncio.StreamReader()
    data = b"short\n" + b"y" * (3 * READ_CHUNK) + b"\nafter\n"
    for start in range(0, len(data), 5000):
        stream.feed_data(data[start : start + 5000])
    stream.feed_eof()
    lines = Lines(stream, longest=100)
    read = []
    while (line := await lines.next()) is not None:
        read.append((line, lines.cut))
    assert read == [(b"short", False), (b"y" * 100, True), (b"after", False)]
