"""The agent's forms (ACP elicitation/create) in the simulated editor, with
the BUILT package and the scripted ACP agent: a form waits, told like a
permission, until the user opens it (no panel takes their keys by itself);
its panels check each value against the schema and ask again with the
reason; Esc at any step answers "cancel", Decline "decline"; a link opens
only on the user's yes and only if http(s); a hostile agent's forms (10,000
fields, 100,000 choices, giant texts, deep nesting, a second form while
one is open) are refused or bounded, the main thread never blocked past
100 ms."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.sim.test_chat import WAIT, ChatRig
from tests.sim.test_chat_agent_work import request, wait_answers
from tests.sim.test_chat_notify import MARKED, hide_transcript_behind, notifications
from tests.support.desktop import DesktopTools

FORM = "elicitation/create"
PROFILE = {
    "name": {"type": "string", "title": "Your name", "default": "Ada", "minLength": 2},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "subscribe": {"type": "boolean", "default": True},
    "color": {"type": "string", "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]},
    "tags": {"type": "array", "items": {"type": "string", "enum": ["x", "y", "z"]}, "maxItems": 2},
}


def form(properties: dict[str, Any], required: list[str] | None = None, message: str = "Your profile") -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required is not None:
        schema["required"] = required
    return request(FORM, mode="form", message=message, requestedSchema=schema)


def link(url: str) -> dict[str, Any]:
    return request(FORM, mode="url", message="Sign in to go on", elicitationId="e1", url=url)


def quick_panel(rig: ChatRig) -> Any:
    return rig.host.wait_for(lambda: next((q for q in rig.host.quick_panels if not q.done), None), timeout=WAIT)


def input_panel(rig: ChatRig) -> Any:
    return rig.host.wait_for(lambda: next((p for p in rig.host.input_panels if not p.done), None), timeout=WAIT)


def titles(panel: Any) -> list[str]:
    return [item[0] for item in panel.items]


def responses(rig: ChatRig) -> list[dict[str, Any]]:
    """The editor's responses the agent read, as its log has them (a line
    being written is read on the next try)."""
    found = []
    for line in rig.log.read_text().splitlines():
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if "method" not in message and "id" in message:
            found.append(message)
    return found


def asked(rig: ChatRig) -> dict[str, Any]:
    return rig.host.wait_for(lambda: next((d for e, d in rig.events if e == "elicitation_requested"), None),
                             timeout=WAIT)


def open_form(rig: ChatRig) -> Any:
    asked(rig)
    rig.host.user.run_command("qwen_chat_answer_form", via="palette")
    return quick_panel(rig)


def test_a_form_waits_unopened_and_its_panels_check_each_value(rig: ChatRig) -> None:
    rig.load([[form(PROFILE, required=["name", "age"]), {"chunks": ["thanks"]}]])
    _, composer = rig.open()
    rig.send("fill it")
    event = asked(rig)
    assert [f["name"] for f in event["fields"]] == list(PROFILE) and event["message"] == "Your profile"
    rig.host.wait_idle()
    # Nothing took the user's keys: no panel opened, the composer keeps the focus.
    assert rig.host.quick_panels == [] and rig.host.input_panels == []
    assert rig.host.window.active_view() == composer
    assert "**Form**: Your profile" in rig.transcript() and "Answer Form…" in rig.transcript()
    assert any("fill in a form: Your profile" in m for m in rig.host.status_messages)

    rig.host.user.run_command("qwen_chat_answer_form", via="palette")
    intro = quick_panel(rig)
    assert titles(intro) == ["Fill in the form (5 fields)", "Decline"] and intro.placeholder == "Your profile"
    rig.host.user.choose_quick_panel(0)
    name = input_panel(rig)
    assert name.caption.startswith("Your name — at least 2 characters") and name.initial_text == "Ada"
    rig.host.user.submit_input_panel("A")
    again = rig.host.wait_for(lambda: next((p for p in rig.host.input_panels if not p.done and p is not name), None),
                              timeout=WAIT)
    assert again.caption.startswith("✗ shorter than 2 characters. Your name") and again.initial_text == "A"
    rig.host.user.submit_input_panel("Grace")
    age = input_panel(rig)
    rig.host.user.submit_input_panel("200")
    age_again = rig.host.wait_for(lambda: next((p for p in rig.host.input_panels if not p.done and p is not age), None),
                                  timeout=WAIT)
    assert "more than 150" in age_again.caption
    rig.host.user.submit_input_panel("36")
    subscribe = quick_panel(rig)
    assert titles(subscribe) == ["Yes", "No", "Leave it out"] and subscribe.selected_index == 0  # the default
    rig.host.user.choose_quick_panel(1)
    color = quick_panel(rig)
    assert titles(color) == ["Red", "Green", "Leave it out"]
    rig.host.user.choose_quick_panel("Green")
    for pick in (1, 2, 3):  # three picks where two at most are allowed
        tags = quick_panel(rig)
        rig.host.user.choose_quick_panel(pick)
    tags = quick_panel(rig)
    assert titles(tags) == ["Done: 3 chosen", "☑ x", "☑ y", "☑ z"]
    rig.host.user.choose_quick_panel(0)
    tags = quick_panel(rig)
    assert tags.placeholder.startswith("✗ pick at most 2")
    rig.host.user.choose_quick_panel(2)  # y off again
    quick_panel(rig)
    rig.host.user.choose_quick_panel(0)
    assert wait_answers(rig, FORM) == [{"action": "accept", "content": {
        "name": "Grace", "age": 36, "subscribe": False, "color": "g", "tags": ["x", "z"]}}]
    assert rig.ended() == ["end_turn"]
    assert "→ answered" in rig.transcript()


@pytest.mark.parametrize("step", ["intro", "input", "quick"])
def test_esc_on_the_first_panel_answers_cancel_and_in_a_field_keeps_the_answers(rig: ChatRig, step: str) -> None:
    rig.load([[form({"name": {"type": "string"}, "ok": {"type": "boolean"}})]])
    rig.send("fill it")
    open_form(rig)
    if step != "intro":
        rig.host.user.choose_quick_panel(0)
        input_panel(rig)
        if step == "input":
            rig.host.user.cancel_input_panel()
        else:
            rig.host.user.submit_input_panel("Ada")
            quick_panel(rig)
            rig.host.user.cancel_quick_panel()
        rig.host.wait_idle()
        assert any("the form waits, your answers so far kept" in m for m in rig.host.status_messages)
        assert responses(rig) == [] or all("action" not in (m.get("result") or {}) for m in responses(rig))
        again = open_form(rig)  # Answer Form… goes on from the field left
        assert titles(again)[0] == ("Fill in the form (2 fields)" if step == "input"  # nothing answered yet
                                    else "Go on with the form (field 2 of 2)")
    rig.host.user.cancel_quick_panel()
    assert wait_answers(rig, FORM) == [{"action": "cancel"}]
    assert rig.ended() == ["end_turn"]
    assert "→ cancelled" in rig.transcript()
    rig.host.wait_idle()
    assert all(q.done for q in rig.host.quick_panels) and all(p.done for p in rig.host.input_panels)


def test_decline_answers_decline(rig: ChatRig) -> None:
    rig.load([[form({"name": {"type": "string"}})]])
    rig.send("fill it")
    open_form(rig)
    rig.host.user.choose_quick_panel("Decline")
    assert wait_answers(rig, FORM) == [{"action": "decline"}]
    assert "→ declined" in rig.transcript()


def test_cancelling_the_turn_answers_the_open_form_cancel(rig: ChatRig) -> None:
    rig.load([[form({"name": {"type": "string"}})]])
    rig.send("fill it")
    open_form(rig)
    rig.host.user.choose_quick_panel(0)
    input_panel(rig)
    rig.host.user.run_command("qwen_chat_cancel")
    assert wait_answers(rig, FORM) == [{"action": "cancel"}]
    rig.host.user.submit_input_panel("too late")  # the panel of a form already answered sends nothing more
    rig.host.wait_idle()
    assert len(wait_answers(rig, FORM)) == 1


def test_a_link_opens_in_the_browser_only_on_the_users_yes(rig: ChatRig) -> None:
    rig.load([[link("https://example.org/sign-in")], [link("https://example.org/again")]])
    rig.send("sign in")
    event = asked(rig)
    assert (event["mode"], event["url"]) == ("url", "https://example.org/sign-in")
    rig.host.wait_idle()
    assert rig.host.opened_urls == []
    assert any("asks you to open a link: Sign in to go on" in m for m in rig.host.status_messages)
    rig.host.user.run_command("qwen_chat_answer_form", via="palette")
    panel = quick_panel(rig)
    assert titles(panel) == ["Open the link in the browser", "Decline"]
    rig.host.user.choose_quick_panel(0)
    assert wait_answers(rig, FORM) == [{"action": "accept"}]
    assert rig.host.opened_urls == ["https://example.org/sign-in"]
    rig.ended()
    rig.events.clear()
    rig.send("again")
    open_form(rig)
    rig.host.user.cancel_quick_panel()
    assert wait_answers(rig, FORM, 2)[1] == {"action": "cancel"}
    assert rig.host.opened_urls == ["https://example.org/sign-in"]


@pytest.mark.parametrize("url", ["file:///etc/passwd", "javascript:alert(document.cookie)", "http:///nohost"])
def test_a_link_that_is_not_http_s_is_refused_with_a_clear_error(rig: ChatRig, url: str) -> None:
    rig.load([[link(url), {"chunks": ["still here"]}]])
    rig.send("open it")
    error, = wait_answers(rig, FORM)
    assert error["code"] == -32602 and "only http and https links are opened" in error["message"]
    assert rig.ended() == ["end_turn"] and "still here" in rig.transcript()
    assert rig.host.quick_panels == [] and rig.host.opened_urls == []
    assert not [e for e, _ in rig.events if e == "elicitation_requested"]


def test_a_hostile_agents_forms_are_refused_or_bounded_and_never_block(rig: ChatRig) -> None:
    giant = "G" * 1_000_000
    ten_thousand = {f"f{n}": {"type": "string"} for n in range(10_000)}
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(200):  # within what the JSON decoder reads; deeper lines are the next test's
        deep = {"type": "object", "properties": {"inner": deep}}
    choices = {f"f{n}": {"type": "string", "enum": [str(i) for i in range(1000)]} for n in range(100)}
    rig.load([[form(ten_thousand, message="many"), form({"deep": deep}, message="deep"),
               form(choices, message="choices"),
               form({"x": {"type": "string", "title": giant, "enum": [giant, "b"]}}, message=giant) | {"wait": False},
               {"stall": 0.5}, form({"y": {"type": "string"}}, message="second"), {"stall": 30}]])
    rig.open()
    rig.host.wait_idle()
    rig.host.watchdog.take()
    rig.host.watchdog.limit_ms = 100  # the issue's goal
    try:
        rig.send("hostile")
        many, nested, options, second = wait_answers(rig, FORM, 4)
        assert many["code"] == -32602 and "10000 fields; this editor asks at most 100" in many["message"]
        assert nested["code"] == -32602 and "of type 'object'" in nested["message"]
        assert options["code"] == -32602 and "100000 choices in all" in options["message"]
        assert second["code"] == -32602 and "a form is already open in this chat" in second["message"]
        panel = open_form(rig)
        assert len(panel.placeholder) <= 200
        rig.host.user.choose_quick_panel(0)
        choices = quick_panel(rig)
        assert max(len(title) for title in titles(choices)) <= 300
        assert len(choices.placeholder) <= 300 + len(" (optional)")  # the cut title and its note
        rig.host.user.choose_quick_panel(0)
        # The form asked without waiting: its answer is in the agent's log as a response.
        accepted = rig.host.wait_for(lambda: [m["result"] for m in responses(rig)
                                              if "action" in (m.get("result") or {})], timeout=WAIT)
        assert accepted == [{"action": "accept", "content": {"x": giant}}]
        assert len(rig.transcript()) < 20_000
        assert rig.host.watchdog.take() == []
    finally:
        rig.host.watchdog.limit_ms = None
    rig.host.user.run_command("qwen_chat_cancel")


def test_a_line_nested_deeper_than_the_json_decoder_goes_is_skipped_and_the_agent_heard_on(rig: ChatRig) -> None:
    depth = 100_000
    deep_request = ('{"jsonrpc":"2.0","id":77,"method":"elicitation/create","params":'
                    + "[" * depth + "]" * depth + "}")
    rig.load([[{"raw": deep_request}, {"chunks": ["still here"]}]])
    rig.send("go")
    assert rig.ended() == ["end_turn"]
    assert "still here" in rig.transcript()


def test_a_form_arriving_out_of_sight_is_told_and_the_users_tab_keeps_the_keys(
        rig: ChatRig, desktop_tools: DesktopTools) -> None:
    rig.load([[{"stall": 0.5}, form({"name": {"type": "string"}}, message="Deploy where?")]])
    rig.send("deploy")
    transcript, notes = hide_transcript_behind(rig)
    note = rig.host.wait_for(lambda: notifications(rig), timeout=WAIT)[0]
    assert (note["kind"], note["text"]) == ("form", "asks: Deploy where?")
    assert transcript.name() == MARKED  # brought to view, marked until seen
    rig.host.wait_idle()
    assert rig.host.window.active_view() == notes and rig.host.quick_panels == []
    rig.host.user.run_command("qwen_chat_answer_form", via="palette")
    rig.host.user.choose_quick_panel(0)
    rig.host.wait_for(lambda: next((p for p in rig.host.input_panels if not p.done), None), timeout=WAIT)
    rig.host.user.submit_input_panel("staging")
    assert wait_answers(rig, FORM) == [{"action": "accept", "content": {"name": "staging"}}]


def test_enter_on_a_bound_or_a_hostile_patterns_default_takes_it_at_once(rig: ChatRig) -> None:
    """A number at the schema's maximum is in bounds (JSON Schema's bounds are
    inclusive); a pattern whose check could backtrack for ever (`(a|a)*`) is
    the agent's to check: Enter on its default takes it, the main thread free."""
    rig.load([[form({"count": {"type": "integer", "minimum": 1, "maximum": 10},
                     "word": {"type": "string", "pattern": "^(a|a)*$", "default": "a" * 26 + "!"}},
                    required=["count", "word"])]])
    rig.open()
    rig.host.wait_idle()
    rig.host.watchdog.take()
    rig.host.watchdog.limit_ms = 100
    try:
        rig.send("fill it")
        open_form(rig)
        rig.host.user.choose_quick_panel(0)
        count = input_panel(rig)
        assert "≤ 10" in count.caption
        rig.host.user.submit_input_panel("10")
        word = rig.host.wait_for(lambda: next((p for p in rig.host.input_panels if not p.done and p is not count),
                                              None), timeout=WAIT)
        assert word.caption.startswith("word — matching ^(a|a)*$, checked by the agent")
        rig.host.user.submit_input_panel()  # Enter on the default
        assert wait_answers(rig, FORM) == [{"action": "accept", "content": {"count": 10, "word": "a" * 26 + "!"}}]
        assert rig.host.watchdog.take() == []
    finally:
        rig.host.watchdog.limit_ms = None


def test_a_form_stays_open_while_the_user_looks_elsewhere_and_goes_on_with_its_answers(rig: ChatRig) -> None:
    rig.load([[form({"name": {"type": "string"}, "ok": {"type": "boolean"}, "size": {"type": "integer"}})]])
    rig.send("fill it")
    open_form(rig)
    rig.host.user.choose_quick_panel(0)
    input_panel(rig)
    rig.host.user.submit_input_panel("Ada")
    ok = quick_panel(rig)
    assert ok.flags & rig.host.sublime.QuickPanelFlags.KEEP_OPEN_ON_FOCUS_LOST
    rig.host.user.leave_app()  # the user checks something in their browser
    rig.host.wait_idle()
    rig.host.user.return_to_app()
    assert not ok.done  # still open, nothing answered
    rig.host.user.choose_quick_panel("Yes")
    size = input_panel(rig)
    rig.host.user.cancel_input_panel()  # Esc: the form waits
    rig.host.wait_idle()
    assert titles(open_form(rig))[0] == "Go on with the form (field 3 of 3)"
    rig.host.user.choose_quick_panel(0)
    assert input_panel(rig) is not size
    rig.host.user.submit_input_panel("3")
    assert wait_answers(rig, FORM) == [{"action": "accept", "content": {"name": "Ada", "ok": True, "size": 3}}]
