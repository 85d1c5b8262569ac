"""The chat session id each window/project last used, kept in the package's
cache folder so a restarted editor reloads the same conversation."""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
import time
from pathlib import Path

from ..agent.session_ids import session_id_or_none

log = logging.getLogger(__name__)
FILE_NAME = "chat-sessions.json"
MAX_ENTRIES = 500


def project_key(project_file: str | None, folders: list[str]) -> str | None:
    """Identifies a window across restarts: its project file, else its folders."""
    if project_file:
        return "project:" + os.path.realpath(project_file)
    if folders:
        return "folders:" + "|".join(os.path.realpath(f) for f in folders)
    return None


class SessionStore:
    def __init__(self, directory: Path) -> None:
        self.path = directory / FILE_NAME
        self._lock = threading.Lock()

    def _read(self) -> dict[str, dict[str, object]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as error:
            log.warning("%s is unreadable (%s); starting afresh", self.path, error)
            return {}
        return {k: v for k, v in data.items() if isinstance(v, dict)} if isinstance(data, dict) else {}

    def get(self, key: str) -> str | None:
        with self._lock:
            value = self._read().get(key, {}).get("sessionId")
        return session_id_or_none(value)

    def put(self, key: str, session_id: str | None) -> None:
        with self._lock:
            data = self._read()
            if session_id is None:
                data.pop(key, None)
            else:
                data[key] = {"sessionId": session_id, "updated": time.time()}
            if len(data) > MAX_ENTRIES:
                oldest = sorted(data, key=lambda k: float(str(data[k].get("updated", 0))))
                for stale in oldest[: len(data) - MAX_ENTRIES]:
                    del data[stale]
            self._write(data)

    def _write(self, data: dict[str, dict[str, object]]) -> None:
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # the user's alone, as the search index's
            handle, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".chat-sessions-")
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(data, out, indent=1)
            os.replace(temporary, self.path)
        except OSError as error:
            log.warning("could not save the chat session in %s: %s", self.path, error)
