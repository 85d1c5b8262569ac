"""The prompts a chat holds while its agent works: sent one by one as turns
end, in an order the user may change (edit, remove, move, send next).

The user changes the queue from Sublime's main thread while the chat's thread
takes prompts from it, so every method takes the lock and none waits on
anything else. A prompt is known by its object, not its place: a turn that
ends between the user's pick and their edit moves every index."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from ...json_types import JsonObject

MAX_QUEUED = 1000  # a bound, not a workflow: more is a runaway script, not a person typing
QUEUE_FULL = f"{MAX_QUEUED:,} prompts are queued already: wait for some to go out, or remove some"


class QueueFull(Exception):
    pass


@dataclass(eq=False)  # identity: two prompts with the same words are two prompts
class QueuedPrompt:
    text: str
    context: list[JsonObject] = field(default_factory=list)
    # The composer's tokens ("@name") of the attachments among `context`: given back with the text if it is not sent.
    attached: dict[str, JsonObject] = field(default_factory=dict)
    shown: str | None = None  # what the transcript shows instead of `text` (a review's compact form)


class PromptQueue:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._prompts: list[QueuedPrompt] = []
        self.version = 0  # changes with every change, for a display to redraw only then

    def __len__(self) -> int:
        with self._lock:
            return len(self._prompts)

    def __contains__(self, prompt: object) -> bool:
        with self._lock:
            return any(queued is prompt for queued in self._prompts)

    def full(self) -> bool:
        return len(self) >= MAX_QUEUED

    def add(self, prompt: QueuedPrompt, *, first: bool = False) -> int:
        """Queue `prompt` last (first: before every other); the count after."""
        with self._lock:
            if len(self._prompts) >= MAX_QUEUED:
                raise QueueFull(QUEUE_FULL)
            if first:
                self._prompts.insert(0, prompt)
            else:
                self._prompts.append(prompt)
            return self._changed()

    def take(self) -> QueuedPrompt | None:
        """The next prompt to send, out of the queue."""
        with self._lock:
            if not self._prompts:
                return None
            prompt = self._prompts.pop(0)
            self._changed()
            return prompt

    def prompts(self) -> list[QueuedPrompt]:
        with self._lock:
            return list(self._prompts)

    def index(self, prompt: QueuedPrompt) -> int:
        """Where `prompt` is now; ValueError once it went out or was removed."""
        with self._lock:
            return self._index(prompt)

    def at(self, index: int) -> QueuedPrompt:
        with self._lock:
            self._check(index)
            return self._prompts[index]

    def edit(self, prompt: QueuedPrompt, text: str) -> None:
        with self._lock:
            self._index(prompt)
            prompt.text = text
            self._changed()

    def remove(self, prompt: QueuedPrompt) -> None:
        with self._lock:
            del self._prompts[self._index(prompt)]
            self._changed()

    def move(self, prompt: QueuedPrompt, to: int) -> None:
        """Put `prompt` at place `to` (0 sends it next)."""
        with self._lock:
            self._check(to)
            self._prompts.pop(self._index(prompt))
            self._prompts.insert(to, prompt)
            self._changed()

    def move_by(self, prompt: QueuedPrompt, step: int) -> None:
        """Move `prompt` `step` places later (earlier if negative), kept within
        the queue: Move Down on the last prompt leaves it last. One lock
        throughout: a turn taking a prompt meanwhile cannot put the place out of range."""
        with self._lock:
            index = self._index(prompt)
            to = max(0, min(len(self._prompts) - 1, index + step))
            self._prompts.insert(to, self._prompts.pop(index))
            self._changed()

    def clear(self) -> int:
        with self._lock:
            count = len(self._prompts)
            self._prompts.clear()
            self._changed()
            return count

    def _index(self, prompt: QueuedPrompt) -> int:
        for index, queued in enumerate(self._prompts):
            if queued is prompt:
                return index
        raise ValueError("that prompt is no longer queued (it was sent or removed)")

    def _check(self, index: int) -> None:
        if not 0 <= index < len(self._prompts):
            raise IndexError(f"no queued prompt {index} (0-based; {len(self._prompts)} queued)")

    def _changed(self) -> int:
        self.version += 1
        return len(self._prompts)
