"""Review comments' record and Send Review's prompt: the bounds (100
comments, 16 KB of text, 20 lines and 4 KB quoted), the withheld quote of an
excluded file, and outdated comments keeping their text and quote."""

from __future__ import annotations

import pytest

from qwencompanion_src.core.chat.comments.comments import (
    MAX_COMMENTS,
    MAX_TEXT_BYTES,
    OUTDATED,
    PENDING,
    SENT,
    CommentBook,
    CommentRefused,
)
from qwencompanion_src.core.chat.comments.review_prompt import (
    FILE_GONE,
    MAX_QUOTE_BYTES,
    MAX_QUOTED_LINES,
    WITHHELD,
    build_review,
)
from qwencompanion_src.core.context_rules import ContextOptions

FILES = {"/w/src/app.py": [f"line {n} = {n}" for n in range(1, 101)],
         "/w/.env": ["API_KEY=secret-token-123", "OTHER=1"],
         "/w/long.txt": ["x" * 1000 for _ in range(30)]}


def read_lines(path: str, line: int, end_line: int) -> list[str] | None:
    lines = FILES.get(path)
    return None if lines is None else lines[line - 1:end_line]


def review(book: CommentBook, message: str = "") -> object:
    return build_review(book.to_send(1), message, lambda p: p.removeprefix("/w/"), ContextOptions().excludes, read_lines)


def test_a_review_carries_path_lines_quote_and_comment_and_a_compact_transcript_form() -> None:
    book = CommentBook()
    book.add(1, "/w/src/app.py", 3, 4, "rename this")
    book.add(1, "/w/src/app.py", 10, None, "why ten?")
    book.add(1, "/w/long.txt", 1, 1, "shorter")
    sent = review(book, "Overall: tidy up.")
    assert sent.text.startswith("Review: 3 comments on 2 files\n\nOverall: tidy up.")  # type: ignore[attr-defined]
    assert "1. src/app.py, lines 3-4:\n```\nline 3 = 3\nline 4 = 4\n```\nrename this" in sent.text  # type: ignore[attr-defined]
    assert "2. src/app.py, line 10:\n```\nline 10 = 10\n```\nwhy ten?" in sent.text  # type: ignore[attr-defined]
    assert sent.shown == ("Review: 3 comments on 2 files\nOverall: tidy up.\n- src/app.py:3-4: rename this\n"  # type: ignore[attr-defined]
                          "- src/app.py:10: why ten?\n- long.txt:1: shorter")


def test_an_excluded_files_lines_are_never_quoted_and_the_comment_says_so() -> None:
    book = CommentBook()
    book.add(1, "/w/.env", 1, 2, "move this key out", quote="API_KEY=secret-token-123\nOTHER=1")
    text = review(book).text  # type: ignore[attr-defined]
    assert "secret-token-123" not in text and WITHHELD in text and "1. .env, lines 1-2:" in text
    assert "move this key out" in text


def test_a_quote_holds_at_most_20_lines_and_4_kb() -> None:
    book = CommentBook()
    book.add(1, "/w/src/app.py", 1, 100, "all of it")
    book.add(1, "/w/long.txt", 1, 30, "wide lines")
    text = review(book).text  # type: ignore[attr-defined]
    assert f"line {MAX_QUOTED_LINES} = " in text and f"line {MAX_QUOTED_LINES + 1} = " not in text
    wide = text.split("2. long.txt, lines 1-30:\n```\n", 1)[1].split("\n```", 1)[0]
    assert len(wide.encode()) <= MAX_QUOTE_BYTES + len("\n… (cut)".encode()) and wide.endswith("… (cut)")


def test_a_review_holds_at_most_100_comments_and_a_text_is_capped_at_16_kb() -> None:
    book = CommentBook()
    for n in range(MAX_COMMENTS):
        book.add(1, "/w/src/app.py", 1 + n % 50, None, f"comment {n}")
    with pytest.raises(CommentRefused, match="at most 100"):
        book.add(1, "/w/src/app.py", 1, None, "one too many")
    book.add(2, "/w/src/app.py", 1, None, "another chat's review has room")
    long = book.add(2, "/w/src/app.py", 1, None, "é" * MAX_TEXT_BYTES).text
    assert len(long.encode()) <= MAX_TEXT_BYTES and long == "é" * (MAX_TEXT_BYTES // 2)
    with pytest.raises(CommentRefused):
        book.add(2, "/w/src/app.py", 0, None, "no line 0")
    with pytest.raises(CommentRefused):
        book.add(2, "/w/src/app.py", 5, 4, "backwards")


def test_a_comment_on_a_file_gone_is_outdated_and_keeps_its_text_and_quote() -> None:
    book = CommentBook()
    made = book.add(1, "/w/renamed.py", 2, None, "fix", quote="old text")
    sent = review(book)
    assert sent.gone == [made.comment_id]  # type: ignore[attr-defined]
    assert FILE_GONE in sent.text and "old text" in sent.text and "fix" in sent.text  # type: ignore[attr-defined]


def test_comments_move_go_outdated_are_sent_then_cleared_when_the_turn_ends() -> None:
    book = CommentBook()
    first = book.add(1, "/w/src/app.py", 3, None, "a")
    second = book.add(1, "/w/src/app.py", 8, None, "b")
    book.moved(first.comment_id, 5, 6)
    book.outdated(second.comment_id)
    assert [(c.line, c.end_line, c.state) for c in book.of_chat(1)] == [(5, 6, PENDING), (8, 8, OUTDATED)]
    book.mark_sent([c.comment_id for c in book.to_send(1)])
    assert [c.state for c in book.of_chat(1)] == [SENT, OUTDATED] and book.to_send(1) == []
    later = book.add(1, "/w/src/app.py", 1, None, "after the round")
    assert [c.comment_id for c in book.clear_sent(1)] == [first.comment_id, second.comment_id]
    assert book.of_chat(1) == [later]


def test_nothing_an_agent_reaches_imports_the_comments() -> None:
    """The agent's requests (ACP's and the CLIs' MCP) are answered by modules
    that never import the comments: an agent cannot add, change or read them."""
    import ast
    from pathlib import Path

    source = Path(__file__).resolve().parents[2] / "QwenCompanion.sublime-package-src"
    reachable = [*source.glob("core/chat/requests/*.py"), *source.glob("core/chat/agent/*.py"),
                 *source.glob("core/companion/*.py"), *source.glob("core/serve/*.py"),
                 *source.glob("plugin/chat/requests/*.py"), *source.glob("plugin/companion/*.py")]
    assert reachable
    importing = []
    for path in reachable:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and "comments" in (node.module or "").split("."):
                importing.append(str(path.relative_to(source)))
    assert importing == []
