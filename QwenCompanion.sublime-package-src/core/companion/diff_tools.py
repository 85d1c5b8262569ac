"""The `openDiff` / `closeDiff` tools: their definitions, the backend that
answers them and who hears the user's decision on a review the CLI opened.

A `DiffBackend` does the real work (the editor's review tabs, given to each
companion when it is built); the default one answers with a clear error
instead of pretending. The decision goes back to the CLI session that opened
the review through a `CliReviewOwner`.

Line endings: Sublime keeps buffers with `\n` only. The CLI proposes text in
its own convention (`\n`, even for a CRLF file) and, when it writes, converts
to the style of the file on disk. So the accepted text goes back to the CLI in
the proposal's convention, and an unedited proposal goes back exactly as it
came: the CLI compares the two to tell whether the user edited it. The final
newline is whatever the buffer holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from mcp_types import Tool

from .. import threads
from ..files.line_endings import LF, line_ending_of
from ..reviews import MAX_OPEN_REVIEWS, Review, ReviewOwner, buffer_text
from .ide_messages import (
    DIFF_ACCEPTED,
    DIFF_REJECTED,
    CloseDiffArguments,
    DiffAccepted,
    DiffRejected,
    OpenDiffArguments,
    Outgoing,
)
from .protocol import QuotedText, ToolAnswer, text_result
from .server import RegisteredTool, validated_tool


class DiffBackend(Protocol):
    async def open_diff(self, session_id: str, arguments: OpenDiffArguments) -> ToolAnswer: ...

    async def close_diff(self, session_id: str, arguments: CloseDiffArguments) -> ToolAnswer: ...


class UnavailableDiffBackend:
    """Answers every diff call with an error until an editor backend exists."""

    @threads.on_server_loop
    async def open_diff(self, session_id: str, arguments: OpenDiffArguments) -> ToolAnswer:
        return text_result("openDiff is not available yet in this editor", is_error=True)

    @threads.on_server_loop
    async def close_diff(self, session_id: str, arguments: CloseDiffArguments) -> ToolAnswer:
        return text_result("closeDiff is not available yet in this editor", is_error=True)


OPEN_DIFF = Tool(
    name="openDiff",
    description="Open a diff view in Sublime Text comparing a file with proposed new content. "
    "The user's decision arrives later as ide/diffAccepted or ide/diffRejected.",
    input_schema=OpenDiffArguments.model_json_schema(),
)
CLOSE_DIFF = Tool(
    name="closeDiff",
    description="Close the diff view of a file and return the proposed side's current text.",
    input_schema=CloseDiffArguments.model_json_schema(),
)


def diff_tools(backend: DiffBackend) -> list[RegisteredTool]:
    return [
        validated_tool(OPEN_DIFF, OpenDiffArguments, backend.open_diff),
        validated_tool(CLOSE_DIFF, CloseDiffArguments, backend.close_diff),
    ]


def text_for_cli(new_content: str, text: str) -> str:
    """The buffer text `text` of a review of `new_content` as the CLI gets it back:
    the proposal's own line endings, the final newline exactly as present or
    absent in `text`; an unedited proposal exactly as the CLI sent it."""
    buffer = buffer_text(text)
    if buffer == buffer_text(new_content):
        return new_content
    return buffer.replace(LF, line_ending_of(new_content) or LF)


class SessionNotifier(Protocol):
    """What the CLI's review owner needs of the window's companion."""

    @property
    def running(self) -> bool: ...

    def has_session(self, session_id: str) -> bool: ...

    def notify(self, method: str, params: Outgoing, session_id: str | None = None) -> None: ...


@dataclass(frozen=True, eq=False)  # eq=False: never compares two proposals' texts
class CliReviewOwner:
    """The owner of a review the CLI opened with openDiff: the decision goes to
    the session that asked, as the notification the CLI waits for."""

    companion: SessionNotifier
    session_id: str
    file_path: str  # exactly as the CLI sent it
    new_content: str

    note = None  # the notes about the file on disk say what Accept does

    @property
    def alive(self) -> bool:
        return self.companion.running and self.companion.has_session(self.session_id)

    def accepted(self, text: str) -> None:
        params = DiffAccepted(filePath=self.file_path, content=text_for_cli(self.new_content, text))
        self.companion.notify(DIFF_ACCEPTED, params, session_id=self.session_id)

    def rejected(self) -> None:
        self.companion.notify(DIFF_REJECTED, DiffRejected(filePath=self.file_path), session_id=self.session_id)

    def same_session(self, other: ReviewOwner) -> bool:
        return isinstance(other, CliReviewOwner) and other.companion is self.companion and other.session_id == self.session_id


def cli_review_refusal(owner: CliReviewOwner, same_file: Review | None, open_reviews: list[Review]) -> str | None:
    """Why a CLI's openDiff is refused, if it is: the file is under another
    asker's review (a chat's permission, a quick action's proposal: replacing
    it would answer that one "reject" and show the CLI's text in its tabs), or
    the session already has MAX_OPEN_REVIEWS open reviews."""
    if same_file is not None and not isinstance(same_file.owner, CliReviewOwner):
        return (f"{owner.file_path} is already under review in the editor for another request; "
                "propose this change again once the user has answered that review")
    own = [r for r in open_reviews if r is not same_file and owner.same_session(r.owner)]
    if len(own) >= MAX_OPEN_REVIEWS:
        return (f"{MAX_OPEN_REVIEWS} of this session's changes already wait for the user's review in the editor; "
                "propose this one once they are answered")
    return None


def close_answer(content: str | None) -> str | QuotedText:
    """closeDiff's text block, as json.dumps writes it: the CLI reads
    `JSON.parse(text).content`. Quoted in ASCII with escapes, a slice at a time
    (QuotedText): encoding a non-ASCII text to UTF-8 (as pydantic-core does)
    would leave a UTF-8 copy cached in the proposal's string for as long as it
    lives."""
    if content is None:
        return '{"content": null}'
    return QuotedText('{"content": ', content, "}")
