"""The agent's forms (ACP elicitation/create) read and checked in core: each
schema rule the panels apply, the bounds on what a hostile agent sends, and
the answers as they go on the wire."""

from __future__ import annotations

import json
from typing import Any

import pytest

from qwencompanion_src.core.chat.requests.elicitation import (
    MAX_CHOICES,
    MAX_DEFAULT,
    MAX_FIELDS,
    MAX_MESSAGE,
    MAX_SHOWN,
    PATTERN_VALUE_LIMIT,
    Form,
    FormAnswers,
    FormRefused,
    Invalid,
    UrlRequest,
    answer,
    check_url,
    content_of,
    read_request,
    render_form,
)


def form_params(properties: dict[str, Any], required: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required is not None:
        schema["required"] = required
    return {"sessionId": "s1", "mode": "form", "message": "Tell me more", "requestedSchema": schema, **extra}


def read_form(properties: dict[str, Any], required: list[str] | None = None) -> Form:
    form = read_request(form_params(properties, required))
    assert isinstance(form, Form)
    return form


def test_fields_are_read_in_the_schemas_order_with_their_kinds_and_defaults() -> None:
    form = read_form({
        "name": {"type": "string", "title": "Your name", "default": "Ada"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150, "default": 36},
        "ratio": {"type": "number"},
        "subscribe": {"type": "boolean", "default": True},
        "color": {"type": "string", "enum": ["red", "green"]},
        "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "maxItems": 2},
    }, required=["name"])
    kinds = [(f.name, f.kind, f.required) for f in form.fields]
    assert kinds == [("name", "string", True), ("age", "integer", False), ("ratio", "number", False),
                     ("subscribe", "boolean", False), ("color", "choice", False), ("size", "choice", False),
                     ("tags", "choices", False)]
    assert form.fields[0].title == "Your name" and form.fields[0].prefill() == "Ada"
    assert form.fields[1].prefill() == "36"
    assert [(c.value, c.title) for c in form.fields[5].choices] == [("s", "Small"), ("l", "Large")]


def test_a_required_field_refuses_an_empty_value_and_an_optional_one_is_left_out() -> None:
    form = read_form({"name": {"type": "string"}, "note": {"type": "string"}}, required=["name"])
    with pytest.raises(Invalid, match="required"):
        form.fields[0].check_text("")
    assert form.fields[1].check_text("") is None


@pytest.mark.parametrize(("prop", "text", "reason"), [
    ({"type": "string", "minLength": 3}, "ab", "shorter than 3"),
    ({"type": "string", "maxLength": 3}, "abcd", "longer than 3"),
    ({"type": "string", "pattern": "^[a-z]+$"}, "Abc", "does not match"),
    ({"type": "string", "format": "email"}, "not-an-email", "valid email"),
    ({"type": "string", "format": "date"}, "2026-13-01", "valid date"),
    ({"type": "string", "format": "uri"}, "no scheme", "valid uri"),
    ({"type": "integer"}, "1.5", "whole number"),
    ({"type": "integer", "minimum": 1}, "0", "less than 1"),
    ({"type": "number", "maximum": 2.5}, "3", "more than 2.5"),
    ({"type": "number"}, "nan", "finite"),
    ({"type": "number"}, "twelve", "not a number"),
])
def test_each_rule_of_the_subset_refuses_with_its_reason(prop: dict[str, Any], text: str, reason: str) -> None:
    field = read_form({"x": prop}).fields[0]
    with pytest.raises(Invalid, match=reason):
        field.check_text(text)


@pytest.mark.parametrize(("prop", "text", "value"), [
    ({"type": "string", "minLength": 2, "maxLength": 4, "pattern": "^[a-z]+$"}, "abc", "abc"),
    ({"type": "string", "format": "email"}, "ada@example.org", "ada@example.org"),
    ({"type": "string", "format": "date-time"}, "2026-11-28T12:00:00", "2026-11-28T12:00:00"),
    ({"type": "integer", "minimum": 0, "maximum": 10}, " 7 ", 7),
    ({"type": "integer", "minimum": 0, "maximum": 10}, "10", 10),  # the bounds are inclusive (JSON Schema's)
    ({"type": "integer", "minimum": 0, "maximum": 10}, "0", 0),
    ({"type": "number", "minimum": -1.5, "maximum": 2.5}, "2.5", 2.5),
    ({"type": "number", "minimum": 0}, "2.5", 2.5),
])
def test_a_value_within_the_rules_is_taken_as_its_type(prop: dict[str, Any], text: str, value: Any) -> None:
    assert read_form({"x": prop}).fields[0].check_text(text) == value


def test_a_multi_select_counts_its_picks() -> None:
    field = read_form({"tags": {"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"},
                                                                       {"const": "b", "title": "B"}]},
                                "minItems": 1, "maxItems": 1}}).fields[0]
    with pytest.raises(Invalid, match="at least 1"):
        field.check_choices([])
    with pytest.raises(Invalid, match="at most 1"):
        field.check_choices(["a", "b"])
    assert field.check_choices(["b"]) == ["b"]


def test_values_given_whole_are_checked_field_by_field() -> None:
    form = read_form({"name": {"type": "string", "minLength": 2}, "ok": {"type": "boolean"},
                      "pick": {"type": "string", "enum": ["x", "y"]}}, required=["name", "ok"])
    assert content_of(form, {"name": "Ada", "ok": False}) == {"name": "Ada", "ok": False}
    with pytest.raises(Invalid, match="name: shorter than 2"):
        content_of(form, {"name": "A", "ok": True})
    with pytest.raises(Invalid, match="ok: a value is required"):
        content_of(form, {"name": "Ada"})
    with pytest.raises(Invalid, match="not one of the choices"):
        content_of(form, {"name": "Ada", "ok": True, "pick": "z"})
    with pytest.raises(Invalid, match="no field 'other'"):
        content_of(form, {"name": "Ada", "ok": True, "other": 1})


def test_the_answers_walk_the_fields_and_leave_out_what_was_skipped() -> None:
    form = read_form({"a": {"type": "string"}, "b": {"type": "string"}})
    answers = FormAnswers(form)
    assert answers.current is form.fields[0]
    answers.give("one")
    answers.give(None)
    assert answers.current is None and answers.values == {"a": "one"}


def test_the_answer_actions_are_the_sdks_accept_decline_cancel() -> None:
    assert answer("accept", {"a": 1}) == {"action": "accept", "content": {"a": 1}}
    assert answer("decline") == {"action": "decline"}
    assert answer("cancel") == {"action": "cancel"}


# --- links ---------------------------------------------------------------


def test_a_url_request_keeps_an_https_link() -> None:
    request = read_request({"sessionId": "s1", "mode": "url", "message": "Sign in", "elicitationId": "e1",
                            "url": "https://example.org/login?x=1"})
    assert isinstance(request, UrlRequest)
    assert (request.url, request.elicitation_id) == ("https://example.org/login?x=1", "e1")


@pytest.mark.parametrize("url", ["file:///etc/passwd", "javascript:alert(1)", "JavaScript:alert(1)",
                                 "data:text/html,hi", "ftp://example.org/x", "subl:open", "http:///no-host"])
def test_a_link_other_than_http_s_is_refused_with_the_reason(url: str) -> None:
    with pytest.raises(FormRefused, match="only http and https"):
        check_url(url)
    with pytest.raises(FormRefused):
        read_request({"sessionId": "s1", "mode": "url", "message": "m", "elicitationId": "e", "url": url})


# --- what a hostile agent sends -------------------------------------------


def test_a_form_of_ten_thousand_fields_is_refused_before_it_is_parsed() -> None:
    properties = {f"f{n}": {"type": "string"} for n in range(10_000)}
    with pytest.raises(FormRefused, match=f"10000 fields; this editor asks at most {MAX_FIELDS}"):
        read_request(form_params(properties))


def test_too_many_choices_in_all_are_refused_before_they_are_parsed() -> None:
    with pytest.raises(FormRefused, match=f"{MAX_CHOICES + 1} choices in all"):
        read_form({"x": {"type": "string", "enum": [str(n) for n in range(MAX_CHOICES + 1)]}})
    titled = [{"const": str(n), "title": "t"} for n in range(MAX_CHOICES)]
    many = {f"f{n}": {"type": "string", "oneOf": titled} for n in range(50)}  # each field within the bound
    many["tags"] = {"type": "array", "items": {"anyOf": titled}}
    with pytest.raises(FormRefused, match=f"{51 * MAX_CHOICES} choices in all"):
        read_form(many)
    assert len(read_form({"x": {"type": "string", "oneOf": titled}}).fields[0].choices) == MAX_CHOICES


def test_giant_titles_messages_and_options_are_cut_to_one_line() -> None:
    giant = "T" * 1_000_000
    form = read_request(form_params({"x": {"type": "string", "title": giant + "\n\nsecond line",
                                           "enum": [giant]}}, message=giant))
    assert isinstance(form, Form)
    assert len(form.message) == MAX_MESSAGE
    assert len(form.fields[0].title) == MAX_SHOWN and "\n" not in form.fields[0].title
    assert len(form.fields[0].choices[0].title) == MAX_SHOWN
    assert form.fields[0].choices[0].value == giant  # what the agent gets back is its own value
    assert len(render_form(form)) < 3 * MAX_MESSAGE


def test_a_nested_object_field_is_refused_with_its_type() -> None:
    nested: dict[str, Any] = {"type": "string"}
    for _ in range(200):
        nested = {"type": "object", "properties": {"inner": nested}}
    with pytest.raises(FormRefused, match="of type 'object'"):
        read_form({"deep": nested})
    json.dumps(nested)  # the test's own input is a valid, deep JSON value


HOSTILE_PATTERNS = [
    r"^(a|a)*$", r"(a+)+$", r"(a*)*b", r"(\w+\s?)*$", r"(.*a){20}",  # a choice or a repetition under a repetition
    r"(a?){25}a{25}", "a?" * 25 + "a{25}", "(a|a)" * 25 + "b",  # choices in a row
    r"^(a+)+$", r"(a|aa)*b\1", r"a*a*a*$", r"(?=a)a*", r"(x*)*y",  # nested, more than two, back-reference, lookaround
]


@pytest.mark.parametrize("pattern", HOSTILE_PATTERNS)
def test_a_pattern_whose_check_could_hang_is_left_to_the_agent(pattern: str) -> None:
    field = read_form({"x": {"type": "string", "pattern": pattern, "default": "a" * 26 + "!"}}).fields[0]
    assert field.checked_pattern is None and "checked by the agent" in field.hint()
    assert field.check_text(field.prefill()) == "a" * 26 + "!"  # Enter on the agent's default
    # Were the pattern run, this value would keep the check (and the GIL) for ages.
    assert field.check_text("a" * 10_000 + "!") == "a" * 10_000 + "!"


@pytest.mark.parametrize(("pattern", "good", "bad"), [
    (r"^\d{3}-?\d{4}$", "555-1234", "55-1234"),
    (r"^[^@\s]+@[^@\s]+$", "ada@example.org", "ada example"),
    (r"^(?:dev|prod)-[a-z]+$", "dev-eu", "qa-eu"),
])
def test_a_pattern_of_few_choices_is_checked_in_the_editor(pattern: str, good: str, bad: str) -> None:
    field = read_form({"x": {"type": "string", "pattern": pattern}}).fields[0]
    assert field.checked_pattern is not None and "checked by the agent" not in field.hint()
    assert field.check_text(good) == good
    with pytest.raises(Invalid, match="does not match"):
        field.check_text(bad)


def test_a_checked_pattern_takes_values_only_up_to_its_bound() -> None:
    field = read_form({"x": {"type": "string", "pattern": "^[a-z]*[a-z0-9]*$"}}).fields[0]
    assert field.checked_pattern is not None
    assert field.check_text("a" * PATTERN_VALUE_LIMIT) == "a" * PATTERN_VALUE_LIMIT
    with pytest.raises(Invalid, match="too long to check"):
        field.check_text("a" * (PATTERN_VALUE_LIMIT + 1))


def test_a_pattern_python_cannot_read_is_refused() -> None:
    with pytest.raises(FormRefused, match="cannot read"):
        read_form({"x": {"type": "string", "pattern": "([a-z"}})


def test_a_form_with_no_fields_or_an_unknown_mode_is_refused() -> None:
    with pytest.raises(FormRefused, match="no fields"):
        read_form({})
    with pytest.raises(FormRefused, match="not '_custom'"):
        read_request({"sessionId": "s1", "mode": "_custom", "message": "m"})


def test_a_default_too_long_for_a_panel_is_refused() -> None:
    with pytest.raises(FormRefused, match=f"default of {MAX_DEFAULT + 1} characters"):
        read_form({"x": {"type": "string", "default": "d" * (MAX_DEFAULT + 1)}})
    assert read_form({"x": {"type": "string", "default": "d" * MAX_DEFAULT}}).fields[0].prefill() == "d" * MAX_DEFAULT
