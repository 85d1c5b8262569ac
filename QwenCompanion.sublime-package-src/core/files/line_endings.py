"""A text's line endings: which convention it uses, and the text with every
line break as `\\n` (how Sublime's buffers and the agents see it)."""

from __future__ import annotations

LF = "\n"
CRLF = "\r\n"
CR = "\r"


def line_ending_of(text: str) -> str | None:
    """CRLF or LF, whichever most line breaks of `text` use, CR for a text
    whose only breaks are lone CRs; None without any.

    A tie goes to CRLF: a file that holds CRLF breaks was made for Windows,
    and the LF ones among them are most likely lines another tool added."""
    crlf = text.count(CRLF)
    lf = text.count(LF) - crlf
    if crlf and crlf >= lf:
        return CRLF
    if lf:
        return LF
    return CR if CR in text else None


def lf_line_breaks(text: str) -> str:
    """`text` with every CRLF pair and lone CR as `\\n`."""
    return text.replace(CRLF, LF).replace(CR, LF)
