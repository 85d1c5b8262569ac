"""A queued prompt as a steer of the running turn on `qwen serve`
(`POST /session/:id/mid-turn-message`, as qwen 0.24.4's daemon reads it): the
prompt's words as `message` (at most 16,384 UTF-16 units, the link lines included), an embedded file or selection
and an image as `content` media blocks. The daemon takes no links: the active
file's link (a name, a place and no text) becomes a line of the message."""

from __future__ import annotations

from dataclasses import dataclass

from ..json_types import JsonObject

MAX_MESSAGE_CHARS = 16 * 1024  # the daemon's MID_TURN_MESSAGE_MAX_LENGTH
MAX_CONTENT_BLOCKS = 256  # its MEDIA_CONTENT_MAX_BLOCKS


@dataclass(frozen=True)
class Steer:
    message: str
    content: list[JsonObject]

    def body(self, message_id: str) -> JsonObject:
        return {"message": self.message, "messageId": message_id, **({"content": self.content} if self.content else {})}


def steer_of(text: str, context: list[JsonObject]) -> Steer | None:
    """The steer that carries `text` and its attachments, or None when the
    daemon would refuse it (a block it takes no form of, or too long)."""
    lines: list[str] = []
    content: list[JsonObject] = []
    for block in context:
        kind = block.get("type")
        if kind == "resource_link":
            lines.append(_link_line(block))
        elif kind == "resource" and _embedded(block.get("resource")):
            content.append({"type": "resource", "resource": block["resource"]})
        elif kind == "image" and _inline_image(block):
            content.append({"type": "image", "data": block["data"], "mimeType": block["mimeType"]})
        else:
            return None
    message = "\n\n".join(part for part in (text.strip(), *lines) if part)
    if (not message and not content) or daemon_length(message) > MAX_MESSAGE_CHARS or len(content) > MAX_CONTENT_BLOCKS:
        return None
    return Steer(message, content)


def daemon_length(message: str) -> int:
    """The message's length as the daemon measures it: the whole message as
    sent (the link lines too), trimmed, in JavaScript's UTF-16 code units,
    where a character outside the Basic Multilingual Plane (an emoji, rare
    CJK) counts two."""
    return len(message.strip().encode("utf-16-le")) // 2


def _link_line(block: JsonObject) -> str:
    name, uri, description = (str(block.get(key) or "") for key in ("name", "uri", "description"))
    return " ".join(part for part in (f"Linked: {name or uri} ({uri}).", description) if part)


def _embedded(resource: object) -> bool:
    """A resource with its text or its bytes in it (not both), as the daemon checks."""
    if not isinstance(resource, dict) or not isinstance(resource.get("uri"), str) or not resource["uri"]:
        return False
    return isinstance(resource.get("text"), str) != isinstance(resource.get("blob"), str)


def _inline_image(block: JsonObject) -> bool:
    data, mime = block.get("data"), block.get("mimeType")
    return (isinstance(data, str) and bool(data) and isinstance(mime, str) and mime.startswith("image/")
            and mime.split(";", 1)[0].strip().lower() != "image/svg+xml")
