"""Mentions against the real `qwen --acp` (0.24.4) and the fake model: the
resource block of `@symbol:NAME` reaches the model as the definition's text
with its place, and a pasted image is accepted as an image block. (qwen
passes an image on only to a model whose input modalities include images;
for others it sends the text `[image: image/png]`: the fake model is declared
one through `model.generationConfig.modalities`.)"""

from __future__ import annotations

import base64
import sys
from pathlib import Path

import pytest

from tests.e2e.test_chat_e2e import WAIT, RealChat, request_text
from tests.rig.fake_model import Reply
from tests.rig.qwen_cli import make_home
from tests.support.editor import PACKAGE

pytestmark = pytest.mark.e2e

# The smallest valid PNG: one transparent pixel.
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")


def mention(real_chat: RealChat, command: str, args: dict[str, str]) -> dict[str, object]:
    events = real_chat.events
    before = len(events)
    real_chat.host.user.run_command(command, args)
    found = real_chat.host.wait_for(
        lambda: [d for e, d in events[before:] if e in ("mention_added", "mention_failed")], timeout=WAIT)
    return dict(found[0])


def test_a_symbols_definition_and_a_pasted_image_reach_the_model(
    real_chat: RealChat, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    make_home(tmp_path, settings={"model": {"generationConfig": {"modalities": {"image": True}}}})  # before qwen starts
    workspace = real_chat.editor.workspace
    source = workspace / "inventory.py"
    source.write_text("import os\n\n\ndef restock_marker(items, count):\n    total = count * 7\n    return items + [total]\n")
    real_chat.host.user.run_command("qwen_chat")
    real_chat.host.wait_idle()
    real_chat.chat().core.start().result(WAIT)
    assert real_chat.chat().core.state.accepts_images is True  # qwen 0.24.4's promptCapabilities.image
    added = mention(real_chat, "qwen_chat_mention", {"kind": "symbol", "name": "restock_marker"})
    assert added["token"] == "symbol:restock_marker"
    monkeypatch.setattr(sys.modules[f"{PACKAGE}.plugin.chat.prompts.mentions"], "clipboard_image", lambda: PIXEL)
    pasted = mention(real_chat, "qwen_chat_paste_image", {})
    assert str(pasted["token"]).startswith("image-")
    real_chat.model.queue(Reply(text="It multiplies by seven."))
    real_chat.send("What does it do?")
    assert real_chat.ended() == ["end_turn"]
    body = request_text(real_chat.model.agent_requests[-1])
    assert "What does it do?" in body
    assert "total = count * 7" in body and "return items + [total]" in body  # the definition's text
    assert f"restock_marker is defined at {source}:4-6" in body  # and its place
    assert "import os" not in body.split("restock_marker is defined")[1]
    assert base64.b64encode(PIXEL).decode() in body  # the image, as the model receives it
    assert "It multiplies by seven." in real_chat.transcript()
