"""Chat History (pure): an agent's earlier sessions as the list shows them.

qwen 0.24.4 answers `session/list {cwd, cursor?}` a page at a time (numeric
cursor as a string, `nextCursor` while more are left), each session with
`sessionId`, `cwd`, `title` (the name given, else the first prompt),
`updatedAt` and `_meta.preview` (the first prompt); it gives no count of
messages. Another agent may leave any of these out, or be hostile: the list
is read page by page up to MAX_LISTED_SESSIONS in all, a repeated cursor
ends it, and every text kept is cut (TITLE_MAX_CHARS, PREVIEW_MAX_CHARS).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from ...display_text import display_text
from ..agent.agents import MAX_LISTED_SESSIONS, TITLE_MAX_CHARS
from ..agent.session_ids import session_id_or_none

PREVIEW_MAX_CHARS = 200  # of the first prompt, in the list's details
MAX_PAGES = 200  # a hostile agent's endless cursors end here even with empty pages

ListPage = Callable[[str, str | None], Awaitable[Any]]  # (cwd, cursor) -> the agent's session/list answer


@dataclass(frozen=True)
class SavedConversation:
    """One earlier session, every text bounded; `messages` None: the agent did not say."""

    session_id: str
    title: str
    updated: str  # ISO 8601 as the agent gave it ("" when it did not)
    first_prompt: str
    cwd: str
    messages: int | None = None

    def when(self) -> str:
        """`2026-11-28 09:53`: the time as the list shows it."""
        return self.updated[:16].replace("T", " ")

    def matches(self, query: str) -> bool:
        """Every word of `query` in the title or the first prompt (any case)."""
        haystack = f"{self.title}\n{self.first_prompt}".casefold()
        return all(word in haystack for word in query.casefold().split())


def _text(value: object, limit: int) -> str:
    return " ".join(value[: limit * 2].split())[:limit] if isinstance(value, str) else ""


def entry_of(raw: object) -> SavedConversation | None:
    """A session of a session/list answer, or None when it has no usable id."""
    if not isinstance(raw, dict):
        return None
    session_id = session_id_or_none(raw.get("sessionId"))
    if session_id is None:
        return None
    meta = raw.get("_meta")
    meta = meta if isinstance(meta, dict) else {}
    first_prompt = display_text(meta.get("preview"), PREVIEW_MAX_CHARS)
    count = meta.get("messageCount")
    return SavedConversation(
        session_id=session_id,
        title=display_text(raw.get("title"), TITLE_MAX_CHARS) or first_prompt[:TITLE_MAX_CHARS] or session_id,
        updated=display_text(raw.get("updatedAt"), 40),
        first_prompt=first_prompt,
        cwd=_text(raw.get("cwd"), 4096),
        messages=count if isinstance(count, int) and not isinstance(count, bool) and count >= 0 else None,
    )


async def list_folder(list_page: ListPage, cwd: str, limit: int = MAX_LISTED_SESSIONS) -> list[SavedConversation]:
    """The sessions of one folder, page after page, at most `limit`."""
    entries: list[SavedConversation] = []
    cursor: str | None = None
    seen_cursors: set[str] = set()
    for _ in range(MAX_PAGES):
        answer = await list_page(cwd, cursor)
        page = answer.get("sessions") if isinstance(answer, dict) else None
        for raw in page[: limit - len(entries)] if isinstance(page, list) else []:
            entry = entry_of(raw)
            if entry is not None:
                entries.append(entry)
        following = answer.get("nextCursor") if isinstance(answer, dict) else None
        if len(entries) >= limit or not isinstance(following, str) or not following or following in seen_cursors:
            break
        if len(following) > 100:  # a cursor is a number to qwen; a huge one is not sent back
            break
        seen_cursors.add(following)
        cursor = following
    return entries


def newest_first(folders: Iterable[list[SavedConversation]], limit: int = MAX_LISTED_SESSIONS) -> list[SavedConversation]:
    """The folders' sessions merged, each once, newest first (an agent that
    gives no time keeps its own order, after the dated ones), at most `limit`."""
    by_id: dict[str, SavedConversation] = {}
    for entries in folders:
        for entry in entries:
            by_id.setdefault(entry.session_id, entry)
    ordered = sorted(by_id.values(), key=lambda entry: entry.updated, reverse=True)  # stable: undated keep order
    return ordered[:limit]


def filtered(entries: list[SavedConversation], query: str, said: AbstractSet[str] = frozenset()) -> list[SavedConversation]:
    """The entries whose title or first prompt hold every word of `query`, or
    whose id is in `said` (the sessions whose prompts and answers do)."""
    if not query.strip():
        return list(entries)
    return [entry for entry in entries if entry.session_id in said or entry.matches(query)]


def annotation(entry: SavedConversation, open_here: bool) -> str:
    size = f" · {entry.messages} messages" if entry.messages is not None else ""
    return ("open · " if open_here else "") + entry.when() + size


def details(entry: SavedConversation, several_folders: bool) -> str:
    folder = f"{entry.cwd} — " if several_folders and entry.cwd else ""
    return folder + (entry.first_prompt or "(no prompt)")
