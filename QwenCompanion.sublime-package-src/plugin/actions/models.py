"""Qwen Code: Choose Model for Actions — the models the CLI offers (its
`get_available_models` answer), the choice kept in `actions_model`."""

from __future__ import annotations

from concurrent.futures import Future

import sublime
import sublime_plugin

from ...core.actions.models import MODEL_FLAGS, Model, ModelsUnavailable, available_models
from ...core.cli.cli_command import CommandNotFound
from ..quick_panel_items import panel_item
from ..settings import choose_actions_model, userprefs
from .action_commands import qwen_argv
from .jobs import actions, working_folder

ASK_TIMEOUT = 30.0
DEFAULT_ITEM = "The CLI's default model"


class QwenChooseActionModelCommand(sublime_plugin.WindowCommand):
    def run(self) -> None:
        try:
            argv = qwen_argv(list(MODEL_FLAGS))
        except CommandNotFound as problem:
            sublime.error_message(f"Qwen Code: {problem}")
            return
        cwd = working_folder(self.window, self.window.active_view())
        self.window.status_message("Qwen Code: asking qwen for its models…")
        future = actions.thread().submit(available_models(argv, cwd, {}, ASK_TIMEOUT))
        future.add_done_callback(lambda done: sublime.set_timeout(lambda: self._offer(done)))

    def _offer(self, done: Future[list[Model]]) -> None:
        try:
            models = done.result()
        except ModelsUnavailable as problem:
            sublime.error_message(f"Qwen Code: cannot list the models: {problem}")
            return
        current = userprefs().actions_model
        ids: list[str | None] = [None, *(m.id for m in models)]
        if isinstance(current, str) and current not in ids:
            ids.append(current)  # a name typed into the settings stays choosable
        labels = {m.id: m.label for m in models if m.label != m.id}
        items = [
            panel_item(DEFAULT_ITEM if i is None else i, details=labels.get(i or "", ""),
                       annotation="current" if i == current else "")
            for i in ids
        ]
        if not models:
            self.window.status_message("Qwen Code: qwen lists no models (its modelProviders setting is empty)")
        self.window.show_quick_panel(items, lambda index: self._chosen(ids, index),
                                     selected_index=ids.index(current) if current in ids else 0,
                                     placeholder="The model for quick actions")

    def _chosen(self, ids: list[str | None], index: int) -> None:
        if index < 0:
            return
        choose_actions_model(ids[index])
        self.window.status_message("Qwen Code: quick actions use " + (ids[index] or "the CLI's default model"))
