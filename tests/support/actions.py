"""What the quick actions' tests do as a user, in the simulated editor with
the built package: run an action, wait for its outcomes, read the answer view."""

from __future__ import annotations

import sys
from typing import Any

from tests.support.editor import PACKAGE, Editor


class ActionsUser:
    """Records the package's action events from the moment `watch` is called."""

    def __init__(self, editor: Editor, wait: float) -> None:
        self.editor = editor
        self.host = editor.host
        self.wait = wait
        self.events: list[tuple[str, dict[str, Any]]] = []

    @property
    def actions(self) -> Any:
        return sys.modules[f"{PACKAGE}.plugin.actions.jobs"].actions

    def watch(self) -> None:
        self.actions.observers.append(lambda event, details: self.events.append((event, details)))

    def run(self, action: str, **args: Any) -> None:
        self.host.user.run_command("qwen_action", {"action": action, **args})

    def finished(self, count: int = 1) -> list[str]:
        self.host.wait_for(lambda: len(self.outcomes()) >= count, timeout=self.wait)
        self.host.wait_idle()
        return self.outcomes()

    def outcomes(self) -> list[str]:
        return [d["outcome"] for e, d in self.events if e == "action_finished"]

    def answer(self) -> str:
        """The answer view's text ("" until the action has opened it)."""
        view = next((v for v in self.host.window.views() if v.settings().get("qwen_actions.answer")), None)
        return self.editor.text(view) if view is not None else ""
