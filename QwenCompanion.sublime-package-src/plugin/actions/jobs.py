"""Running actions: each is a job of the pool, run on the actions' asyncio
thread; its answer streams into the answer view, and a proposing action's
replacement opens in the shared review.

Observers (the headless driver) get "action_started" {window, action} and
"action_finished" {window, action, outcome}: answered, proposed, cancelled
or failed (a timeout is a failure that says so).
"""

from __future__ import annotations

import contextvars
import logging
import os
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import sublime

from ...core import threads
from ...core.actions.pool import ActionPool
from ...core.actions.process import Invocation
from ...core.actions.prompt import ACTIONS, PROPOSING, ActionContext, render
from ...core.actions.proposal import last_code_block, test_file_for
from ...core.actions.run import ActionRun, RunOutcome
from ...core.loop_thread import LoopThread
from ...core.reviews import DiskFile, UnreadableFile
from ..editor import read_off_main, view_text
from ..paths import shown_path
from ..settings import userprefs
from .answer import AnswerStream, RecentAnswers, append, find_answer, recent_answers, set_text, show_answer
from .proposals import propose
from .templates import load_template
from .unit_tests import choose_cases, propose_test_file

log = logging.getLogger(__name__)

STATUS_KEY = "qwen_action"
Observer = Callable[[str, dict[str, Any]], None]


class ActionJob:
    """One action for one window, from the command to its outcome."""

    def __init__(self, owner: Actions, window: sublime.Window, view: sublime.View, context: ActionContext,
                 invocation: Invocation) -> None:
        self.owner = owner
        self.window = window
        self.window_id = window.id()
        self.view = view
        self.context = context
        self.invocation = invocation
        self.change_count = view.change_count()  # the buffer as the action saw it
        self.started_at = 0.0
        self.run: ActionRun | None = None
        self.done = False
        self.cancelled = False
        self.stream: AnswerStream | None = None
        self.answer: sublime.View | None = None  # where this job's answer shows
        self.model = userprefs().actions_model or ""  # "": the CLI's default, named once it says
        self.header = ""
        # The file a proposal of this job reviews, read off the main thread: (path, what it holds).
        self.target: tuple[str, DiskFile | UnreadableFile] | None = None
        # The user's command, carried to where its answer opens (a tab of the
        # code's group takes the keys, as the user asked): nothing later is.
        self._command = contextvars.copy_context()

    # --- the pool's side (any thread) ---------------------------------------------

    def start(self) -> None:
        sublime.set_timeout(lambda: self._command.run(self._show_start))

    def cancel(self) -> None:
        self.cancelled = True
        run = self.run
        if run is not None:
            self.owner.call_soon(run.cancel)
        elif not self.done and self.started_at == 0.0:  # still waiting for a place
            sublime.set_timeout(lambda: self._finish_on_main(None))

    # --- the editor's side ----------------------------------------------------------

    @threads.on_main
    def _show_start(self) -> None:
        if self.cancelled:
            self._finish_on_main(None)
            return

        self.started_at = time.monotonic()
        view = self.answer = show_answer(self.window, self.view)
        self.header = self._header()
        set_text(view, self.header)
        self.stream = AnswerStream(view)
        self.run = ActionRun(self.invocation, self.stream.add, float(userprefs().actions_timeout_s),
                             on_model=lambda model: sublime.set_timeout(lambda: self._name_model(model)))
        self.owner.tell("action_started", {"window": self.window_id, "action": self.context.action})
        self._tick()
        future = self.owner.thread().submit(self.run.run())
        future.add_done_callback(self._ran)

    # The future's callback: main only when the run had ended before it was added.
    @threads.runs_on(threads.ACTIONS_LOOP, threads.MAIN)
    def _ran(self, done: Any) -> None:
        """The run ended: the file a proposal would review is read on a thread
        of its own, then the job concludes on the main thread."""
        outcome = None if done.cancelled() or done.exception() else done.result()
        path = self._target_path() if outcome is not None and outcome.kind == "answered" else None
        if path is None:
            sublime.set_timeout(lambda: self._finish_on_main(outcome))
            return

        def read(disk: DiskFile | UnreadableFile) -> None:
            self.target = (path, disk)
            self._finish_on_main(outcome)

        read_off_main(path, read)

    def _target_path(self) -> str | None:
        source = self.view.file_name()
        if source is None or self.context.action not in {*PROPOSING, "unit_tests_code"}:
            return None
        return source if self.context.action in PROPOSING else test_file_for(source, self.window.folders())

    @threads.on_main
    def disk_of(self, path: str) -> DiskFile:
        """What `path` held when the run ended, as read then; `UnreadableFile` if it
        could not be read, or was not the file read (the tab was renamed meanwhile)."""
        if self.target is None or self.target[0] != path:
            raise UnreadableFile(f"{path} changed while the action ran")
        disk = self.target[1]
        if isinstance(disk, UnreadableFile):
            raise disk
        return disk

    @threads.on_main
    def _header(self) -> str:
        context = self.context
        model = f"`{self.model}`" if self.model else "the CLI's default model"
        took = f" — {context.took}" if context.took else ""
        cases = "".join(f"- {case}\n" for case in context.cases)
        path = shown_path(self.window, context.path)
        return (f"# {ACTIONS[context.action]}\n\n`{path}` {context.selection.place}{took} · {model}\n\n"
                + (f"> {context.question}\n\n" if context.question else "")
                + (f"Cases:\n{cases}\n" if cases else ""))

    @threads.on_main
    def _name_model(self, model: str) -> None:
        """The header names the model the CLI reports."""
        if model == self.model or self.done or not self.window.is_valid():
            return
        self.model = model
        view = self.answer_view()
        if view is None:
            return
        text = view_text(view)
        if text.startswith(self.header):
            header, self.header = self.header, self._header()
            set_text(view, self.header + text[len(header):])

    @threads.on_main
    def _tick(self) -> None:
        """The elapsed time in the status bar of the code's tab and the answer's
        (a status belongs to a view; the answer view has the focus)."""
        if self.done:
            return
        seconds = int(time.monotonic() - self.started_at)
        for view in self._status_views():
            view.set_status(STATUS_KEY, f"Qwen: {ACTIONS[self.context.action]}… {seconds} s")
        sublime.set_timeout(self._tick, 1000)

    @threads.on_main
    def _status_views(self) -> list[sublime.View]:
        views = [self.view, self.stream.view] if self.stream is not None else [self.view]
        return [view for view in views if view.is_valid()]

    @threads.on_main
    def _finish_on_main(self, outcome: RunOutcome | None) -> None:
        if self.done:
            return
        self.done = True
        for view in self._status_views():
            view.erase_status(STATUS_KEY)
        if self.stream is not None:
            self.stream.flush()
        kind = self._conclude(outcome)
        shown = self.answer_view()
        if self.stream is not None and shown is not None:
            recent_answers.setdefault(self.window_id, RecentAnswers()).add(view_text(shown))
        log.info("action %s in window %d: %s", self.context.action, self.window_id, kind)
        self.owner.finished(self, kind)

    @threads.on_main
    def _conclude(self, outcome: RunOutcome | None) -> str:
        """Show how the run ended; the outcome for the observers."""
        if outcome is None or outcome.kind == "cancelled" or self.cancelled:
            self.say("\n\n*Cancelled.*\n")
            return "cancelled"
        if outcome.denied:
            self.say(f"\n\n*Refused (quick actions are read-only): {', '.join(sorted(set(outcome.denied)))}.*\n")
        if outcome.kind == "timed_out":
            self.say(f"\n\n**Stopped:** {outcome.error} (setting `actions_timeout_s`).\n")
            return "failed"
        if outcome.kind == "failed":
            self.say(f"\n\n**Failed:** {outcome.error}\n")
            return "failed"
        if self.stream is not None and self.stream.updates == 0 and outcome.text:
            self.say(outcome.text)  # no partial text came: the result's
        if self.context.action in PROPOSING:
            return self._propose(outcome.text)
        if self.context.action == "unit_tests":
            return choose_cases(self, outcome.text)
        if self.context.action == "unit_tests_code":
            return propose_test_file(self, outcome.text)
        return "answered"

    @threads.on_main
    def _propose(self, answer: str) -> str:
        block = last_code_block(answer)
        if block is None:
            self.say("\n\n*No code block in the answer: nothing to propose.*\n")
            return "answered"
        problem = propose(self, block)
        if problem is not None:
            self.say(f"\n\n*Not proposed: {problem}*\n")
            return "answered"
        return "proposed"

    @threads.on_main
    def follow_up(self, action: str, change: Callable[[ActionContext], ActionContext]) -> None:
        """The next step of a two-step action, as a new job."""
        context = change(replace(self.context, action=action))
        prompt = render(load_template(action), load_template("_context"), context)
        invocation = replace(self.invocation, prompt=prompt)
        self.owner.submit(ActionJob(self.owner, self.window, self.view, context, invocation))

    @threads.on_main
    def answer_view(self) -> sublime.View | None:
        """This job's answer view while it is open (the user may have closed it)."""
        if self.answer is not None and self.answer.is_valid():
            return self.answer
        return find_answer(self.window) if self.window.is_valid() else None

    @threads.on_main
    def say(self, text: str) -> None:
        view = self.answer_view()
        if view is not None:
            append(view, text)


class Actions:
    """Every window's actions: the pool, the asyncio thread, the observers."""

    def __init__(self) -> None:
        self._pool: ActionPool | None = None
        self._thread: LoopThread | None = None
        self.observers: list[Observer] = []
        self.jobs: dict[int, ActionJob] = {}  # window id -> its latest job

    def pool(self) -> ActionPool:
        if self._pool is None:
            self._pool = ActionPool(int(userprefs().actions_max_running))
        return self._pool

    def thread(self) -> LoopThread:
        if self._thread is None or not self._thread.alive:
            self._thread = LoopThread(threads.ACTIONS_LOOP)
            self._thread.start()
        return self._thread

    def call_soon(self, callback: Callable[[], object]) -> None:
        """On the actions' thread, if it runs (a stopped thread ended its runs)."""
        if self._thread is not None:
            self._thread.call_soon(callback)

    def submit(self, job: ActionJob) -> None:
        self.jobs[job.window_id] = job
        pool = self.pool()
        pool.max_running = max(1, int(userprefs().actions_max_running))  # the setting applies live
        if not pool.submit(job.window_id, job):
            job.window.status_message(f"Qwen Code: {ACTIONS[job.context.action]} waits for another action to end")

    def cancel(self, window: sublime.Window) -> bool:
        return self.pool().cancel(window.id())

    def forget_window(self, window_id: int) -> None:
        """The window is closing: its action ends with its process."""
        job = self.jobs.pop(window_id, None)
        if job is not None and not job.done:
            self.pool().cancel(window_id)

    def finished(self, job: ActionJob, outcome: str) -> None:
        self.pool().finished(job.window_id, job)
        self.tell("action_finished", {"window": job.window_id, "action": job.context.action, "outcome": outcome})

    def tell(self, event: str, details: dict[str, Any]) -> None:
        for observer in list(self.observers):
            observer(event, details)

    def stop_all(self) -> None:
        """Unload: every run ends with its process (the thread unwinds them)."""
        for job in list(self.jobs.values()):
            if not job.done:
                job.cancel()  # queued on the loop before the thread's stop
        self.jobs.clear()
        if self._thread is not None:
            self._thread.stop_soon()  # main thread: the loop unwinds the runs on its own
            self._thread = None
        self._pool = None


def working_folder(window: sublime.Window, view: sublime.View | None) -> str:
    folders = window.folders()
    name = view.file_name() if view is not None else None
    return folders[0] if folders else os.path.dirname(name) if name else os.path.expanduser("~")


actions = Actions()
