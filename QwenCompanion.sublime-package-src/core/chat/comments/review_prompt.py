"""Send Review's prompt: every comment of a round as one prompt (built on a
thread of ours, never the main thread). For each comment the model gets the
file's path relative to its folder, the line range, the quoted lines (at
most 20 lines and 4 KB) and the comment; a file `excluded_file_patterns`
matches is never quoted, and the comment says the quote was withheld. The
transcript shows the round in compact form: a summary line and one line a
comment, no quotes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .comments import OUTDATED, Comment, capped

MAX_QUOTED_LINES = 20
MAX_QUOTE_BYTES = 4 * 1024
WITHHELD = "(the quote is withheld: the file matches excluded_file_patterns)"
FILE_GONE = "(outdated: the file was deleted or renamed since)"
LINES_GONE = "(outdated: these lines were deleted since; the quote is what they held)"
SHOWN_COMMENT_CHARS = 200  # of a comment, in the transcript's compact list


@dataclass(frozen=True)
class ReviewRound:
    text: str  # what the agent gets
    shown: str  # what the transcript shows
    comment_ids: list[int]
    gone: list[int]  # comments whose file is gone: outdated now


def quote_of(lines: list[str]) -> str:
    """At most MAX_QUOTED_LINES lines and MAX_QUOTE_BYTES bytes, with a note when cut."""
    kept = lines[:MAX_QUOTED_LINES]
    text = capped("\n".join(kept), MAX_QUOTE_BYTES)
    if len(kept) < len(lines) or len(text) < len("\n".join(kept)):
        text += "\n… (cut)"
    return text


def summary(comments: list[Comment]) -> str:
    files = len({c.path for c in comments})
    return (f"Review: {len(comments)} comment{'s' * (len(comments) != 1)} "
            f"on {files} file{'s' * (files != 1)}")


def build_review(comments: list[Comment], message: str, relative: Callable[[str], str],
                 excluded: Callable[[str], bool], read_lines: Callable[[str, int, int], list[str] | None]) -> ReviewRound:
    """The round's prompt. `read_lines(path, line, end_line)` gives a file's
    lines now (None: the file is gone); it is asked only for a pending
    comment of a file not excluded that has no quote of its own."""
    head = summary(comments)
    parts, shown, gone = [head], [head], []
    if message.strip():
        parts.append(message.strip())
        shown.append(message.strip())
    parts.append("Each comment names a file (relative to its folder), its lines, quotes them, then says what to do:")
    for number, comment in enumerate(comments, start=1):
        name = relative(comment.path)
        quote, note = _quote(comment, excluded, read_lines)
        if note == FILE_GONE:
            gone.append(comment.comment_id)
        block = [f"{number}. {name}, {comment.lines()}:"]
        if note:
            block.append(note)
        if quote is not None:
            block.append("```\n" + quote + "\n```")
        block.append(comment.text)
        parts.append("\n".join(block))
        shown.append(f"- {name}:{comment.line}" + (f"-{comment.end_line}" if comment.end_line != comment.line else "")
                     + f": {_one_line(comment.text)}")
    return ReviewRound("\n\n".join(parts), "\n".join(shown), [c.comment_id for c in comments], gone)


def _quote(comment: Comment, excluded: Callable[[str], bool],
           read_lines: Callable[[str, int, int], list[str] | None]) -> tuple[str | None, str]:
    """(the quote, a note on it)."""
    if excluded(comment.path):
        return None, WITHHELD
    if comment.state == OUTDATED:
        return (quote_of(comment.quote.split("\n")) if comment.quote else None), LINES_GONE
    lines = read_lines(comment.path, comment.line, min(comment.end_line, comment.line + MAX_QUOTED_LINES))
    if lines is None:
        return (quote_of(comment.quote.split("\n")) if comment.quote else None), FILE_GONE
    if comment.quote is not None:
        return quote_of(comment.quote.split("\n")), ""
    return quote_of(lines[:comment.end_line - comment.line + 1]), ""


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= SHOWN_COMMENT_CHARS else flat[:SHOWN_COMMENT_CHARS - 1] + "…"
