"""Send Review: a chat's unsent comments as one round, built on a thread of
ours (review_prompt.py) and queued as any prompt. Comments made in the
proposal tab of a review still open go to that review's asker instead: a
chat's permission is rejected with them as its reason (the agent redoes the
edit); a CLI's openDiff carries no reason, so it is rejected and the user
picks where the comments go (the clipboard, ready for the terminal, or the
window's chat) and is told what happened."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future

import sublime

from ....core import threads
from ....core.chat.comments.comments import Comment
from ....core.chat.comments.review_prompt import MAX_QUOTE_BYTES, ReviewRound, build_review
from ....core.context_rules import ContextOptions
from ...background import in_background
from ...paths import path_display
from ...quick_panel_items import panel_item
from ...reviews.review_tabs import OpenReview, reviews
from ...settings import userprefs
from ..requests.editor_request_handler import PromptReview
from ..window_chats import WindowChat, chats
from .comment_marks import adopt_orphans, book, hide, open_proposal, show

READ_LIMIT = 16 * 1024 * 1024  # characters of a file read for its quoted lines


@threads.on_main
def send_review(window: sublime.Window, chat: WindowChat, message: str = "") -> Future[int]:
    """Send the chat's unsent comments; the number sent (once queued, or handed to a review's asker)."""
    done: Future[int] = Future()
    adopt_orphans(window, chat.chat_id)
    comments = book.to_send(chat.chat_id)
    if not comments:
        done.set_result(0)
        return done
    plain: list[Comment] = []
    on_proposals: dict[int, tuple[OpenReview, list[Comment]]] = {}
    for comment in comments:
        item = open_proposal(comment)
        if item is not None:
            on_proposals.setdefault(item.review.id, (item, []))[1].append(comment)
        else:
            if comment.review_id is not None:  # its review was answered: the proposal's lines are gone
                book.outdated(comment.comment_id)
            plain.append(comment)
    plain = [book.get(c.comment_id) or c for c in plain]
    excluded = ContextOptions.from_settings(userprefs().context_values()).excludes
    relative = path_display(window)

    def build() -> None:
        try:
            sent = 0
            if plain:
                round_ = build_review(plain, message, relative, excluded, _file_reader())
                for comment_id in round_.gone:
                    book.outdated(comment_id)
                if chat.send(round_.text, shown=round_.shown):
                    _sent(chat, round_)
                    sent += len(round_.comment_ids)
            rounds = [(item, build_review(group, message, relative, excluded, _proposal_lines))
                      for item, group in on_proposals.values()]
            if rounds:
                sublime.set_timeout(lambda: [_to_asker(window, chat, item, round_) for item, round_ in rounds])
                sent += sum(len(round_.comment_ids) for _, round_ in rounds)
            done.set_result(sent)  # a full queue sends nothing: the transcript says so, the comments stay pending
        except Exception as error:  # the caller hears it
            done.set_exception(error)

    in_background(build, "review")
    return done


def _sent(chat: WindowChat, round_: ReviewRound) -> None:
    """The review texts a chat waits to see taken from its queue and answered."""
    book.mark_sent(round_.comment_ids)
    chat.reviews_awaited.add(round_.text)
    sublime.set_timeout(lambda: [show(c) for c in book.of_chat(chat.chat_id)])


@threads.on_main
def _to_asker(window: sublime.Window, chat: WindowChat, item: OpenReview, round_: ReviewRound) -> None:
    """Comments on a proposal: its permission is rejected with them as the reason; a CLI's review asks the user."""
    owner = item.review.owner
    if isinstance(owner, PromptReview):
        asker = chats.by_id(owner.chat_id)
        if owner.rejected_with(round_.text, round_.shown) and asker is not None:
            _sent(asker, round_)
        return
    reviews.reject(item.review)
    _ask_where(window, chat, item.name, round_)


def _ask_where(window: sublime.Window, chat: WindowChat, name: str, round_: ReviewRound) -> None:
    """The CLI's protocol carries no reason: the user picks where the comments go."""
    choices: list[tuple[str, str, Callable[[], str]]] = [
        ("Copy the Comments for the Terminal", "ready to paste into qwen's prompt", lambda: _copied(round_)),
        ("Send the Comments to the Chat", "as a prompt of the window's chat", lambda: _to_chat(chat, round_)),
    ]

    def picked(index: int) -> None:
        told = choices[index][2]() if index >= 0 else "your comments stay in the list (Send Review sends them)"
        window.status_message(f"Qwen Code: rejected the change to {name}; {told}")

    items = [panel_item(title, details) for title, details, _ in choices]
    window.show_quick_panel(items, picked, placeholder=f"Rejected the change to {name}: where do your comments go?")


def _copied(round_: ReviewRound) -> str:
    """On the clipboard, the comments are done with: they go."""
    sublime.set_clipboard(round_.text)
    for comment_id in round_.comment_ids:
        if book.get(comment_id) is not None:
            hide(book.delete(comment_id))
    return "your comments are on the clipboard, ready to paste into the terminal"


def _to_chat(chat: WindowChat, round_: ReviewRound) -> str:
    if not chat.send(round_.text, shown=round_.shown):
        return "the chat's queue is full: your comments stay in the list"
    _sent(chat, round_)
    return "your comments went to the chat"


@threads.may_block
def _proposal_lines(path: str, line: int, end_line: int) -> list[str] | None:
    """A proposal's lines are quoted as they were commented, never read from the file."""
    return []


def _file_reader() -> Callable[[str, int, int], list[str] | None]:
    """Lines `line`…`end_line` of a file on disk (None: it is gone), each file read once a round."""
    files: dict[str, list[str] | None] = {}

    def read(path: str, line: int, end_line: int) -> list[str] | None:
        if path not in files:
            files[path] = _file_lines(path)
        lines = files[path]
        return None if lines is None else [text[:MAX_QUOTE_BYTES] for text in lines[line - 1:end_line]]

    return read


@threads.may_block
def _file_lines(path: str) -> list[str] | None:
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as file:
            return file.read(READ_LIMIT).replace("\r\n", "\n").split("\n")
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError:
        return []


def review_turn_event(event: str, details: dict[str, object]) -> None:
    """A chat's turn ended: once every review round it was sent was taken and answered, its sent comments go."""
    chat_id = details.get("chat")
    chat = chats.by_id(chat_id) if event == "chat_turn_ended" and isinstance(chat_id, int) else None
    if chat is None or not chat.reviews_awaited:
        return
    if chat.reviews_awaited & {p.text for p in chat.queue.prompts()}:
        return  # an earlier turn ended; a round still waits its turn
    chat.reviews_awaited.clear()
    gone = book.clear_sent(chat.chat_id)
    sublime.set_timeout(lambda: [hide(comment) for comment in gone])
