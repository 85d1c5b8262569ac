"""The one line-ending detector, shared by the reviews (which convert an
accepted text back to the proposal's breaks) and the agent's file writes
(which keep the file's breaks)."""

from __future__ import annotations

import pytest

from qwencompanion_src.core.files.agent_files import decode
from qwencompanion_src.core.files.line_endings import CR, CRLF, LF, lf_line_breaks, line_ending_of


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", None),
        ("no break", None),
        ("a\nb\n", LF),
        ("a\r\nb\r\n", CRLF),
        ("a\r\nb\r\nc\n", CRLF),  # most breaks win
        ("a\nb\nc\r\n", LF),
        ("a\r\nb\n", CRLF),  # a tie goes to CRLF
        ("a\r\nb\nc\r\nd\n", CRLF),
        ("a\rb\r", CR),  # only lone CRs: classic Mac
        ("a\rb\nc", LF),  # a lone CR among LF breaks is not a break of its own kind
    ],
)
def test_line_ending_of(text: str, expected: str | None) -> None:
    assert line_ending_of(text) == expected


@pytest.mark.parametrize("text", ["a\r\nb\n", "a\r\nb\r\nc\n", "a\nb\nc\r\n", "a\rb", "x"])
def test_a_file_and_a_review_of_it_agree_on_its_line_ending(text: str) -> None:
    assert decode(text.encode()).shape.newline == (line_ending_of(text) or LF)


def test_every_break_becomes_lf() -> None:
    assert lf_line_breaks("a\r\nb\rc\nd") == "a\nb\nc\nd"
