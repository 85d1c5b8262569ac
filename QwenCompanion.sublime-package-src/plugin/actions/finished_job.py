"""What the steps after an answer (a proposal, a test file) need of the action
that asked: named here so those steps and the jobs that run them do not import
each other."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import sublime

from ...core.actions.prompt import ActionContext
from ...core.reviews import DiskFile


class FinishedJob(Protocol):
    window: sublime.Window
    view: sublime.View
    context: ActionContext
    change_count: int  # the buffer's when the action read it

    def disk_of(self, path: str) -> DiskFile: ...

    def say(self, text: str) -> None: ...

    def follow_up(self, action: str, change: Callable[[ActionContext], ActionContext]) -> None: ...
