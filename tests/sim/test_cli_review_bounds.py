"""A CLI's reviews (openDiff from a hostile MCP client) never take over the
chat's and are bounded per session: an openDiff for a file the chat's agent
is reviewing is refused with an error to the CLI (the chat's permission stays
pending, its tabs keep its text), and past MAX_OPEN_REVIEWS open reviews a
session's openDiff is refused, as the chat's edit requests are bounded."""

from __future__ import annotations

import sys

from tests.sim.test_chat import WAIT, ChatRig
from tests.sim.test_chat_hostile_requests import edit_permission, prompts, review_events
from tests.support.editor import PACKAGE


def limit() -> int:
    return int(sys.modules[f"{PACKAGE}.core.reviews"].MAX_OPEN_REVIEWS)


def proposed_texts(rig: ChatRig) -> list[str]:
    return sorted(rig.editor.text(v) for v in rig.editor.review_views() if v.name().endswith("(Qwen Code proposal)"))


def test_an_open_diff_for_a_file_the_chats_agent_is_reviewing_is_refused(rig: ChatRig) -> None:
    path = rig.editor.workspace / "shared.py"
    path.write_text("old\n")
    rig.load([[edit_permission("e1", str(path), "chat's text\n", wait=False), {"stall": 30}]])
    events = review_events(rig)
    rig.send("edit")
    rig.host.wait_for(lambda: any(e["event"] == "diff_opened" for e in events), timeout=WAIT)
    cli = rig.editor.cli()
    answer = cli.open_diff(path, "the CLI's text\n")
    assert answer["isError"] is True and "already under review in the editor" in answer["content"][0]["text"]
    rig.host.wait_idle()
    assert proposed_texts(rig) == ["chat's text\n"]
    assert len(rig.editor.review_views()) == 2
    assert [p.tool_call_id for p in prompts(rig)] == ["e1"]  # still waiting for the user, not rejected
    assert cli.quiet()
    rig.host.user.run_command("qwen_chat_cancel")
    assert rig.ended() == ["cancelled"]


def test_a_sessions_open_diffs_past_the_cap_are_refused(rig: ChatRig) -> None:
    rig.load()
    workspace = rig.editor.workspace
    hostile, other = rig.editor.cli("hostile"), rig.editor.cli("other")
    answers = [hostile.open_diff(workspace / f"f{n}.txt", f"{n}\n") for n in range(limit() + 3)]
    assert [a["isError"] for a in answers] == [False] * limit() + [True] * 3
    assert f"{limit()} of this session's changes already wait" in answers[-1]["content"][0]["text"]
    assert hostile.open_diff(workspace / "f0.txt", "again\n")["isError"] is False  # its own file: replaced, not added
    assert other.open_diff(workspace / "g.txt", "other\n")["isError"] is False  # each session has its own cap
    rig.host.wait_for(lambda: len(rig.editor.review_views()) == 2 * (limit() + 1), timeout=WAIT)
    rig.host.wait_idle()
    assert len(rig.editor.review_views()) == 2 * (limit() + 1)
