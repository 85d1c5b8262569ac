"""How often an agent may do a thing the user sees (`open_file`)."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable


class RateLimit:
    """At most `count` times in any `seconds`; the ones over it are refused."""

    def __init__(self, count: int, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._count = count
        self._seconds = seconds
        self._clock = clock
        self._times: deque[float] = deque()
        self._lock = threading.Lock()  # the tools run on several threads

    def take(self) -> float | None:
        """None when allowed (and counted), else the seconds until the next is."""
        with self._lock:
            now = self._clock()
            while self._times and now - self._times[0] >= self._seconds:
                self._times.popleft()
            if len(self._times) >= self._count:
                return self._seconds - (now - self._times[0])
            self._times.append(now)
            return None
