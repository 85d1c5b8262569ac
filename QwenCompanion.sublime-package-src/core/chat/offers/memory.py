"""qwen's memory over ACP (qwen 0.24.4; workspace methods, no session needed):

- `qwen/control/workspace/memory/remember {content, scope?}` -> `{summary,
  filesTouched: [path], touchedScopes}`: an agent of qwen's writes the note
  into its managed memory; -32009 "Managed memory is unavailable" when qwen's
  settings turn managed memory off (`memory.enableManagedAutoMemory`).
- `qwen/control/workspace/memory/forget {query, scope?}` -> `{summary,
  removedEntries, touchedTopics, touchedScopes}`.
- `qwen/settings/getMemoryPaths {}` -> `{paths: {userMemoryFile,
  projectMemoryFile, autoMemoryDir}}`.

Both texts are at most `MAX_MEMORY_TEXT_BYTES` (qwen's own limit is larger);
answers are bounded and cleaned like every other (qwen_calls.py)."""

from __future__ import annotations

from dataclasses import dataclass

from ...display_text import display_text
from .qwen_calls import MAX_ITEMS, BadAnswer, Request, bounded_text

REMEMBER_METHOD = "qwen/control/workspace/memory/remember"
FORGET_METHOD = "qwen/control/workspace/memory/forget"
PATHS_METHOD = "qwen/settings/getMemoryPaths"
MAX_MEMORY_TEXT_BYTES = 16 * 1024
PATH_CHARS = 4096
# What each of getMemoryPaths' entries is, for the quick panel.
PATH_NAMES = {"userMemoryFile": "your memory (every project)", "projectMemoryFile": "this project's memory",
              "autoMemoryDir": "qwen's managed memory folder"}


@dataclass(frozen=True)
class MemoryChange:
    summary: str
    items: list[str]  # the files written (remember) or the entries removed (forget), cleaned


def _change(answer: object, files_key: str) -> MemoryChange:
    if not isinstance(answer, dict):
        raise BadAnswer(f"the agent's memory answer is not an object: {str(answer)[:200]}")
    summary = bounded_text(answer.get("summary"))
    files = answer.get(files_key)
    listed = files[:MAX_ITEMS] if isinstance(files, list) else []
    names = [display_text(f, PATH_CHARS) if isinstance(f, str) else display_text(str(f)[:PATH_CHARS], PATH_CHARS)
             for f in listed]
    return MemoryChange(display_text(summary, 1000) if summary else "done", [name for name in names if name])


def _text(text: str) -> str:
    return text.strip().encode()[:MAX_MEMORY_TEXT_BYTES].decode(errors="ignore")


async def remember(request: Request, text: str) -> MemoryChange:
    return _change(await request(REMEMBER_METHOD, {"content": _text(text)}), "filesTouched")


async def forget(request: Request, text: str) -> MemoryChange:
    return _change(await request(FORGET_METHOD, {"query": _text(text)}), "removedEntries")


async def memory_paths(request: Request) -> list[tuple[str, str]]:
    """(what it is, its path) of each memory file or folder qwen names."""
    answer = await request(PATHS_METHOD, {})
    paths = answer.get("paths") if isinstance(answer, dict) else None
    if not isinstance(paths, dict):
        raise BadAnswer(f"the agent's memory paths are not an object: {str(answer)[:200]}")
    found = [(PATH_NAMES[key], paths[key]) for key in PATH_NAMES if isinstance(paths.get(key), str)]
    return [(name, path) for name, path in found if 0 < len(path) <= PATH_CHARS and display_text(path, PATH_CHARS) == path]
