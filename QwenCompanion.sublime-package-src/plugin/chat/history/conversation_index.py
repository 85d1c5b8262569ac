"""Search in Conversations' index (core/chat/history/search_index.py) in the user's
cache folder, Sublime's `cache_path()` (never a project's folder): each turn
is added, without what an export leaves out of it, and the index searched,
on a thread of ours."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future

import sublime

from ....core.chat.history.search_index import FILE_NAME, SearchIndex, indexed_text
from ....core.context_rules import ContextOptions
from ...background import in_background
from ...paths import package_cache
from ...settings import userprefs


def index_path() -> str:
    return str(package_cache() / FILE_NAME)


def turn_indexer() -> Callable[[str, str, str, list[tuple[str, str]]], None]:
    """What a chat gives each finished turn: the settings' excluded files are
    read on the main thread, the turn filtered and added on a thread of ours."""
    index = SearchIndex(index_path())

    def index_turn(session_id: str, prompt: str, answer: str, turn_blocks: list[tuple[str, str]]) -> None:
        def with_the_settings() -> None:
            excludes = ContextOptions.from_settings(userprefs().context_values()).excludes
            in_background(lambda: index.add(session_id, *indexed_text(prompt, answer, turn_blocks, excludes)),
                          "search index")

        sublime.set_timeout(with_the_settings)

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
