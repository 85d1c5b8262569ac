"""A chat exported (pure): Markdown (the transcript as it reads), HTML (a page
of its own, every text escaped) or JSON Lines (one object per block, for
tools), and the last answer alone.

What the user excluded from what is sent (`excluded_file_patterns`: keys,
`.env`) never leaves through an export: a tool call or permission request
that names such a file keeps its line, but its output or input is left out,
and any line elsewhere (an answer quoting it) that holds a line of what was
left out goes too; so does, wherever it is quoted (inside a sentence), the
value of each of its `KEY=VALUE` lines and each of its words of
MIN_SECRET_TOKEN characters or more. Runs off the main thread (a
5,000-message chat is one pass over its blocks).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

FORMATS = {"markdown": "md", "html": "html", "jsonl": "jsonl"}
LEFT_OUT = "*(left out of the export: it names a file excluded from what is sent)*"
LINE_LEFT_OUT = "*(line left out of the export: it quotes an excluded file)*"
VALUE_LEFT_OUT = "[left out]"
# Lines of excluded output shorter than this are too common ("}", "ok") to hunt for elsewhere.
MIN_SECRET_LINE = 6
MAX_SECRET_LINES = 2000  # lines hunted for elsewhere (a huge excluded file is cut from its own block all the same)
MIN_SECRET_TOKEN = 8  # a word of excluded output this long is hunted for inside other text
MIN_SECRET_VALUE = 4  # a `KEY=VALUE` line's value this long too ("1", "no" are too common), as a word of its own
MAX_SECRET_WORDS = 4000  # values and words hunted for elsewhere
# `KEY=VALUE` anywhere in a line (a diff's "+", `export`, indentation before it); the value without its quotes.
KEY_VALUE = re.compile(r"[A-Za-z_][\w.-]*\s*=\s*[\"']?([^\s\"']+)")
TOKEN = re.compile(r"[^\s\"'`=,;()\[\]{}<>]+")

AGENT_HEADER = "## Qwen\n\n"  # render.AGENT_HEADER (render imports the protocol's models: not on the main thread)
BLOCK_KIND = re.compile(r"t(\d+)\.(user|agent\d*|note|footer|plan|thought)(\.end)?$")

Excludes = Callable[[str], bool]


@dataclass(frozen=True)
class Block:
    kind: str  # user | agent | note | usage | plan | thought | tool | permission | other
    turn: int  # the transcript's turn it belongs to (0: before any)
    text: str


def blocks_of(raw: Iterable[tuple[str, str]]) -> list[Block]:
    """The transcript's blocks, by kind; a tool call or request belongs to the turn before it."""
    out: list[Block] = []
    turn = 0
    for block_id, text in raw:
        match = BLOCK_KIND.match(block_id)
        if match:
            turn = int(match[1])
            kind = match[2].rstrip("0123456789")
            kind = {"footer": "usage"}.get(kind, kind)
            if match[3]:  # a thought's closing blank line
                kind = "thought"
        elif block_id.startswith("tool."):
            kind = "tool"
        elif block_id.startswith("perm"):
            kind = "permission"
        else:
            kind = "other"
        if text:
            out.append(Block(kind, turn, text))
    return out


def _named_paths(text: str) -> list[str]:
    """The words of a tool call's line and of a request's "Files:" line, as paths."""
    head = text.split("\n", 2)
    lines = [head[0]] + [line[len("Files: "):] for line in head[1:2] if line.startswith("Files: ")]
    words = " ".join(lines).replace(",", " ").split()
    return [re.sub(r":\d+$", "", word.strip("`*()[]")) for word in words]


def _names_excluded(excludes: Excludes) -> Callable[[str], bool]:
    """Whether a tool call's or request's text names an excluded file."""
    seen: dict[str, bool] = {}  # a word asked about once: "✓", "read", "completed" come on every tool line

    def excluded(path: str) -> bool:
        if path not in seen:
            seen[path] = excludes(path)
        return seen[path]

    return lambda text: any(excluded(path) for path in _named_paths(text) if path)


def naming_excluded(raw: Iterable[tuple[str, str]], excludes: Excludes) -> list[Block]:
    """The tool calls and requests among the transcript blocks `raw` that name
    an excluded file: all `redacted` needs of a turn's work (a turn of 100,000
    tool calls gives a handful, not 100,000 blocks)."""
    names_excluded = _names_excluded(excludes)
    return blocks_of((block_id, text) for block_id, text in raw
                     if block_id.startswith(("tool.", "perm")) and names_excluded(text))


def _secret_words(lines: list[str]) -> list[str]:
    """The values of `lines`' `KEY=VALUE`s and their long words, longest first
    (a word inside a longer one is left out after it)."""
    words = [match[1] for line in lines for match in KEY_VALUE.finditer(line) if len(match[1]) >= MIN_SECRET_VALUE]
    words += [word for line in lines for word in TOKEN.findall(line) if len(word) >= MIN_SECRET_TOKEN]
    return sorted(dict.fromkeys(words), key=len, reverse=True)[:MAX_SECRET_WORDS]


def redacted(blocks: list[Block], excludes: Excludes) -> list[Block]:
    """`blocks` with what excluded files gave left out (see the module's note)."""
    secret_lines: list[str] = []
    out: list[Block] = []
    names_excluded = _names_excluded(excludes)

    for block in blocks:
        if block.kind in ("tool", "permission") and names_excluded(block.text):
            first, _, rest = block.text.partition("\n")
            secret_lines += [line.strip() for line in rest.split("\n") if line.strip()]
            out.append(Block(block.kind, block.turn, f"{first}\n{LEFT_OUT}\n\n"))
        else:
            out.append(block)
    lines = list(dict.fromkeys(line for line in secret_lines if len(line) >= MIN_SECRET_LINE))[:MAX_SECRET_LINES]
    words = _secret_words(secret_lines[:MAX_SECRET_LINES])
    everything = "\n".join(block.text for block in out)  # one search each over the whole chat, not one per block
    lines, words = [line for line in lines if line in everything], [word for word in words if word in everything]
    if not lines and not words:
        return out
    return [Block(block.kind, block.turn, _scrub_words(_scrub_lines(block.text, lines), words)) for block in out]


def _scrub_lines(text: str, secrets: list[str]) -> str:
    if not any(secret in text for secret in secrets):
        return text
    return "\n".join(LINE_LEFT_OUT if any(secret in line for secret in secrets) else line
                     for line in text.split("\n"))


def _scrub_words(text: str, words: list[str]) -> str:
    """`text` with each of `words` in it replaced; one shorter than
    MIN_SECRET_TOKEN only where it is a word of its own."""
    found = [word for word in words if word in text]  # most texts hold none: one fast pass each
    if not found:
        return text
    pattern = "|".join(re.escape(word) if len(word) >= MIN_SECRET_TOKEN else rf"(?<![\w-]){re.escape(word)}(?![\w-])"
                       for word in found)
    return re.sub(pattern, VALUE_LEFT_OUT, text)


def markdown(blocks: list[Block], title: str) -> str:
    return f"# {title}\n\n" + "".join(block.text for block in blocks).rstrip("\n") + "\n"


def jsonl(blocks: list[Block], title: str, session_id: str | None) -> str:
    head = json.dumps({"kind": "chat", "title": title, "sessionId": session_id}, ensure_ascii=False)
    lines = [json.dumps({"kind": b.kind, "turn": b.turn, "text": b.text}, ensure_ascii=False) for b in blocks]
    return "\n".join([head, *lines]) + "\n"


HTML_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:60em;margin:2em auto;padding:0 1em}"
    "section{margin:1em 0}pre{white-space:pre-wrap;font-family:inherit;margin:0}"
    ".user{background:#eef4ff;padding:.5em}.tool,.permission,.usage,.plan,.thought,.note"
    "{font-family:monospace;font-size:.9em;color:#444}"
)


def html_page(blocks: list[Block], title: str) -> str:
    sections = "\n".join(f'<section class="{b.kind}"><pre>{html.escape(b.text.rstrip())}</pre></section>'
                         for b in blocks)
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{HTML_STYLE}</style></head>\n<body><h1>{html.escape(title)}</h1>\n{sections}\n</body></html>\n")


def _redacted_chat(raw: Iterable[tuple[str, str]], excludes: Excludes, shown: Iterable[tuple[str, str]]) -> list[Block]:
    """The chat's blocks redacted; `shown`: blocks as they were once shown (a
    request before its answer replaced it), hunted for but not exported."""
    blocks = blocks_of(raw)
    return redacted([*blocks, *naming_excluded(shown, excludes)], excludes)[:len(blocks)]


def export(raw: Iterable[tuple[str, str]], fmt: str, title: str, session_id: str | None, excludes: Excludes,
           shown: Iterable[tuple[str, str]] = ()) -> str:
    """The chat in `fmt` (a key of FORMATS); `shown` as `_redacted_chat`'s."""
    blocks = _redacted_chat(raw, excludes, shown)
    if fmt == "html":
        return html_page(blocks, title)
    if fmt == "jsonl":
        return jsonl(blocks, title, session_id)
    return markdown(blocks, title)


def answer(raw: Iterable[tuple[str, str]], turn: int | None, excludes: Excludes,
           shown: Iterable[tuple[str, str]] = ()) -> str:
    """The agent's words of turn `turn` (default: the last turn with any),
    without the transcript's heading; "" when there are none."""
    blocks = [b for b in _redacted_chat(raw, excludes, shown) if b.kind == "agent"]
    chosen = turn if turn is not None else (blocks[-1].turn if blocks else None)
    text = "".join(b.text for b in blocks if b.turn == chosen)
    return text.removeprefix(AGENT_HEADER).strip()
