"""Where a chat's words go in its transcript: a turn per prompt (and per
note of the chat's own), the user's text, the agent's text in blocks that
renderers' blocks (tool calls, plans, thoughts) separate, each closed with a
blank line before what follows. Runs on the chat's thread."""

from __future__ import annotations

from ...json_types import JsonObject
from .render import AGENT_HEADER, USER_HEADER
from .streamer import BlockStreamer

ELSEWHERE_NOTE = "*Sent from another client of this session*\n\n"
STEERED_NOTE = "*Steered: added to the running turn*\n\n"
STEERED_LATE_NOTE = "*Steered, but the turn had ended: sent as a turn of its own*\n\n"


class TranscriptLayout:
    """The transcript's blocks by id (`t<turn>.user`, `t<turn>.agent<n>`,
    `t<turn>.note`, and the renderers' own); a renderer's `TranscriptWriter`."""

    def __init__(self, streamer: BlockStreamer) -> None:
        self.streamer = streamer
        self.turn = 0
        self._last_kind = ""  # "user" | "agent" | "other": where the next chunk goes
        self._agent_block = 0
        self._command_block = 0

    # --- TranscriptWriter, for renderers ---------------------------------

    def append(self, block_id: str, text: str) -> None:
        self._last_kind = "other"
        self.streamer.append(block_id, text)

    def upsert(self, block_id: str, text: str) -> None:
        self._last_kind = "other"
        self.streamer.upsert(block_id, text)

    # --- the chat's own ---------------------------------------------------

    def clear(self) -> None:
        """An empty transcript (a new session, or one reloaded from its start)."""
        self.streamer.clear()
        self._last_kind = ""

    def cut(self, turn: int) -> None:
        """Drop turn `turn` (from its prompt) and everything after it; later
        turns keep counting up, so block ids stay unique."""
        self.streamer.truncate(f"t{turn}.user")
        self._last_kind = ""

    def note(self, text: str) -> None:
        """A line of the chat's own (not sent to the agent), in a turn of its own."""
        self.end_blocks()  # an answer still streaming (a reattached turn) ends its paragraph first
        self.turn += 1
        self._last_kind = "other"
        self.streamer.append(f"t{self.turn}.note", f"> {text}\n\n")

    def command_output(self, text: str) -> None:
        """What a slash command answered (qwen's /stats, /about, …): a status
        quoted as a note in the prompt's turn, not the agent's words."""
        if not text.strip():
            return
        self.end_blocks()
        self._command_block += 1
        quoted = "\n".join(f"> {line.rstrip()}" if line.strip() else ">" for line in text.strip("\n").splitlines())
        self.append(f"t{self.turn}.command{self._command_block}", quoted + "\n\n")  # the agent's next words: a new block

    def footer(self, text: str) -> None:
        """A line of the chat's own closing the turn (its usage); nothing for ""."""
        if text:
            self.append(f"t{self.turn}.footer", text)

    def prompt(self, text: str, context: list[JsonObject]) -> None:
        """The user's prompt, starting a turn, with a line naming what was attached."""
        # Another client's turn, or one replayed, may have left its answer open: `_user_turn` ends it.
        self._user_turn(USER_HEADER + text.rstrip() + "\n\n" + context_note(context), "user")

    def user_text(self, text: str) -> None:
        """A piece of a user's prompt replayed by a reloaded session."""
        if self._last_kind != "user":
            self._user_turn(USER_HEADER, "user")
        self.streamer.append(f"t{self.turn}.user", text)

    def prompt_elsewhere(self, text: str) -> None:
        """A piece of a prompt another client of the session sent: its pieces
        make one turn, marked as sent elsewhere."""
        if self._last_kind != "elsewhere":
            self._user_turn(USER_HEADER + ELSEWHERE_NOTE, "elsewhere")
        self.streamer.append(f"t{self.turn}.user", text.rstrip() + "\n\n")

    def prompt_steered(self, text: str, *, late: bool) -> None:
        """A steer where it entered: what the agent says after it follows it."""
        self._user_turn(USER_HEADER + (STEERED_LATE_NOTE if late else STEERED_NOTE) + text.rstrip() + "\n\n", "user")

    def _user_turn(self, head: str, kind: str) -> None:
        """A new turn opened by a prompt's `head` (what came before closed first)."""
        self.end_blocks()
        self.turn += 1
        self._agent_block = 0
        self.streamer.append(f"t{self.turn}.user", head)
        self._last_kind = kind

    def agent_text(self, text: str, *, replaying: bool) -> None:
        """A piece of the agent's answer: a new block after anything else."""
        if not text:
            return
        if self._last_kind != "agent":
            if self._last_kind == "user" and replaying:
                self.streamer.append(f"t{self.turn}.user", "\n\n")
            first = self._agent_block == 0
            self._agent_block += 1
            self._last_kind = "agent"
            if first:
                self.streamer.append(f"t{self.turn}.agent{self._agent_block}", AGENT_HEADER)
        self.streamer.append(f"t{self.turn}.agent{self._agent_block}", text)

    def end_blocks(self) -> None:
        """Close the agent's text with a blank line before what follows."""
        if self._last_kind == "agent":
            block_id = f"t{self.turn}.agent{self._agent_block}"
            if not self.streamer.transcript.block(block_id).endswith("\n\n"):
                self.streamer.flush()
                tail = self.streamer.transcript.block(block_id)
                self.streamer.append(block_id, "\n" if tail.endswith("\n") else "\n\n")
        self._last_kind = ""


def context_note(context: list[JsonObject]) -> str:
    """One line naming what was attached to the prompt."""
    names: list[str] = []
    for block in context:
        if block.get("type") == "resource_link":
            names.append(str(block.get("name") or block.get("uri")))
        elif block.get("type") == "resource":
            uri = str((block.get("resource") or {}).get("uri", ""))
            names.append(uri.rsplit("/", 1)[-1] or "selection")
        elif block.get("type") == "image":
            names.append("image")
    return f"*Attached: {', '.join(names)}*\n\n" if names else ""
