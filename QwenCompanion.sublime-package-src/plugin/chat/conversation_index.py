"""Search in Conversations' index (core/chat/search_index.py) in the user's
cache folder, Sublime's `cache_path()` (never a project's folder): each turn
is added, and the index searched, on a thread of ours."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path

import sublime

from ...core.chat.search_index import FILE_NAME, SearchIndex
from ..background import in_background

CACHE_FOLDER = "QwenCompanion"


def index_path() -> str:
    return str(Path(sublime.cache_path()) / CACHE_FOLDER / FILE_NAME)


def turn_indexer() -> Callable[[str, str, str], None]:
    """What a chat gives each finished turn: it is added off the caller's thread."""
    index = SearchIndex(index_path())

    def index_turn(session_id: str, prompt: str, answer: str) -> None:
        in_background(lambda: index.add(session_id, prompt, answer), "search index")

    return index_turn


def sessions_matching(query: str) -> Future[set[str]]:
    """The sessions whose prompts and answers hold every word of `query` (read on a thread of ours)."""
    index = SearchIndex(index_path())
    found: Future[set[str]] = Future()

    def search() -> None:
        try:
            found.set_result(index.sessions_matching(query))
        except Exception as error:
            found.set_exception(error)
            raise

    in_background(search, "search index")
    return found
