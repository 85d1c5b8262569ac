"""The quick-action commands: Explain Selection, Add Docstring, Optimize
Selection, Fix Selection, Ask About Selection… and Cancel Action."""

from __future__ import annotations

import os

import sublime
import sublime_plugin

from ...core.actions.process import Invocation
from ...core.actions.prompt import ACTIONS, render
from ...core.actions.run import run_argv
from ...core.cli.cli_command import CommandNotFound, agent_argv
from ..companion.terminal import login_shell, options
from ..settings import userprefs
from .action_context import NoSelection, action_context
from .answer import find_answer, is_answer_view, recent_answers, set_text
from .jobs import ActionJob, actions, working_folder
from .templates import load_template


def qwen_argv(flags: list[str] | None = None) -> list[str]:
    """`qwen_command` with `flags`, by default an action's stream-json run
    (raises `CommandNotFound`)."""
    if flags is None:
        flags = run_argv([], userprefs().actions_model or None)
    return agent_argv(options().command, windows=sublime.platform() == "windows", login_shell=login_shell(),
                      path=os.environ.get("PATH"), flags=flags, home=os.path.expanduser("~"))


def has_selection(view: sublime.View) -> bool:
    """The context menu shows the actions only over selected text."""
    return any(not region.empty() for region in view.sel())


class QuestionInputHandler(sublime_plugin.TextInputHandler):
    def placeholder(self) -> str:
        return "What do you want to know about the selected code?"

    def validate(self, text: str, event: sublime_plugin.Event | None = None) -> bool:
        return bool(text.strip())


class QwenActionCommand(sublime_plugin.TextCommand):
    """`{"action": "explain" | "docstring" | "optimize" | "fix" | "ask" | "unit_tests"}`."""

    def run(self, edit: sublime.Edit, action: str, question: str = "", only_with_selection: bool = False) -> None:
        window = self.view.window()
        if window is None or action not in ACTIONS or action == "unit_tests_code":
            return
        if action == "ask" and not question.strip():
            # From a key or a menu `run` gets no question, and Sublime asks the
            # input handler only for a missing positional argument: ask here.
            args: dict[str, sublime.Value] = {"action": action, "only_with_selection": only_with_selection}
            window.run_command("show_overlay", {"overlay": "command_palette", "command": self.name(), "args": args})
            return
        try:
            context = action_context(self.view, action, userprefs().actions_language, question)
            prompt = render(load_template(action), load_template("_context"), context)
            argv = qwen_argv()
        except CommandNotFound as problem:
            sublime.error_message(f"Qwen Code: {problem}")
            return
        except (NoSelection, FileNotFoundError) as problem:
            window.status_message(f"Qwen Code: {problem}")
            return
        if context.took:
            window.status_message(f"Qwen Code: {ACTIONS[action]} takes {context.took}")
        invocation = Invocation(argv, working_folder(window, self.view), {}, prompt)
        actions.submit(ActionJob(actions, window, self.view, context, invocation))

    def input(self, args: dict[str, sublime_plugin.Value]) -> sublime_plugin.CommandInputHandler | None:
        if args.get("action") == "ask" and not args.get("question"):
            return QuestionInputHandler()
        return None

    def is_enabled(self, action: str = "", question: str = "", only_with_selection: bool = False) -> bool:
        return not is_answer_view(self.view) and not self.view.settings().get("is_widget")

    def is_visible(self, action: str = "", question: str = "", only_with_selection: bool = False) -> bool:
        return not only_with_selection or has_selection(self.view)

    def description(self, action: str = "", question: str = "", only_with_selection: bool = False) -> str:
        return ACTIONS.get(action, "Qwen Code action")


class QwenCancelActionCommand(sublime_plugin.WindowCommand):
    def run(self) -> None:
        if not actions.cancel(self.window):
            self.window.status_message("Qwen Code: no action is running")


class QwenAnswerHistoryCommand(sublime_plugin.WindowCommand):
    """`{"step": -1}` shows the previous answer in the answer view, `1` the next."""

    def run(self, step: int = -1) -> None:
        recent = recent_answers.get(self.window.id())
        job = actions.jobs.get(self.window.id())
        view = find_answer(self.window)
        if recent is None or view is None:
            return
        if job is not None and not job.done:
            self.window.status_message("Qwen Code: an answer is still coming; earlier ones are a key away after it")
            return
        text = recent.step(step)
        if text is None:
            self.window.status_message(f"Qwen Code: no {'earlier' if step < 0 else 'later'} answer")
            return
        set_text(view, text)
        self.window.status_message(f"Qwen Code: {recent.label()}")

    def is_enabled(self, step: int = -1) -> bool:
        recent = recent_answers.get(self.window.id())
        return recent is not None and len(recent.answers) > 1
