"""The chat session each window last used (core/chat/history/store.py): the
package's cache folder it makes is the user's alone, as the search index's is,
whichever of them comes first."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from qwencompanion_src.core.chat.history.store import SessionStore


@pytest.mark.skipif(os.name == "nt", reason="POSIX modes")
def test_the_cache_folder_and_the_sessions_file_are_the_users_alone(tmp_path: Path) -> None:
    before = os.umask(0o022)  # the umask most desktops start an editor with
    try:
        store = SessionStore(tmp_path / "cache" / "QwenCompanion")
        store.put("folders:/w", "s1")
    finally:
        os.umask(before)
    assert stat.S_IMODE(store.path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert store.get("folders:/w") == "s1"
