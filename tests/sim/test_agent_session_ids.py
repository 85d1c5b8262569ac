"""A session id the agent gives is data: an id that could be read as an
option or as shell syntax is refused where the chat would adopt it, with a
message, and never reaches Continue in Terminal's command line (qwen 0.24.4
takes `qwen --resume --approval-mode=yolo` as YOLO mode)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sim.test_chat import WAIT, ChatRig
from tests.support.terminus import install_terminus, terminus_records


@pytest.mark.parametrize("hostile", ["--approval-mode=yolo", 'x"&calc&"', "%COMSPEC%", "a b"])
def test_an_agents_hostile_session_id_is_refused_and_never_continued_in_the_terminal(
        rig: ChatRig, tmp_path: Path, hostile: str) -> None:
    record = tmp_path / "terminus.jsonl"
    rig.script_extras.update(session_ids=[hostile])  # the first session/new's answer; the next ones are UUIDs
    rig.load([[{"chunks": ["Hello."]}]])
    install_terminus(rig.host, record)
    rig.open()
    chat = rig.chat()
    rig.host.wait_for(lambda: "was refused" in chat.core.streamer.transcript.text()
                      or chat.core.state.session_id is not None, timeout=WAIT)
    rig.host.user.run_command("qwen_chat_continue_in_terminal")
    rig.host.wait_for(lambda: terminus_records(record) or rig.host.status_messages, timeout=WAIT)
    rig.host.wait_idle()
    assert [call["run"]["cmd"] for call in terminus_records(record)] == [] and rig.chat() is chat
    assert any("no conversation to continue yet" in message for message in rig.host.status_messages)
    assert f"the agent's session id {hostile!r} was refused" in chat.core.streamer.transcript.text()

    rig.send("hi")  # the next start gets a well-formed id: the chat goes on with it
    rig.ended()
    session = chat.core.state.session_id
    assert session is not None and session != hostile
    rig.host.user.run_command("qwen_chat_continue_in_terminal")
    [opened] = rig.host.wait_for(lambda: terminus_records(record), timeout=WAIT)
    assert opened["run"]["cmd"][-1] == f"--resume={session}" and hostile not in str(opened)
